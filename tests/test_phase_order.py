"""Phase order for execution (core/src/phase_order.c, TOPOCOLL_PHASE_ORDER=
balanced): planned for execution, a contention-free phase schedule may run
its phases in another order.  It
must be the same phases, still complete, optimal and contention-free, with
syncs that order every shared link; and on two switches of 8 machines the
busiest link changes senders evenly in both directions instead of in nearly
every phase one way."""

from collections import Counter

import pytest
from hypothesis import given, settings

from topocoll import Schedule, Topology
from topocoll._core import algorithms

from .conftest import EXAMPLES
from .test_syncs import tree_paths, unordered_pairs
from .trees import trees

WITH_SYNCS = [a["name"] for a in algorithms() if a["runs_with_syncs"]]


def phases(sched: Schedule) -> list[frozenset]:
    t = sched.triples()
    out: dict[int, set] = {}
    for i in range(0, len(t), 3):
        out.setdefault(t[i], set()).add((t[i + 1], t[i + 2]))
    return [frozenset(out[k]) for k in sorted(out)]


def check_reordered(name: str, topo: Topology):
    paper = Schedule.plan_for_execution(name, topo)
    balanced = Schedule.plan_for_execution(name, topo, balance_phases=True)
    assert Counter(phases(paper)) == Counter(phases(balanced))
    report = balanced.verify(topo)
    assert report["complete"] and report["contention_free"] and report["optimal"], report
    return paper, balanced


@settings(max_examples=80, deadline=None)
@given(tree=trees(max_machines=20, max_switches=6))
def test_balanced_order_is_the_same_phases_and_synced(tree):
    topo = Topology.parse(tree.yaml(), "yaml", "random.yaml")
    _, balanced = check_reordered("faraj-yuan", topo)
    assert unordered_pairs(balanced, tree_paths(tree), topo.machines) == []


@pytest.mark.parametrize("name", WITH_SYNCS)
def test_every_synced_algorithm_keeps_its_phases(name):
    topo = Topology.load(str(EXAMPLES / "smp-4x4.yaml"))
    check_reordered(name, topo)


def sender_changes(sched: Schedule, side: dict[int, int]) -> dict[tuple, int]:
    """Per direction between the two switches: how often the sender changes
    from one message on the link to the next."""
    t = sched.triples()
    last, changes = {}, Counter()
    for i in range(0, len(t), 3):
        src, dst = t[i + 1], t[i + 2]
        d = (side[src], side[dst])
        if d[0] == d[1]:
            continue
        if d in last and last[d] != src:
            changes[d] += 1
        last[d] = src
    return dict(changes)


def test_two_switches_hand_the_link_over_evenly():
    topo = Topology.synthetic("chain:8,8")
    side = {r: r // 8 for r in range(16)}
    paper, balanced = check_reordered("faraj-yuan", topo)
    # 64 phases, each with one message each way over the inter-switch link
    assert sorted(sender_changes(paper, side).values()) == [7, 63]
    assert max(sender_changes(balanced, side).values()) <= 34


def test_forwarding_and_unsynced_schedules_keep_their_order():
    topo = Topology.synthetic("chain:3,3")
    for name in ("bruck", "pairwise"):
        assert phases(Schedule.plan_for_execution(name, topo, balance_phases=True)) == phases(Schedule.plan(name, topo))
