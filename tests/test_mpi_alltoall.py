"""Real-MPI data-integrity tests: every algorithm of the registry and the
MPI's own, under Open MPI and MPICH, on communicators of 1 to 9 ranks,
counts 0, 1, 1000 and 65536, contiguous and derived datatypes, in place,
and duplicated and split communicators; every element of every block is
checked by core/tests/mpi/alltoall_check.c, and TOPOCOLL_STATS shows which
algorithm really ran."""

import re

import pytest

from topocoll._core import algorithms

from .conftest import ALGORITHMS
from .mpi_util import MPICH_NAP, MPIS, available, pmpi_lib, program, run

pytestmark = pytest.mark.mpi

TOPOLOGY = "chain:3,3,3"          # 9 machines n0..n8 on three switches


def env_for(algorithm: str, np: int, **extra) -> dict:
    env = {
        "LD_PRELOAD": "",
        "TOPOCOLL_TOPOLOGY": TOPOLOGY,
        "TOPOCOLL_RANK_MAP": ",".join(f"n{i}" for i in range(np)),
        "TOPOCOLL_ALLTOALL": algorithm,
        "TOPOCOLL_STATS": "1",
        # segments of 1500 bytes: count 1000 (4000-byte blocks) and 65536 run
        # cut into pieces that split elements of every datatype; fan-out 3
        "TOPOCOLL_SEGMENT_SIZE": "1500",
        "TOPOCOLL_FANOUT": "3",
    }
    env.update(extra)
    return env


def calls_and_stats(proc):
    m = re.search(r"alltoall_check: calls=(\d+) errors=(\d+)", proc.stdout)
    assert m, proc.stdout + proc.stderr
    stats = dict(re.findall(r"topocoll: alltoall (\S+) calls=(\d+)", proc.stderr))
    return int(m.group(1)), int(m.group(2)), {k: int(v) for k, v in stats.items()}


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("algorithm", ALGORITHMS + ["native"])
@pytest.mark.parametrize("np", range(1, 10))
def test_every_byte(mpi, algorithm, np):
    if not available(mpi):
        pytest.fail(f"{mpi} is not installed (make deps installs it)")
    env = env_for(algorithm, np, LD_PRELOAD=str(pmpi_lib(mpi)))
    if mpi == "mpich" and np > 2:   # more ranks than cores; MPI_Waitall at 1 and 2
        env.update(MPICH_NAP)
    if mpi == "mpich" and algorithm == "native":
        # MPICH 4.0.2's own in-place MPI_Alltoall truncates a resized struct
        # type at count 1000 ("Message truncated" in its pairwise
        # sendrecv_replace), with or without topocoll: not ours to test
        env["ALLTOALL_CHECK_SKIP_INPLACE_STRUCT_ABOVE"] = "300"
    proc = run(mpi, np, [program("alltoall_check", mpi)], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0
    assert stats == {algorithm: calls}, proc.stderr[-2000:]


# several ranks a machine, unevenly and interleaved in rank order (2, 3, 1
# and 2 ranks on n0, n4, n8, n5)
SHARED_MAP = "n0,n0,n4,n4,n4,n8,n0,n5"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_byte_several_ranks_a_machine(algorithm):
    env = env_for(algorithm, 8, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_RANK_MAP=SHARED_MAP,
                  TOPOCOLL_VERBOSE="1")
    proc = run("openmpi", 8, [program("alltoall_check", "openmpi")], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0
    assert stats == {algorithm: calls}, proc.stderr[-2000:]


# the schedules that run with syncs, which the executor paces when link rates are known
PACED = [a["name"] for a in algorithms() if a["runs_with_syncs"]]


def paced_stats(proc):
    m = re.search(r"topocoll: pacing steps=(\d+) split-messages=(\d+)", proc.stderr)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("algorithm", PACED)
@pytest.mark.parametrize("np,rank_map", [(2, "n0,n4"), (5, "n0,n1,n3,n6,n8"), (8, SHARED_MAP)])
def test_paced_every_byte(mpi, algorithm, np, rank_map):
    """Pacing on (link rates known), messages over 1000 bytes cut into pieces
    that split elements of every datatype, waiting ranks napping: every byte
    right, and the statistics show that steps were paced and messages went
    in pieces."""
    env = env_for(algorithm, np, LD_PRELOAD=str(pmpi_lib(mpi)), TOPOCOLL_RANK_MAP=rank_map,
                  TOPOCOLL_BANDWIDTH="10Gbit", TOPOCOLL_PIECE_SIZE="1000", TOPOCOLL_PACE_LEAD="0",
                  TOPOCOLL_NAP="50us")
    proc = run(mpi, np, [program("alltoall_check", mpi)], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0 and stats == {algorithm: calls}
    steps, pieces = paced_stats(proc)
    assert pieces > 0 and (steps > 0 or np == 2), proc.stderr[-2000:]   # two ranks need no syncs


@pytest.mark.parametrize("extra", [{"TOPOCOLL_BANDWIDTH": "10Gbit", "TOPOCOLL_PACE": "off"}, {}],
                         ids=["pace off", "rates unknown"])
def test_pace_off_and_unknown_rates_do_not_pace(extra):
    env = env_for("faraj-yuan", 5, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_PIECE_SIZE="1000", **extra)
    proc = run("openmpi", 5, [program("alltoall_check", "openmpi"), "1000"], env)
    assert proc.returncode == 0 and calls_and_stats(proc)[1] == 0, proc.stderr[-2000:]
    assert paced_stats(proc) == (0, 0)


@pytest.mark.parametrize("algorithm", PACED)
def test_balanced_phases_every_byte_and_trace(algorithm, tmp_path):
    """Phases in the balanced order, paced, on shared machines: every byte
    right; the trace has each rank's sends started, done and signalled in
    that order."""
    prefix = tmp_path / "trace"
    env = env_for(algorithm, 8, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_RANK_MAP=SHARED_MAP,
                  TOPOCOLL_BANDWIDTH="10Gbit", TOPOCOLL_PIECE_SIZE="1000", TOPOCOLL_PHASE_ORDER="balanced",
                  TOPOCOLL_TRACE=str(prefix))
    proc = run("openmpi", 8, [program("alltoall_check", "openmpi"), "1000", "65536"], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0 and stats == {algorithm: calls}
    files = sorted(tmp_path.glob("trace.*"))
    assert len(files) == 8
    events = {}
    for f in files:
        for line in f.read_text().splitlines():
            call, op, event, when, peer = line.split()
            assert 0 <= int(peer) < 8, line
            events.setdefault((f.name, call, op), {})[event] = (float(when), int(peer))
    assert {e for ev in events.values() for e in ev} == {"start", "done", "notify"}
    for ev in events.values():
        assert ev["start"][0] <= ev["done"][0] <= ev.get("notify", ev["done"])[0]
        assert len({peer for _, peer in ev.values()}) == 1   # an op's events name one destination
    # the peers are the sends' destinations: over the run, every rank sends to
    # every other (a plan's sends may include one to the rank itself)
    for f in files:
        rank = int(f.name.rsplit(".", 1)[1])
        peers = {ev["start"][1] for (name, _, _), ev in events.items() if name == f.name}
        assert peers >= set(range(8)) - {rank}, (f.name, peers)


@pytest.mark.parametrize("mpi", MPIS)
def test_shared_machines_plan_machines_as_switches(mpi):
    """auto on shared machines: faraj-yuan (where the model picks it, the
    large blocks) on the tree in which each shared machine is a switch
    holding its ranks, no fallback for want of machines; the MPI's own for
    the small blocks, and the verbose lines say which rule chose each."""
    env = env_for("auto", 4, LD_PRELOAD=str(pmpi_lib(mpi)), TOPOCOLL_VERBOSE="1", TOPOCOLL_RANK_MAP="n0,n1,n1,n2")
    proc = run(mpi, 4, [program("alltoall_check", mpi), "1", "100000"], env)
    assert proc.returncode == 0, proc.stderr
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0
    assert "faraj-yuan (several ranks per machine: machines as switches) for blocks of 400000 bytes (auto: model" \
        in proc.stderr
    assert "native for blocks of 4 bytes (auto: model" in proc.stderr
    assert set(stats) == {"faraj-yuan", "native"} and sum(stats.values()) == calls


def test_local_group_given_clusters():
    env = env_for("local-group", 6, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_CLUSTERS="x,x,y,y,y,y")
    proc = run("openmpi", 6, [program("alltoall_check", "openmpi")], env)
    calls, errors, stats = calls_and_stats(proc)
    assert proc.returncode == 0 and errors == 0 and stats == {"local-group": calls}


@pytest.mark.parametrize("var, value, says", [
    ("TOPOCOLL_SEGMENT_SIZE", "lots", "TOPOCOLL_SEGMENT_SIZE=lots"),
    ("TOPOCOLL_SEGMENT_SIZE", "99999999999999999999", "TOPOCOLL_SEGMENT_SIZE=99999999999999999999: expected a size"),
    ("TOPOCOLL_SEGMENT_SIZE", "2048G", "to 1T"),
    ("TOPOCOLL_FANOUT", "0", "TOPOCOLL_FANOUT=0"),
    ("TOPOCOLL_SYNC_DEPTH", "two", "TOPOCOLL_SYNC_DEPTH=two"),
    ("TOPOCOLL_CLUSTERS", "a,b", "TOPOCOLL_CLUSTERS lists 2 clusters"),
    ("TOPOCOLL_PACE", "maybe", "TOPOCOLL_PACE=maybe"),
    ("TOPOCOLL_BANDWIDTH", "fast", "TOPOCOLL_BANDWIDTH=fast"),
    ("TOPOCOLL_BANDWIDTH", "1e308", "TOPOCOLL_BANDWIDTH=1e308: rate '1e308' is outside the plausible range"),
    ("TOPOCOLL_BANDWIDTH", "0x10", "TOPOCOLL_BANDWIDTH=0x10"),
    ("TOPOCOLL_PACE_LEAD", "-1ms", "TOPOCOLL_PACE_LEAD=-1ms"),
    ("TOPOCOLL_PACE_LEAD_SHARE", "101", "TOPOCOLL_PACE_LEAD_SHARE=101: expected a whole number from 0 to 100"),
    ("TOPOCOLL_PACE_LEAD_SHARE", "8%", "TOPOCOLL_PACE_LEAD_SHARE=8%"),
    ("TOPOCOLL_PIECE_SIZE", "0", "TOPOCOLL_PIECE_SIZE=0"),
    ("TOPOCOLL_NAP", "-1ms", "TOPOCOLL_NAP=-1ms"),
    ("TOPOCOLL_NAP", "1e9s", "TOPOCOLL_NAP=1e9s"),
    ("TOPOCOLL_PHASE_ORDER", "random", "TOPOCOLL_PHASE_ORDER=random"),
    ("TOPOCOLL_ALLTOALL_MIN_BYTES", "-1", "TOPOCOLL_ALLTOALL_MIN_BYTES=-1"),
    ("TOPOCOLL_RANK_MAP", "n0,n1", "TOPOCOLL_RANK_MAP lists 2 machines but MPI_COMM_WORLD has 3 ranks: it needs one name"),
    ("TOPOCOLL_RANK_MAP", "n[9223372036854775807],a,b", "more than 18 digits"),
])
def test_bad_parameters_stop_with_the_variable(var, value, says):
    env = env_for("group-shuffle", 3, LD_PRELOAD=str(pmpi_lib("openmpi")), **{var: value})
    proc = run("openmpi", 3, [program("alltoall_check", "openmpi"), "1"], env)
    assert proc.returncode != 0 and says in proc.stderr, proc.stderr[-1000:]


def test_bare_bandwidth_is_mbit():
    """TOPOCOLL_BANDWIDTH=100 is 100 Mbit/s, as a bare LinkSpeed is: paced
    runs finish at once (at 100 bit/s the pacing would take minutes)."""
    env = env_for("faraj-yuan", 4, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_BANDWIDTH="100",
                  TOPOCOLL_PACE="on")
    proc = run("openmpi", 4, [program("alltoall_check", "openmpi"), "300"], env, timeout=120)
    calls, errors, stats = calls_and_stats(proc)
    assert proc.returncode == 0 and errors == 0 and stats["faraj-yuan"] > 0
    assert "topocoll: pacing steps=" in proc.stderr


def test_min_bytes_takes_a_size_with_a_unit():
    env = env_for("faraj-yuan", 4, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_VERBOSE="1",
                  TOPOCOLL_ALLTOALL_MIN_BYTES="4K")
    proc = run("openmpi", 4, [program("alltoall_check", "openmpi"), "1", "1000", "1100"], env)
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0 and proc.returncode == 0
    assert stats["native"] > 0 and stats["faraj-yuan"] > 0
    assert "TOPOCOLL_ALLTOALL_MIN_BYTES=4096" in proc.stderr


def test_wide_zero_padded_rank_map(tmp_path):
    """Names with a zero-padded number wider than any fixed buffer, in the
    topology and in TOPOCOLL_RANK_MAP: whole names match, topocoll runs."""
    hosts = "n[" + "0" * 51 + "1-" + "0" * 51 + "3]"
    topo = tmp_path / "wide.conf"
    topo.write_text(f"SwitchName=s0 Nodes={hosts}\n")
    env = env_for("faraj-yuan", 3, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_TOPOLOGY=str(topo),
                  TOPOCOLL_RANK_MAP=hosts)
    proc = run("openmpi", 3, [program("alltoall_check", "openmpi"), "1", "1000"], env)
    calls, errors, stats = calls_and_stats(proc)
    assert proc.returncode == 0 and errors == 0
    assert stats.get("faraj-yuan") and "native" not in stats, proc.stderr[-2000:]


@pytest.mark.parametrize("built, runs", [("mpich", "openmpi"), ("openmpi", "mpich")])
def test_library_for_the_other_mpi_stops_at_init(built, runs):
    """The PMPI library of one MPI preloaded into a program of the other:
    stopped at MPI_Init with the library to use, not a crash."""
    if not available(runs):
        pytest.skip(f"{runs} is not installed")
    env = env_for("faraj-yuan", 2, LD_PRELOAD=str(pmpi_lib(built)))
    proc = run(runs, 2, [program("alltoall_check", runs), "1"], env)
    assert proc.returncode != 0
    assert f"topocoll config --pmpi-lib --mpi {runs}" in proc.stderr, proc.stderr[-2000:]
    assert "Segmentation" not in proc.stderr and "signal" not in proc.stderr.lower(), proc.stderr[-2000:]


def test_min_bytes_sends_small_blocks_native():
    env = env_for("faraj-yuan", 4, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_VERBOSE="1",
                  TOPOCOLL_ALLTOALL_MIN_BYTES="4000")
    proc = run("openmpi", 4, [program("alltoall_check", "openmpi"), "1", "1000"], env)
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0 and proc.returncode == 0
    # count 1 blocks (4 to 16 bytes) go native, count 1000 ones (4000+) topocoll
    assert stats["native"] > 0 and stats["faraj-yuan"] > 0
    assert "TOPOCOLL_ALLTOALL_MIN_BYTES=4000" in proc.stderr


def test_unknown_algorithm_stops_with_the_list():
    env = env_for("fastest", 2, LD_PRELOAD=str(pmpi_lib("openmpi")))
    proc = run("openmpi", 2, [program("alltoall_check", "openmpi"), "1"], env)
    assert proc.returncode != 0
    assert "TOPOCOLL_ALLTOALL=fastest is not an algorithm; valid: faraj-yuan" in proc.stderr


@pytest.mark.parametrize("text, says", [
    (b"SwitchName=s0 Nodes=n[0-3]\nSwitchName=s1 Nodes=n3\n", "bad.conf:2: machine 'n3'"),
    # a NUL byte once cut the file short and its machines' ranks fell back silently
    (b"SwitchName=s0 Nodes=n[0-1]\n\0SwitchName=s1 Nodes=n[2-3]\n", "bad.conf:2: a NUL byte"),
    (b"SwitchName=s0 Nodes=n[0-3] LinkSpeed=1e308\n", "bad.conf:1: LinkSpeed: rate '1e308' is outside"),
])
def test_bad_topology_stops_with_the_place(tmp_path, text, says):
    bad = tmp_path / "bad.conf"
    bad.write_bytes(text)
    env = env_for("auto", 2, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_TOPOLOGY=str(bad))
    proc = run("openmpi", 2, [program("alltoall_check", "openmpi"), "1"], env)
    assert proc.returncode != 0
    assert says in proc.stderr, proc.stderr[-2000:]


def test_without_topology_every_call_goes_to_the_mpi():
    env = env_for("faraj-yuan", 3, LD_PRELOAD=str(pmpi_lib("openmpi")))
    del env["TOPOCOLL_TOPOLOGY"]
    env["TOPOCOLL_TOPOLOGY"] = ""
    proc = run("openmpi", 3, [program("alltoall_check", "openmpi"), "1"], env)
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0 and stats == {"native": calls}


def test_processor_names_map_ranks(tmp_path):
    """Without TOPOCOLL_RANK_MAP ranks map by processor name: every rank of
    this machine has the same name, so a topology naming it maps them all to
    one machine, planned as a switch holding them."""
    import socket
    host = socket.gethostname().split(".")[0]
    topo = tmp_path / "here.conf"
    topo.write_text(f"SwitchName=s0 Nodes={host},other\n")
    env = env_for("faraj-yuan", 3, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_TOPOLOGY=str(topo),
                  TOPOCOLL_VERBOSE="1")
    del env["TOPOCOLL_RANK_MAP"]
    proc = run("openmpi", 3, [program("alltoall_check", "openmpi"), "1"], env)
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0
    assert "of 3 ranks: faraj-yuan (several ranks per machine" in proc.stderr
    assert stats == {"faraj-yuan": calls}


def test_mpi4py_program():
    """Debian's mpi4py (built for Open MPI, on the system Python) runs through
    the preloaded library unchanged."""
    import shutil
    from pathlib import Path
    python = "/usr/bin/python3"
    probe = run("openmpi", 1, [python, "-c", "import mpi4py"], {})
    if probe.returncode != 0 or not shutil.which(python):
        pytest.fail("Debian's python3-mpi4py is missing (make deps installs it)")
    script = Path(__file__).parent / "programs" / "mpi4py_alltoall.py"
    env = env_for("faraj-yuan", 6, LD_PRELOAD=str(pmpi_lib("openmpi")))
    proc = run("openmpi", 6, [python, script], env)
    assert proc.returncode == 0, proc.stderr
    assert "mpi4py alltoall: errors=0" in proc.stdout
    # three calls on the world, one on each half (counted at its rank 0)
    assert "topocoll: alltoall faraj-yuan calls=5" in proc.stderr


@pytest.mark.parametrize("algorithm", [a["name"] for a in algorithms() if a["runs_with_syncs"]])
def test_check_mode_verifies_what_runs(algorithm):
    """TOPOCOLL_CHECK=1: the verifiers (blocks, contention, syncs) run on
    every plan before the executor does; correct plans pass, every byte right."""
    env = env_for(algorithm, 6, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_CHECK="1", TOPOCOLL_SYNC_DEPTH="2",
                  TOPOCOLL_RANK_MAP="n0,n0,n1,n3,n4,n4")
    proc = run("openmpi", 6, [program("alltoall_check", "openmpi"), "1", "1000"], env)
    calls, errors, stats = calls_and_stats(proc)
    assert proc.returncode == 0 and errors == 0 and stats.get(algorithm), proc.stderr[-2000:]
