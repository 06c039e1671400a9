"""Topology model and formats: parsing, writing, round trips, and a clear
error naming the culprit and its place for every kind of bad input."""

import subprocess
import sys

import pytest
from hypothesis import given, settings

from topocoll import Topology, TopocollError
from topocoll._core import hostlist_compress, hostlist_expand

from .conftest import EXAMPLES
from .trees import trees


def parse(text, fmt="auto", name="t.yaml"):
    return Topology.parse(text, fmt, name)


def error_of(text, fmt="auto", name="t.yaml"):
    with pytest.raises(TopocollError) as e:
        parse(text, fmt, name)
    return str(e.value)


# ---- the paper's topologies ------------------------------------------------

@pytest.mark.parametrize("name, machines, switches, load", [
    ("figure1.yaml", 6, 4, 9),
    ("a-single-switch.conf", 24, 1, 23),
    ("b-star.conf", 32, 4, 8 * 24),
    ("c-chain.conf", 32, 4, 16 * 16),
])
def test_examples(name, machines, switches, load):
    t = Topology.load(EXAMPLES / name)
    assert (t.num_machines, t.num_switches, t.alltoall_load) == (machines, switches, load)


def test_peak_bound_matches_formula():
    # |M|(|M|-1)B / (|Mu||Mv|): topology (c) at 100 Mbit/s, bottleneck 16|16
    t = Topology.load(EXAMPLES / "c-chain.conf")
    assert t.peak_throughput(100e6) == pytest.approx(32 * 31 * 100e6 / 256)
    # a slower bottleneck link decides the bound
    slow = parse("""
switches:
  - {name: s0, machines: "n[0-3]", switches: [s1]}
  - {name: s1, machines: "n[4-7]", uplink: {bandwidth: 10Mbit}}
bandwidth: 100Mbit
""")
    assert slow.peak_throughput(100e6) == pytest.approx(8 * 7 * 10e6 / 16)


def test_figure1_root_and_subtrees():
    info = Topology.load(EXAMPLES / "figure1.yaml").aapc_root()
    assert info["root"] == "s1"
    assert [len(s["machines"]) for s in info["subtrees"]] == [3, 2, 1]
    assert info["subtrees"][2]["machines"] == ["n5"]


def test_rank_order_is_file_order():
    t = parse("SwitchName=top Switches=b,a\nSwitchName=b Nodes=x[3-4]\nSwitchName=a Nodes=y1,x1\n", name="t.conf")
    assert t.machines == ["x3", "x4", "y1", "x1"]


# ---- Slurm -------------------------------------------------------------------

def test_slurm_features():
    t = parse("""# comment
switchname=s0 nodes=tux[01-03] \\
    Switches=s1   # continued line
SwitchName=s1 Nodes=n[8-10],m LinkSpeed=1Gbit
""", name="x.conf")
    assert t.machines == ["tux01", "tux02", "tux03", "n8", "n9", "n10", "m"]
    bws = {(l["child"], l["parent"]): l["bandwidth"] for l in t.links()}
    assert bws[("n8", "s1")] == 1e9 and bws[("tux01", "s0")] == 0
    assert parse("SwitchName=s0 Nodes=a,b LinkSpeed=100", name="y.conf").links()[0]["bandwidth"] == 100e6


def test_hostlists():
    assert hostlist_expand("n[0-2,7],tux[09-11]") == ["n0", "n1", "n2", "n7", "tux09", "tux10", "tux11"]
    names = ["n0", "n1", "n2", "n4", "n10", "tux01", "tux02", "a", "n01"]
    assert hostlist_expand(hostlist_compress(names)) == names


# ---- YAML ----------------------------------------------------------------------

def test_yaml_link_precedence_and_slots():
    t = parse("""
topocoll: 1
bandwidth: 1Gbit
latency: 5us
switches:
  - name: s0
    machines: [a, "b[1-2]"]
    switches: s1
    bandwidth: 10Gbit
  - name: s1
    machines: c
    uplink: {bandwidth: 40Gbit, latency: 1us}
machines:
  a: {slots: 4, bandwidth: 25Gbit}
""")
    links = {l["child"]: l for l in t.links()}
    assert links["a"]["bandwidth"] == 25e9          # machine's own
    assert links["b1"]["bandwidth"] == 10e9         # parent switch's
    assert links["c"]["bandwidth"] == 1e9           # file default
    assert links["s1"]["bandwidth"] == 40e9 and links["s1"]["latency"] == pytest.approx(1e-6)
    assert links["b1"]["latency"] == pytest.approx(5e-6)
    assert t.slots(0) == 4 and t.slots(1) == 1


# ---- round trips ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["figure1.yaml", "a-single-switch.conf", "b-star.conf", "c-chain.conf"])
def test_round_trip_both_formats(name):
    t = Topology.load(EXAMPLES / name)
    for fmt in ("yaml", "slurm"):
        if fmt == "slurm" and any(l["latency"] for l in t.links()):
            continue
        again = Topology.parse(t.write(fmt), fmt)
        assert again == t, fmt
        assert again.write(fmt) == t.write(fmt)


def test_round_trip_keeps_yaml_only_settings():
    t = parse("""
switches:
  - {name: s0, machines: "n[0-1]", switches: s1}
  - {name: s1, machines: n2, uplink: {bandwidth: 10Gbit, latency: 2us}}
machines:
  n1: {slots: 8, latency: 3us}
""")
    assert Topology.parse(t.write("yaml"), "yaml") == t


def test_slurm_refuses_what_it_cannot_say():
    t = parse("switches: [{name: s0, machines: n0}]\nmachines: {n0: {slots: 2}}\n")
    with pytest.raises(TopocollError, match="slots"):
        t.write("slurm")


# ---- errors: each names the problem and the place ------------------------------------

@pytest.mark.parametrize("kind, text, fmt, expected", [
    ("not connected", "SwitchName=s0 Nodes=n[0-1]\nSwitchName=s1 Nodes=n[2-3]\n", "slurm",
     ["not connected", "s1", "t.conf:2"]),
    ("not connected", "switches:\n  - {name: s0, machines: a}\n  - {name: s1, machines: b}\n", "yaml",
     ["not connected", "s1", "t.yaml:3"]),
    ("cycle", "SwitchName=s0 Nodes=a Switches=s1\nSwitchName=s1 Nodes=b Switches=s2\nSwitchName=s2 Switches=s0\n",
     "slurm", ["cycle", "t.conf:3"]),
    ("cycle", "switches:\n  - {name: s0, switches: s1}\n  - {name: s1, switches: s0, machines: a}\n", "yaml",
     ["given twice", "s0", "s1"]),
    ("not a leaf", "SwitchName=s0 Nodes=n[0-3]\nSwitchName=s1 Nodes=n3 Switches=s0\n", "slurm",
     ["not a leaf", "n3", "t.conf:2"]),
    ("not a leaf", "switches:\n  - {name: s0, machines: a, switches: a}\n", "yaml",
     ["not a leaf", "'a'", "t.yaml:2"]),
    ("not a leaf", "switches:\n  - {name: s0, machines: a}\n  - {name: s1, machines: [b, a], switches: s0}\n",
     "yaml", ["not a leaf", "'a'", "t.yaml:3"]),
    ("duplicate", "SwitchName=s0 Nodes=a\nSwitchName=s0 Nodes=b\n", "slurm", ["duplicate name 's0'", "t.conf:2"]),
    ("duplicate", "switches:\n  - {name: s0, machines: s0}\n", "yaml", ["duplicate name 's0'"]),
    ("no machines", "SwitchName=s0\n", "slurm", ["no machines"]),
    ("no machines", "switches:\n  - name: s0\n", "yaml", ["no machines"]),
    ("unknown", "SwitchName=s0 Nodes=a Switches=s9\n", "slurm", ["unknown switch 's9'", "t.conf:1"]),
    ("unknown", "switches:\n  - {name: s0, machines: a}\nmachines:\n  zz: {slots: 2}\n", "yaml",
     ["'zz'", "t.yaml:4", "not listed"]),
    ("malformed", "SwitchName=s0 Nodes=n[0-\n", "slurm", ["t.conf:1", "hostlist"]),
    ("malformed", "SwitchName=s0 Frobnicate=1\n", "slurm", ["t.conf:1", "unknown key 'Frobnicate'"]),
    ("malformed", "switches:\n  - {name: s0, machines: a\n", "yaml", ["t.yaml:"]),
    ("malformed", "switches:\n  - {name: s0, machine: a}\n", "yaml", ["t.yaml:2", "unknown switch key 'machine'"]),
    ("malformed", "bandwidth: 100parsecs\nswitches: [{name: s0, machines: a}]\n", "yaml", ["t.yaml:1", "unknown unit"]),
    ("malformed", "bandwidth: 0x10\nswitches: [{name: s0, machines: a}]\n", "yaml", ["t.yaml:1", "decimal number"]),
    ("machine link", "switches:\n  - {name: s0, machines: a, switches: [s1]}\n  - {name: s1, machines: 'a b'}\n",
     "yaml", ["invalid name"]),
])
def test_errors_name_problem_and_place(kind, text, fmt, expected):
    name = "t.conf" if fmt == "slurm" else "t.yaml"
    msg = error_of(text, fmt, name)
    for part in expected:
        assert part in msg, f"{kind}: {part!r} not in {msg!r}"


def test_missing_file_and_bad_spec():
    with pytest.raises(TopocollError, match="cannot open topology 'nope.conf'"):
        Topology.load("nope.conf")
    with pytest.raises(TopocollError, match="unknown shape 'ring'"):
        Topology.load("ring:4,4")


@pytest.mark.parametrize("spec, machines, switches, load", [
    ("5", 5, 1, 4), ("star:8,8,8,8", 32, 4, 192), ("chain:8,8,8,8", 32, 4, 256),
    ("tree:2,3,4", 24, 1 + 2 + 6, 12 * 12), ("chain:0,3,0", 3, 3, 2),
])
def test_synthetic(spec, machines, switches, load):
    t = Topology.synthetic(spec)
    assert (t.num_machines, t.num_switches, t.alltoall_load) == (machines, switches, load)


def test_synthetic_equals_example_file():
    assert Topology.synthetic("chain:8,8,8,8") == Topology.parse(
        (EXAMPLES / "c-chain.conf").read_text().replace(" LinkSpeed=100", ""), "slurm")


LEAF_SPINE = """bandwidth: 100Mbit
switches:
  - name: root
    switches: [l0, l1, l2]
  - name: l0
    machines: n[0-3]
    uplink: {bandwidth: 200Mbit}
  - name: l1
    machines: n[4-7]
    uplink: {bandwidth: 250Mbit}
  - name: l2
    machines: n[8-11]
    uplink: {bandwidth: 1Gbit}
machines:
  n11: {bandwidth: 1Gbit}
"""


def test_capacitated_bound_of_fast_uplinks(tmp_path):
    """Capacity floor(rate / slowest host link): 2 (200 and 250 Mbit over
    100), 10 (1 Gbit), and n11's fast host link too; the bound is the
    largest ceil(load / capacity): 32 / 2 = 16 on l0's uplink."""
    topo = Topology.parse(LEAF_SPINE, "yaml", "ls.yaml")
    c = topo.capacitated(1e8)
    caps = {f"{l['child']}-{l['parent']}": k for l, k in zip(topo.links(), c["capacities"])}
    assert caps["l0-root"] == 2 and caps["l1-root"] == 2 and caps["l2-root"] == 10 and caps["n11-l2"] == 10
    assert caps["n0-l0"] == 1
    assert c["load"] == 16 and c["link"] == "l0-root" and c["host_rate"] == 1e8
    assert c["peak_bps"] == pytest.approx(12 * 11 * 1e8 / 16)
    f = tmp_path / "ls.yaml"
    f.write_text(LEAF_SPINE)
    out = subprocess.run([sys.executable, "-m", "topocoll.cli", "topology", "show", str(f)], capture_output=True,
                         text=True)
    assert out.returncode == 0 and "capacitated bound: 16 phases (link l0-root), peak 825.0 Mbit/s" in out.stdout


@settings(max_examples=60, deadline=None)
@given(tree=trees(max_machines=30))
def test_capacitated_bound_is_the_load_with_one_rate(tree):
    topo = Topology.parse(tree.yaml(), "yaml", "random.yaml")
    c = topo.capacitated(1e8)
    assert c["load"] == topo.alltoall_load and set(c["capacities"]) <= {1}
