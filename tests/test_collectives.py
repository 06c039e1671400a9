"""Multilevel topology-aware collectives (Karonis et al.): the trees every
rank builds from the group vectors, and every collective x algorithm x
communicator size under Open MPI with every root, checked element by element
by core/tests/mpi/coll_check.c."""

import os
import re
import subprocess

import pytest

from topocoll import TopocollError
from topocoll._core import choose_shape, collective_tree, group_vectors, tree_algorithms

from .mpi_util import pmpi_lib, program, run

# the paper's Figure 1: 10 processes on an SP at SDSC, 5 on each of two O2Ks at NCSA
FIG1 = ["sdsc/sp"] * 10 + ["ncsa/o2ka"] * 5 + ["ncsa/o2kb"] * 5


def test_group_vectors_are_prefixes():
    levels, vec = group_vectors(["a/x", "a/y", "b/x", "a/x", "b"])
    assert levels == 2
    assert vec[0] == vec[3] and vec[0][0] == vec[1][0] != vec[2][0]
    assert vec[2][1] != vec[0][1]          # x under b is not x under a
    assert vec[4][0] != vec[2][0] or vec[4][1] != vec[2][1]
    with pytest.raises(TopocollError, match="no group names"):
        group_vectors(["a", ""])


@pytest.mark.parametrize("root", range(len(FIG1)))
def test_multilevel_sends_one_message_into_each_group(root):
    """Into each site over the top level exactly one message, into each
    machine over the local network one, for every root (their Figure 4)."""
    t = collective_tree("multilevel", FIG1, root)
    levels = t["message_level"]
    assert levels.count(0) == 1             # one WAN message: 2 sites
    assert levels.count(1) == 1             # one LAN message: 2 machines at NCSA
    assert levels.count(-1) == 1 and sorted(t["order"]) == list(range(20))
    # the first message a root sends crosses the slowest level it must cross
    first = t["children"][root][0]
    assert t["message_level"][first] == min(l for l in levels if l >= 0)


@pytest.mark.parametrize("root", [0, 12, 17])
def test_two_level_and_binomial_cross_more(root):
    ml = collective_tree("multilevel", FIG1, root)["message_level"]
    machine = collective_tree("two-level", FIG1, root, cluster_level=1)["message_level"]
    site = collective_tree("two-level", FIG1, root, cluster_level=0)["message_level"]
    binomial = collective_tree("binomial", FIG1, root)["message_level"]
    # MagPIe on machines: one message to each other machine, two of them at
    # the other site when the root is at SDSC
    assert machine.count(0) == (2 if root < 10 else 1) and machine.count(0) + machine.count(1) == 2
    assert site.count(0) == 1 and site.count(1) >= 1
    assert binomial.count(0) >= ml.count(0) and binomial.count(0) + binomial.count(1) > 2
    for t in (ml, machine, site, binomial):     # a spanning tree: everyone gets it once
        assert t.count(-1) == 1 and len(t) == 20


def test_unknown_tree_algorithm():
    with pytest.raises(TopocollError, match="valid: binomial, two-level, multilevel"):
        collective_tree("fastest", FIG1, 0)
    assert tree_algorithms() == ["binomial", "two-level", "multilevel"]


OPS = ["BCAST", "REDUCE", "ALLREDUCE", "BARRIER", "GATHER", "SCATTER"]


@pytest.mark.mpi
@pytest.mark.parametrize("algorithm", ["multilevel", "two-level", "binomial", "native"])
@pytest.mark.parametrize("np", range(1, 10))
def test_every_collective_every_root(algorithm, np):
    machines = ["n0", "n0", "n1", "n2", "n2", "n3", "n4", "n4", "n5"][:np]
    env = {"LD_PRELOAD": str(pmpi_lib("openmpi")), "TOPOCOLL_TOPOLOGY": "chain:2,2,2",
           "TOPOCOLL_RANK_MAP": ",".join(machines), "TOPOCOLL_STATS": "1"}
    env.update({f"TOPOCOLL_{op}": algorithm for op in OPS})
    proc = run("openmpi", np, [program("coll_check", "openmpi")], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    m = re.search(r"coll_check: calls=(\d+) errors=(\d+)", proc.stdout)
    assert m and int(m.group(2)) == 0, proc.stdout + proc.stderr[-2000:]
    stats = {(o, a): int(n) for o, a, n in re.findall(r"topocoll: (\w+) (\S+) calls=(\d+)", proc.stderr)}
    for op in ("bcast", "allreduce", "barrier", "gather", "scatter"):
        assert stats.get((op, algorithm), 0) > 0, proc.stderr[-2000:]
    # the non-commutative reduction went to the MPI, the sums through the tree
    assert stats.get(("reduce", "native"), 0) >= 1 and stats.get(("reduce", algorithm), 0) > 0


@pytest.mark.mpi
def test_groups_from_the_environment_per_process():
    """TOPOCOLL_GROUPS per process (MPMD app contexts): two sites, one with two
    machines; the multilevel bcast counts one message over the top level a call."""
    env = {"LD_PRELOAD": str(pmpi_lib("openmpi")), "TOPOCOLL_STATS": "1", "TOPOCOLL_BCAST": "multilevel"}
    prog = str(program("bcast_bench", "openmpi"))
    cmd = ["mpirun.openmpi", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1", "--mca", "btl", "self,vader,tcp",
           "-x", "LD_PRELOAD", "-x", "TOPOCOLL_STATS", "-x", "TOPOCOLL_BCAST"]
    apps = [("sdsc/sp", 3), ("ncsa/o2ka", 2), ("ncsa/o2kb", 2)]
    for i, (groups, n) in enumerate(apps):
        cmd += (["-np", str(n), "-x", f"TOPOCOLL_GROUPS={groups}", prog, "--repetitions", "1", "4096"]
                + ([":"] if i < len(apps) - 1 else []))
    full = dict(os.environ, **env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "check 4096 ok" in proc.stdout
    calls = int(re.search(r"topocoll: bcast multilevel calls=(\d+)", proc.stderr).group(1))
    levels = dict(re.findall(r"level(\d)=(\d+)", re.search(r"topocoll: bcast multilevel messages.*", proc.stderr).group(0)))
    assert int(levels["0"]) == calls and int(levels["1"]) == calls   # one WAN, one LAN message a broadcast


def test_bcast_bench_in_simulation(capsys, tmp_path):
    """The paper's grid (examples/topologies/karonis-grid.yaml) in SimGrid:
    multilevel sends one WAN message a broadcast and beats the binomial tree."""
    from pathlib import Path

    from topocoll.cli import main
    grid = Path(__file__).resolve().parent.parent / "examples" / "topologies" / "karonis-grid.yaml"
    assert main(["bench", str(grid), "--collective", "bcast", "--sizes", "16K", "--repetitions", "1", "--quiet",
                 "--algorithms", "binomial,multilevel,two-level:0,two-level:1", "--csv", str(tmp_path / "b.csv")]) == 0
    out = capsys.readouterr().out
    rows = {l.split()[0]: l.split() for l in out.splitlines() if l.startswith("  ") and "L0=" in l}
    assert rows["multilevel"][-3:] == ["L0=1", "L1=1", "L2=45"]
    assert float(rows["multilevel"][1]) < float(rows["binomial"][1])


def test_levels_from_the_topology():
    from pathlib import Path

    from topocoll import Topology
    grid = Topology.load(Path(__file__).resolve().parent.parent / "examples" / "topologies" / "karonis-grid.yaml")
    assert [grid.levels(r) for r in range(3)] == ["sdsc/sdsc-sp", "anl/anl-sp", "anl/anl-o2k"]
    assert Topology.synthetic("3").levels(1) == "n1"
    assert Topology.synthetic("chain:1,1").levels(1) == "s1/n1"


def test_shape_model():
    """Bar-Noy and Kipnis, as the paper cites them: high latency, small
    messages -> flat; low latency or large messages -> binomial."""
    assert choose_shape(8, 30e-3, 20e6, 1024) == "flat"          # WAN, 1 KB: 7 copies cost less than 3 rounds
    assert choose_shape(8, 30e-3, 20e6, 1 << 20) == "binomial"   # WAN, 1 MB: copies dominate
    assert choose_shape(8, 1e-6, 1e10, 1024) == "binomial"       # shared memory
    assert choose_shape(2, 30e-3, 20e6, 1024) == "default"


FOUR_SITES = """topocoll: 1
bandwidth: 100Mbit
latency: 500us
switches:
  - {name: wan, switches: [a, b, c, d]}
  - {name: a, machines: "a[0-1]", uplink: {bandwidth: 20Mbit, latency: 15ms}}
  - {name: b, machines: "b[0-1]", uplink: {bandwidth: 20Mbit, latency: 15ms}}
  - {name: c, machines: "c[0-1]", uplink: {bandwidth: 20Mbit, latency: 15ms}}
  - {name: d, machines: "d[0-1]", uplink: {bandwidth: 20Mbit, latency: 15ms}}
"""


@pytest.mark.mpi
@pytest.mark.parametrize("shapes", ["", "binomial,flat", "flat,flat,flat"])
def test_shapes_by_model_and_by_variable(tmp_path, shapes):
    """Four sites: the model picks per message size (every element still
    right); TOPOCOLL_TREE_SHAPES overrides it level by level."""
    topo = tmp_path / "four.yaml"
    topo.write_text(FOUR_SITES)
    env = {"LD_PRELOAD": str(pmpi_lib("openmpi")), "TOPOCOLL_TOPOLOGY": str(topo), "TOPOCOLL_STATS": "1",
           "TOPOCOLL_RANK_MAP": "a0,b0,c0,d0,a1,b1,c1,d1", "TOPOCOLL_TREE_SHAPES": shapes}
    proc = run("openmpi", 8, [program("coll_check", "openmpi")], env)
    assert proc.returncode == 0 and "errors=0" in proc.stdout, proc.stderr[-2000:]
    levels = re.search(r"topocoll: bcast multilevel messages level0=(\d+) level1=(\d+)", proc.stderr)
    calls = int(re.search(r"topocoll: bcast multilevel calls=(\d+)", proc.stderr).group(1))
    # one message into each of the 3 other sites, one to the other machine of each site, whatever the shape
    assert int(levels.group(1)) == 3 * calls and int(levels.group(2)) == 4 * calls


@pytest.mark.mpi
def test_bad_shapes_stop_the_job():
    env = {"LD_PRELOAD": str(pmpi_lib("openmpi")), "TOPOCOLL_TOPOLOGY": "chain:2,2", "TOPOCOLL_TREE_SHAPES": "star"}
    proc = run("openmpi", 2, [program("coll_check", "openmpi")], env)
    assert proc.returncode != 0 and "TOPOCOLL_TREE_SHAPES=star" in proc.stderr


@pytest.mark.mpi
def test_verbose_says_every_fallback():
    """TOPOCOLL_VERBOSE names what sends a call to the MPI: a machine missing
    from the topology (as the alltoall line does), an intercommunicator, a
    non-commutative operation; the data stay right."""
    env = {"LD_PRELOAD": str(pmpi_lib("openmpi")), "TOPOCOLL_TOPOLOGY": "chain:2,2,2",
           "TOPOCOLL_RANK_MAP": "n0,n0,n1,n2,x9", "TOPOCOLL_VERBOSE": "1", "TOPOCOLL_STATS": "1"}
    proc = run("openmpi", 5, [program("coll_check", "openmpi")], env)
    assert proc.returncode == 0 and re.search(r"errors=0", proc.stdout), proc.stdout + proc.stderr[-2000:]
    err = proc.stderr
    assert "collectives on a communicator of 5 ranks: native: rank 4's machine 'x9' is not in the topology" in err
    assert "barrier: native: an intercommunicator" in err
    assert re.search(r"alltoall on a communicator of \d ranks: native: an intercommunicator", err)
    assert "reduce: native: a non-commutative operation" in err


@pytest.mark.mpi
@pytest.mark.parametrize("value, says", [("99", "TOPOCOLL_TWO_LEVEL_AT=99: expected a whole number from 0 to 15"), ("x", "TOPOCOLL_TWO_LEVEL_AT=x"),
                                         ("5", "TOPOCOLL_TWO_LEVEL_AT=5: the communicator's levels are 0 (the top) to 1")])
def test_two_level_at_out_of_range_stops_the_job(value, says):
    env = {"LD_PRELOAD": str(pmpi_lib("openmpi")), "TOPOCOLL_TOPOLOGY": "chain:2,2",
           "TOPOCOLL_RANK_MAP": "n0,n1,n2", "TOPOCOLL_TWO_LEVEL_AT": value, "TOPOCOLL_BCAST": "two-level"}
    proc = run("openmpi", 3, [program("coll_check", "openmpi")], env)
    assert proc.returncode != 0 and says in proc.stderr, proc.stderr[-2000:]
