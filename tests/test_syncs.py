"""Pairwise synchronisation: the kept syncs, with each rank's program order,
must order every two messages that share a directed link in different phases
(checked here by an independent reachability oracle on the tree)."""

import pytest
from hypothesis import given, settings

from topocoll import Schedule, Topology, algorithms
from topocoll._core import phase_orders

from .conftest import EXAMPLES
from .trees import Tree, trees

SYNCED = [a["name"] for a in algorithms() if a["runs_with_syncs"]]


def tree_paths(tree: Tree):
    """path(src machine, dst machine) as directed (u, v) node pairs."""
    up = {}
    for s, p in enumerate(tree.parents):
        if p is not None:
            up[f"s{s}"] = f"s{p}"
        for m in tree.machines[s]:
            up[m] = f"s{s}"

    def chain(x):
        out = [x]
        while out[-1] in up:
            out.append(up[out[-1]])
        return out

    def path(a, b):
        ca, cb = chain(a), chain(b)
        common = next(x for x in ca if x in set(cb))
        ua, ub = ca[: ca.index(common) + 1], cb[: cb.index(common) + 1]
        return list(zip(ua, ua[1:])) + [(v, u) for u, v in reversed(list(zip(ub, ub[1:])))]

    return path


def unordered_pairs(sched: Schedule, path, names, depth: int = 1):
    """Pairs (x, y) sharing a link, y `depth` users after x on it (so, by
    induction, a link never carries more than `depth` messages at once), with
    y not reachable from x through syncs and program order."""
    t = sched.triples()
    ops = [(t[i], t[i + 1], t[i + 2]) for i in range(0, len(t), 3)]
    succ = [set() for _ in ops]
    for a, b in sched.syncs():
        succ[a].add(b)
    by_rank = {}
    for i, (st, s, _) in enumerate(ops):
        by_rank.setdefault(s, []).append(i)
    for idx in by_rank.values():
        for i in idx:
            later = [j for j in idx if ops[j][0] > ops[i][0]]
            if later:
                first = min(ops[j][0] for j in later)
                succ[i].update(j for j in later if ops[j][0] == first)
    reach = [set() for _ in ops]
    for i in sorted(range(len(ops)), key=lambda i: -ops[i][0]):
        for j in succ[i]:
            reach[i].add(j)
            reach[i] |= reach[j]
    users = {}
    for i, (_, s, d) in enumerate(ops):
        for e in path(names[s], names[d]):
            users.setdefault(e, []).append(i)
    bad = []
    for idx in users.values():
        idx = sorted(idx, key=lambda i: ops[i][0])
        for a, x in enumerate(idx[:-depth] if len(idx) > depth else []):
            y = idx[a + depth]
            if y not in reach[x]:
                bad.append((x, y))
    return bad


@pytest.mark.parametrize("depth", [1, 2])
@settings(max_examples=80, deadline=None)
@given(tree=trees(max_machines=14, max_switches=6))
def test_syncs_order_every_shared_link(depth, tree):
    """depth 1: consecutive users of a link are ordered (hence all); depth d:
    each user follows the one d places before it."""
    topo = Topology.parse(tree.yaml(), "yaml", "random.yaml")
    sched = Schedule.plan("faraj-yuan", topo)
    stats = sched.add_syncs(topo, depth)
    assert stats["kept"] == len(sched.syncs()) <= stats["candidates"] <= stats["sharing_pairs"]
    assert unordered_pairs(sched, tree_paths(tree), topo.machines, depth) == []
    # the core's sync verifier agrees with this oracle
    checked = sched.verify_syncs(topo, depth)
    assert checked["ordered"] and checked["acyclic"], checked["problem"]


def test_oracle_can_fail_and_syncs_matter():
    text = (EXAMPLES / "c-chain.conf").read_text()
    topo = Topology.parse(text, "slurm")
    tree = Tree(parents=[None, 0, 1, 2], machines=[[f"n{8 * s + i}" for i in range(8)] for s in range(4)],
                file_order=[0, 1, 2, 3])
    sched = Schedule.plan("faraj-yuan", topo)
    stats = sched.add_syncs(topo)
    # the counts of topology (c): redundant syncs really are removed
    assert stats["sharing_pairs"] > stats["candidates"] > stats["kept"] > 0
    path = tree_paths(tree)
    assert unordered_pairs(sched, path, topo.machines) == []
    bare = Schedule.plan("faraj-yuan", topo)       # no syncs at all
    assert len(unordered_pairs(bare, path, topo.machines)) > 0


def test_sync_json(tmp_path, capsys):
    import json

    from topocoll.cli import main
    out = tmp_path / "s.json"
    assert main(["plan", str(EXAMPLES / "figure1.yaml"), "--syncs", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    phase_of = {tuple(m): p for p, ph in enumerate(doc["phases"]) for m in ph}
    assert doc["syncs"]
    for s in doc["syncs"]:
        assert s["from"] == s["after"][0] and s["to"] == s["before"][0]
        assert phase_of[tuple(s["after"])] < phase_of[tuple(s["before"])]
    assert "kept after removing" in capsys.readouterr().err


def test_depth_must_be_positive():
    from topocoll import TopocollError
    topo = Topology.synthetic("4")
    with pytest.raises(TopocollError, match="depth 0"):
        Schedule.plan("faraj-yuan", topo).add_syncs(topo, 0)


# ---- the core's sync verifier (tc_schedule_verify_syncs) ----

SYNC_TOPOLOGIES = [("figure1", str(EXAMPLES / "figure1.yaml"), 1), ("chain 4x3", "chain:4,4,4", 1),
                   ("tree 3x3x3", "tree:3,3,3", 1), ("two ranks a machine", "chain:2,3", 2),
                   ("smp-4x4", str(EXAMPLES / "smp-4x4.yaml"), 1)]


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("order", phase_orders())
@pytest.mark.parametrize("algorithm", SYNCED)
@pytest.mark.parametrize("label, spec, per_machine", SYNC_TOPOLOGIES, ids=[t[0] for t in SYNC_TOPOLOGIES])
def test_executed_plans_pass_the_sync_verifier(label, spec, per_machine, algorithm, order, depth):
    """What the executor runs (every synced algorithm, every phase order,
    several ranks a machine): every shared link ordered, no deadlock."""
    topo = Topology.load(spec)
    if per_machine > 1:
        topo = topo.expand(per_machine)
    sched = Schedule.plan_for_execution(algorithm, topo, depth, phase_order=order)
    rep = sched.verify_syncs(topo, depth)
    assert rep["ordered"] and rep["acyclic"], rep["problem"]
    assert rep["checked_pairs"] > 0


def synced(spec="chain:4,4,4"):
    topo = Topology.load(spec)
    sched = Schedule.plan("faraj-yuan", topo)
    sched.add_syncs(topo)
    return topo, sched


def test_sync_verifier_rejects_an_unordered_shared_link():
    topo, sched = synced()
    for k in range(len(sched.syncs())):   # each sync kept was needed: dropping any one shows
        pairs = sched.syncs()
        trimmed = Schedule.plan("faraj-yuan", topo)
        trimmed.set_syncs(pairs[:k] + pairs[k + 1:])
        rep = trimmed.verify_syncs(topo)
        assert not rep["ordered"] and rep["acyclic"] and rep["unordered_pairs"] >= 1
        assert "share a link and nothing orders them" in rep["problem"]
    assert Schedule.plan("faraj-yuan", topo).verify_syncs(topo)["unordered_pairs"] > 0   # no syncs at all


def test_sync_verifier_rejects_a_cycle():
    topo, sched = synced()
    pairs = sched.syncs()
    after, before = pairs[0]
    sched.set_syncs(pairs + [(before, after)])      # the later message's sender now also waits backwards
    rep = sched.verify_syncs(topo)
    assert not rep["acyclic"] and "can deadlock" in rep["problem"]


def test_plan_syncs_check_runs_the_sync_verifier(capsys):
    from topocoll.cli import main
    assert main(["plan", "chain:3,3", "--syncs", "--check"]) == 0
    assert "verified: every shared link ordered, no deadlock" in capsys.readouterr().err
