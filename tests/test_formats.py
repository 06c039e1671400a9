"""The topology files admins have: Slurm's topology.yaml and scontrol show
topology, MPICH's coordinates file, ibnetdiscover's output.  Each sample
(tests/data, written from the formats' documentation) parses to the expected
tree; malformed inputs fail with file:line; writers round-trip."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

from topocoll import Schedule, Topology
from topocoll._core import TopocollError

from .trees import trees

DATA = Path(__file__).parent / "data"


def shape(t: Topology) -> dict:
    """child -> (parent, rate) for every link."""
    return {l["child"]: (l["parent"], l["bandwidth"]) for l in t.links()}


def fails(text: str, says: str, fmt: str = "auto", name: str = "bad.txt", **kw) -> str:
    with pytest.raises(TopocollError) as e:
        Topology.parse(text, fmt, name, **kw)
    assert says in str(e.value), str(e.value)
    return str(e.value)


# ---- Slurm topology.yaml ----

def test_slurm_yaml_cluster_default_tree():
    t = Topology.load(DATA / "slurm-topology.yaml")
    assert t.name == "fabric" and t.machines == [f"tux{i:03d}" for i in range(1, 9)]
    s = shape(t)
    assert s["rack1"] == ("core", 0) and s["rack2"] == ("core", 0)
    assert all(s[f"tux{i:03d}"][0] == ("rack1" if i <= 4 else "rack2") for i in range(1, 9))


def test_slurm_yaml_block_topology_by_name():
    t = Topology.load(DATA / "slurm-topology.yaml", topology_name="nvl")
    s = shape(t)
    assert s["b1"][0] == "nvl" and s["b2"][0] == "nvl" and s["tux005"][0] == "b2" and len(t.machines) == 8


def test_slurm_yaml_choices_refused():
    text = (DATA / "slurm-topology.yaml").read_text()
    fails(text, "no topology named 'x' (the file has: fabric, nvl, none)", topology_name="x")
    fails(text, "topology 'none' is flat", topology_name="none")
    two = text.replace("cluster_default: true", "cluster_default: false")
    fails(two, "3 topologies (fabric, nvl, none) and none is cluster_default")


@pytest.mark.parametrize("text,says", [
    ("- topology: a\n  tree:\n    switches:\n      - switch: s\n        nodez: n1\n", "bad.yaml:5: unknown key 'nodez' in a switch"),
    ("- topology: a\n  tree:\n    switches:\n      - switch: s\n        children: t\n", "bad.yaml:5: switch 's' lists unknown switch 't'"),
    ("- topology: a\n  tree:\n    switches:\n      - switch: s\n        nodes: n[1-2]\n      - switch: t\n"
     "        nodes: n2\n", "bad.yaml:7: machine 'n2' (bad.yaml:5) is not a leaf"),
    ("- cluster_default: true\n  topology: a\n  flat: true\n", "bad.yaml:1: a topology must start with 'topology: NAME'"),
    ("- topology: a\n  tree:\n    switches:\n      - switch: s\n        nodes: n[1-\n", "bad.yaml:5:"),
    ("- topology: a\n  tree: {switches: [{switch: s, nodes: n1}]}\n  flat: true\n", "must have exactly one of tree, block or flat"),
    ("- topology: a\n  block:\n    block_sizes: [four]\n    blocks: [{block: b, nodes: n1}]\n", "bad.yaml:3: block_sizes: 'four'"),
    ("- topology: a\n  tree:\n    switches:\n      - switch: s\n        nodes: [n1, \"n[2-\"\n", "bad.yaml:6: did not find expected"),
])
def test_slurm_yaml_malformed(text, says):
    fails(text, says, "slurm-yaml", "bad.yaml")


@settings(max_examples=60, deadline=None)
@given(tree=trees(max_machines=40))
def test_slurm_yaml_round_trip(tree):
    t = Topology.parse(tree.yaml(), "yaml", "r.yaml")
    if not t.switches:
        return
    back = Topology.parse(t.write("slurm-yaml"), "slurm-yaml", "topology.yaml")
    assert back == t


def test_slurm_yaml_writer_refuses_rates():
    t = Topology.load(DATA / "ib-2spine-4leaf.txt")
    with pytest.raises(TopocollError, match="topology.yaml has no link rates"):
        t.write("slurm-yaml")


# ---- scontrol show topology ----

def test_scontrol_is_the_same_tree_without_rates():
    a = Topology.load(DATA / "scontrol-topology.txt")
    b = Topology.load(DATA / "slurm-topology.yaml")
    assert shape(a) == shape(b) and a.machines == b.machines   # LinkSpeed=1: Slurm's unset default


def test_scontrol_levels_and_speeds():
    text = (DATA / "scontrol-topology.txt").read_text()
    fails(text.replace("core Level=1", "core Level=2"), "bad.txt:3: switch 'core' has Level=2, but its children put it at level 1")
    fails(text.replace("Level=0", "Level=x", 1), "bad.txt:1: Level=x")
    t = Topology.parse(text.replace("LinkSpeed=1 Switches", "LinkSpeed=10000 Switches"), "slurm", "s.txt")
    assert shape(t)["rack1"] == ("core", 1e10)


# ---- MPICH coordinates ----

def test_mpich_coordinates():
    t = Topology.load(DATA / "mpich-coords.txt")
    s = shape(t)
    assert t.machines == ["g0-s0-p0", "g0-s0-p1", "g0-s1-p0", "g1-s0-p0", "rank8"]
    assert s["g0-s0-p1"][0] == "g0-s0" and s["g0-s0"][0] == "g0" and s["g0"][0] == "fabric" and s["rank8"][0] == "g1-s0"
    assert [t.slots(r) for r in range(len(t.machines))] == [2, 2, 2, 2, 1]
    text = t.write("mpich")
    assert text.splitlines()[1:] == (DATA / "mpich-coords.txt").read_text().splitlines()[1:-1] + ["8: 1 0 1"]
    assert Topology.parse(text, "mpich", "c.txt").write("mpich") == text


@pytest.mark.parametrize("body,says", [
    ("0: 0 0 0\n1: 0 1\n", "bad.txt:3: rank 1: expected GROUP SWITCH PORT"),
    ("0: 0 0 0\n0: 0 0 1\n", "bad.txt:3: rank 0 again (line 2)"),
    ("0: 0 0 0\n2: 0 0 1\n", "rank 1 has no line"),
    ("0: 0 0 0\n1: 0 0 1\n2: 0 0 0\n", "a port's ranks must be consecutive"),
    ("zero: 0 0 0\n", "bad.txt:2: expected 'RANK: GROUP SWITCH PORT'"),
    ("0: 0 0 -2\n", "bad.txt:2: rank 0: expected GROUP SWITCH PORT"),
    ("", "no rank lines"),
])
def test_mpich_malformed(body, says):
    fails("# rank: group switch port\n" + body, says, "mpich")


def test_mpich_writer_needs_three_levels():
    with pytest.raises(TopocollError, match="a tree of three levels"):
        Topology.synthetic("chain:2,2").write("mpich")


# ---- ibnetdiscover ----

IB = (DATA / "ib-2spine-4leaf.txt").read_text()


def test_ibnet_two_spines_merged():
    t = Topology.load(DATA / "ib-2spine-4leaf.txt")
    s = shape(t)
    assert t.machines == [f"node{i:02d}" for i in range(16)]
    assert {s[f"leaf{i}"] for i in range(4)} == {("spine0+spine1", 400e9)}   # two 4xHDR cables
    assert {s[f"node{i:02d}"] for i in range(4)} == {("leaf0", 100e9)}        # 4xEDR
    assert "spine0+spine1" in t.note and "sum of their cables' rates" in t.note
    cap = t.capacitated(1e8)
    assert cap["load"] == 15 and t.alltoall_load == 48
    out = subprocess.run([sys.executable, "-m", "topocoll.cli", "topology", "show", str(DATA / "ib-2spine-4leaf.txt")],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "read as a tree: 2 switches read as one, spine0+spine1" in out.stdout
    sched = Schedule.plan_with("capacitated", t)
    rep = sched.verify(t)
    assert rep["within_capacity"] and sched.num_steps <= 16


def test_ibnet_node_name_map():
    t = Topology.load(DATA / "ib-2spine-4leaf.txt", node_name_map=str(DATA / "node-name-map.txt"))
    assert {"gpu-a01", "gpu-a02", "gpu-b02"} <= set(t.machines) and "node00" not in t.machines


def bad_ib(old: str, new: str) -> str:
    assert old in IB
    return IB.replace(old, new, 1)


@pytest.mark.parametrize("text,says", [
    (bad_ib('"S-b8599f0300b00000"[37]\t\t# "leaf0 MQM8700/U1" lid 12 4xHDR', '"S-b8599f0300b00000"'),
     "bad.txt:11: port 1: expected the peer"),
    (bad_ib("lid 12 4xHDR", "lid 12 4xZDR"), "bad.txt:11: unknown link speed '4xZDR'"),
    (bad_ib("lid 12 4xHDR", "lid 12"), "bad.txt:11: port 1: no link width and speed"),
    (bad_ib('"S-b8599f0300b00000"[37]', '"S-b8599f0300b00099"[37]'), "bad.txt:11: port 1 leads to S-b8599f0300b00099"),
    (bad_ib('[1](c42a10300c00001)\t"S-b8599f0300b00000"[1]', '[1](c42a10300c00001)\t"S-b8599f0300b00001"[1]'),
     "host node00 is on two leaves"),
    (bad_ib("Switch\t40", "Switch\tforty"), "expected 'Switch PORTS"),
    (bad_ib("Ca\t1 ", "Rt\t1 "), "a router"),
])
def test_ibnet_malformed(text, says):
    fails(text, says, "ibnetdiscover")


def test_ibnet_not_a_tree():
    """A third spine serving only two of the leaves: leaf0 reaches two merged
    switches that serve different leaves."""
    extra = ('\nvendid=0x2c9\nswitchguid=0xb8599f0300a00002(b8599f0300a00002)\n'
             'Switch\t40 "S-b8599f0300a00002"\t\t# "spine2 MQM8700/U1" enhanced port 0 lid 99 lmc 0\n'
             '[1]\t"S-b8599f0300b00000"[39]\t\t# "leaf0" lid 100 4xHDR\n'
             '[2]\t"S-b8599f0300b00001"[39]\t\t# "leaf1" lid 101 4xHDR\n')
    fails(IB + extra, "not a tree, even with the switches of a tier that serve the same switches merged", "ibnetdiscover")


def test_ibnet_is_read_not_written():
    with pytest.raises(TopocollError, match="read, not written"):
        Topology.synthetic("4").write("ibnetdiscover")


# ---- the CLI ----

def test_convert_by_output_name(tmp_path):
    out = tmp_path / "topology.yaml"
    r = subprocess.run([sys.executable, "-m", "topocoll.cli", "topology", "convert", str(DATA / "scontrol-topology.txt"),
                        "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out.read_text().splitlines()[1].startswith("- topology: ")
    assert Topology.load(out) == Topology.parse(Topology.load(DATA / "scontrol-topology.txt").write("yaml"), "yaml",
                                                 "scontrol-topology.yaml")


def test_topology_name_option_reaches_the_loader():
    r = subprocess.run([sys.executable, "-m", "topocoll.cli", "topology", "show", str(DATA / "slurm-topology.yaml"),
                        "--topology-name", "nvl", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert '"name": "nvl"' in r.stdout
