"""Phases for execution (TOPOCOLL_PHASE_ORDER): planned for execution, a
contention-free phase schedule may run its phases in another order
(core/src/phase_order.c, balanced) or with its messages moved between
phases (core/src/sender_runs.c, grouped, the default).  Either way it must
be the same messages in as many phases, still complete, optimal and
contention-free, with syncs that order every shared link; balanced keeps
the very phases.  On the benchmark topologies the busiest links change
senders far less often than in the paper's order."""

from collections import Counter

import pytest
from hypothesis import given, settings

from topocoll import Schedule, Topology
from topocoll._core import algorithms, phase_orders

from .conftest import EXAMPLES
from .test_syncs import tree_paths, unordered_pairs
from .trees import trees

WITH_SYNCS = [a["name"] for a in algorithms() if a["runs_with_syncs"]]
ORDERS = [o for o in phase_orders() if o != "paper"]


def phases(sched: Schedule) -> list[frozenset]:
    t = sched.triples()
    out: dict[int, set] = {}
    for i in range(0, len(t), 3):
        out.setdefault(t[i], set()).add((t[i + 1], t[i + 2]))
    return [frozenset(out[k]) for k in sorted(out)]


def check_reordered(name: str, topo: Topology, order: str):
    paper = Schedule.plan_for_execution(name, topo, phase_order="paper")
    other = Schedule.plan_for_execution(name, topo, phase_order=order)
    assert len(phases(other)) == len(phases(paper))
    assert Counter(m for ph in phases(paper) for m in ph) == Counter(m for ph in phases(other) for m in ph)
    if order == "balanced":
        assert Counter(phases(paper)) == Counter(phases(other))
    report = other.verify(topo)
    assert report["complete"] and report["contention_free"] and report["optimal"], report
    return paper, other


@settings(max_examples=80, deadline=None)
@given(tree=trees(max_machines=20, max_switches=6))
@pytest.mark.parametrize("order", ORDERS)
def test_order_is_the_same_messages_and_synced(order, tree):
    topo = Topology.parse(tree.yaml(), "yaml", "random.yaml")
    _, other = check_reordered("faraj-yuan", topo, order)
    assert unordered_pairs(other, tree_paths(tree), topo.machines) == []


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name", WITH_SYNCS)
def test_every_synced_algorithm_keeps_its_messages(name, order):
    topo = Topology.load(str(EXAMPLES / "smp-4x4.yaml"))
    check_reordered(name, topo, order)


def test_default_is_grouped_and_every_rank_plans_the_same():
    topo = Topology.synthetic("chain:4,4,4")
    a = Schedule.plan_for_execution("faraj-yuan", topo)
    b = Schedule.plan_for_execution("faraj-yuan", topo, phase_order="grouped")
    assert a.triples() == b.triples() and a.syncs() == b.syncs()
    assert phases(a) != phases(Schedule.plan_for_execution("faraj-yuan", topo, phase_order="paper"))


def test_unknown_order_is_refused():
    with pytest.raises(Exception, match="phase order 'random'"):
        Schedule.plan_for_execution("faraj-yuan", Topology.synthetic("chain:2,2"), phase_order="random")


def sender_changes(sched: Schedule, switch: dict[int, int]) -> dict[tuple, int]:
    """Per directed inter-switch link of a chain: how often the sender
    changes from one message on it to the next."""
    t = sched.triples()
    last, changes = {}, Counter()
    for i in range(0, len(t), 3):
        src, dst = t[i + 1], t[i + 2]
        a, b = switch[src], switch[dst]
        step = 1 if b > a else -1
        for x in range(a, b, step):
            d = (x, x + step)
            if d in last and last[d] != src:
                changes[d] += 1
            last[d] = src
    return dict(changes)


def machine_link_tight_handoffs(sched: Schedule) -> int:
    """Messages that follow another sender's on a machine's link (either
    way) in the very next phase."""
    t = sched.triples()
    last, tight = {}, 0
    for i in range(0, len(t), 3):
        st, src, dst = t[i], t[i + 1], t[i + 2]
        for link in (("up", src), ("down", dst)):
            if link in last and last[link][1] == st - 1 and last[link][0] != src:
                tight += 1
            last[link] = (src, st)
    return tight


def test_two_switches_balanced_hands_the_link_over_evenly():
    topo = Topology.synthetic("chain:8,8")
    switch = {r: r // 8 for r in range(16)}
    paper, balanced = check_reordered("faraj-yuan", topo, "balanced")
    # 64 phases, each with one message each way over the inter-switch link:
    # in the paper's order one direction changes sender at every message,
    # the balanced order at most about every second one
    changes = sender_changes(paper, switch)
    assert max(changes.values()) == 64 - 1
    assert max(sender_changes(balanced, switch).values()) <= 64 // 2 + 2


@pytest.mark.parametrize("spec", ["chain:8,8", "chain:4,4,4"])
def test_grouped_keeps_senders_on_the_busiest_links(spec):
    """The benchmark topologies: grouped phases change senders on the
    inter-switch links at most half as often as the paper's (never fewer
    than each direction's senders less one), and no machine's link passes to
    another sender from one phase to the next."""
    topo = Topology.synthetic(spec)
    per = int(spec.split(":")[1].split(",")[0])
    switch = {r: r // per for r in range(topo.num_machines)}
    paper, grouped = check_reordered("faraj-yuan", topo, "grouped")
    senders = {}
    t = paper.triples()
    for i in range(0, len(t), 3):
        a, b = switch[t[i + 1]], switch[t[i + 2]]
        step = 1 if b > a else -1
        for x in range(a, b, step):
            senders.setdefault((x, x + step), set()).add(t[i + 1])
    least = sum(len(v) - 1 for v in senders.values())
    paper_changes = sum(sender_changes(paper, switch).values())
    grouped_changes = sum(sender_changes(grouped, switch).values())
    assert least <= grouped_changes <= paper_changes / 2
    assert machine_link_tight_handoffs(paper) > 0
    assert machine_link_tight_handoffs(grouped) == 0


@pytest.mark.parametrize("order", ORDERS)
def test_forwarding_and_unsynced_schedules_keep_their_order(order):
    topo = Topology.synthetic("chain:3,3")
    for name in ("bruck", "pairwise"):
        assert phases(Schedule.plan_for_execution(name, topo, phase_order=order)) == phases(Schedule.plan(name, topo))
