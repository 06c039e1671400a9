"""The traffic matrix of unequal blocks (MPI_Alltoallv's D): patterns, the
file, and the link-load and single-port bounds (`topology show --matrix`),
against an independent computation here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll import Topology, TopocollError
from topocoll._core import Traffic
from topocoll.common import load_topology

from .trees import trees

CLI = [sys.executable, "-m", "topocoll.cli"]
PATTERNS = ["uniform", "zipf:1.0", "zipf:0.5", "hot:1", "hot:2", "sparse:0.25", "random"]


def cli(*args):
    return subprocess.run(CLI + [str(a) for a in args], capture_output=True, text=True)


def oracle_bounds(topo: Topology, rows: list[list[int]], rate: float) -> tuple[float, float]:
    """Both bounds from the links' machines-below sets, computed here."""
    p = topo.num_machines
    below = {}   # child name -> set of ranks below it
    names = topo.machines
    parent = {l["child"]: l["parent"] for l in topo.links()}
    for r, m in enumerate(names):
        node = m
        while node in parent:
            below.setdefault(node, set()).add(r)
            node = parent[node]
    link = 0.0
    for l in topo.links():
        inside = below.get(l["child"], set())
        up = sum(rows[i][j] for i in inside for j in range(p) if j not in inside)
        down = sum(rows[i][j] for i in range(p) if i not in inside for j in inside)
        r = l["bandwidth"] or rate
        link = max(link, 8 * up / r, 8 * down / r)
    port = 0.0
    for i, m in enumerate(names):
        own = next(l for l in topo.links() if l["child"] == m)
        r = own["bandwidth"] or rate
        sent = sum(rows[i][j] for j in range(p) if j != i)
        recv = sum(rows[j][i] for j in range(p) if j != i)
        port = max(port, 8 * max(sent, recv) / r)
    return link, port


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("spec", ["chain:4,4,4", "tree:2,3,2", "star:5,3,2,1"])
def test_patterns_and_bounds(pattern, spec):
    topo = load_topology(spec)
    d = Traffic.pattern(pattern, topo.num_machines, 1000, seed=3)
    rows = d.rows()
    p = topo.num_machines
    assert sum(map(sum, rows)) == 1000 * p * (p - 1) and all(rows[i][i] == 0 for i in range(p))
    b = d.bounds(topo, 1e8)
    link, port = oracle_bounds(topo, rows, 1e8)
    assert b["link_seconds"] == pytest.approx(link) and b["port_seconds"] == pytest.approx(port)
    assert b["link_seconds"] >= b["port_seconds"] * (1 - 1e-12)


def test_uniform_is_the_all_to_all_load():
    topo = load_topology("chain:8,8")
    b = Traffic.pattern("uniform", 16, 131072).bounds(topo, 1e8)
    assert b["link_bytes"] == topo.alltoall_load * 131072
    assert b["link_seconds"] == pytest.approx(topo.alltoall_load * 131072 * 8 / 1e8)


@settings(max_examples=80, deadline=None)
@given(tree=trees(max_machines=24), data=st.data())
def test_bounds_on_random_trees_and_matrices(tree, data):
    topo = Topology.parse(tree.yaml(), "yaml", "random.yaml")
    p = topo.num_machines
    rows = [[data.draw(st.integers(0, 10**6)) for _ in range(p)] for _ in range(p)]
    b = Traffic.from_rows(rows).bounds(topo, 1e8)
    link, port = oracle_bounds(topo, rows, 1e8)
    assert b["link_seconds"] == pytest.approx(link) and b["port_seconds"] == pytest.approx(port)


def test_file_round_trip(tmp_path):
    d = Traffic.pattern("zipf:1.0", 6, 5000, seed=9)
    f = tmp_path / "d.txt"
    d.write(f)
    assert Traffic.load(f).rows() == d.rows()
    assert f.read_text().startswith("# topocoll traffic matrix: 6 ranks")


@pytest.mark.parametrize("text, says", [
    ("0 1\n2\n", "d.txt:2: 1 blocks in rank 1's row; the first row has 2"),
    ("0 1\n2 x\n", "d.txt:2:3: 'x' where a block's bytes"),
    ("0 1\n2 0\n3 3\n", "d.txt:3: row 3 of a matrix of 2 ranks"),
    ("", "no rows"),
])
def test_malformed_files(tmp_path, text, says):
    f = tmp_path / "d.txt"
    f.write_text(text)
    with pytest.raises(TopocollError, match=says):
        Traffic.load(f)


def test_cli_topology_show_matrix(tmp_path):
    r = cli("topology", "show", "chain:4,4,4", "--matrix", "hot:1", "--mean-block", "64K")
    assert r.returncode == 0, r.stderr
    assert "link-load bound" in r.stdout and "single-port bound" in r.stdout and "rank 0 receives" in r.stdout
    f = tmp_path / "d.txt"
    f.write_text("0 100 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n")
    r = cli("topology", "show", "chain:2,2", "--matrix", f, "--json")
    t = json.loads(r.stdout)["traffic"]
    assert t["total_bytes"] == 100 and t["link_bytes"] == 100 and t["port_rank"] == 0 and t["port_sends"]
    r = cli("topology", "show", "chain:2,2,2", "--matrix", f)
    assert r.returncode == 2 and "4 ranks but the topology 6 machines" in r.stderr
    r = cli("topology", "show", "chain:2,2", "--matrix", "zipf:11")
    assert r.returncode == 2 and "(0, 10]" in r.stderr
    r = cli("topology", "show", "chain:2,2", "--matrix", "nosuch.txt")
    assert r.returncode == 2 and "no file 'nosuch.txt'" in r.stderr and "Traceback" not in r.stderr
