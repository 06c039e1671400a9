"""Every registered algorithm, on random trees of every shape and on the
known edge cases, judged by the verifier (and by independent checks here)."""

import itertools

import pytest
from hypothesis import HealthCheck, given, settings

from topocoll import Schedule, Topology, algorithms

from .conftest import ALGORITHMS, EXAMPLES
from .trees import trees

PROMISES = {a["name"]: a for a in algorithms()}


def check_plan(name: str, topo: Topology) -> Schedule:
    sched = Schedule.plan(name, topo)
    rep = sched.verify(topo)
    assert rep["complete"], rep["problem"]
    if PROMISES[name]["contention_free"]:
        assert rep["contention_free"], rep["problem"]
    if PROMISES[name]["optimal"]:
        assert rep["optimal"] and sched.num_steps == topo.alltoall_load, rep["problem"]
    if PROMISES[name]["single_port"]:
        assert rep["single_port"]
    return sched


def independent_checks(sched: Schedule, n: int) -> None:
    """Each ordered pair exactly once; in a contention-free phase no machine
    sends or receives twice (its one link would be shared)."""
    phases = sched.phases()
    pairs = [m for ph in phases for m in ph]
    assert sorted(pairs) == [(s, d) for s in range(n) for d in range(n) if s != d]
    for ph in phases:
        assert len({s for s, _ in ph}) == len(ph)
        assert len({d for _, d in ph}) == len(ph)


@pytest.mark.parametrize("name", ALGORITHMS)
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees())
def test_random_trees(name, tree):
    topo = Topology.parse(tree.yaml(), "yaml", "random.yaml")
    assert topo.machines == tree.rank_order()
    assert topo.alltoall_load == tree.expected_load()
    sched = check_plan(name, topo)
    if PROMISES[name]["contention_free"]:
        independent_checks(sched, topo.num_machines)


EDGE_CASES = [
    "1", "2", "3", "chain:1,1", "chain:1,1,1", "chain:0,3,0", "chain:0,0,2,0,1", "chain:3,0,0,0,3",
    "star:0,1,1,1", "star:5,5,5", "star:1,4,4", "star:4,4", "star:2,3,3,3", "tree:2,2,2", "tree:3,1,1",
    "tree:4,4", "chain:8,8,8,8", "star:8,8,8,8", "24", "chain:5,1,5", "star:0,6,6,1", "star:7,1,1,1,1,1,1,1",
]


@pytest.mark.parametrize("name", ALGORITHMS)
@pytest.mark.parametrize("spec", EDGE_CASES)
def test_edge_cases(name, spec):
    topo = Topology.synthetic(spec)
    sched = check_plan(name, topo)
    if PROMISES[name]["contention_free"]:
        independent_checks(sched, topo.num_machines)


@pytest.mark.parametrize("name", ALGORITHMS)
@pytest.mark.parametrize("example", ["figure1.yaml", "a-single-switch.conf", "b-star.conf", "c-chain.conf"])
def test_examples(name, example):
    check_plan(name, Topology.load(EXAMPLES / example))


def test_figure1_gives_nine_phases_as_table4():
    topo = Topology.load(EXAMPLES / "figure1.yaml")
    sched = check_plan("faraj-yuan", topo)
    assert sched.num_steps == 9
    # Table 4 of the paper, ranks n0..n5 = t0,0 t0,1 t0,2 t1,0 t1,1 t2,0
    table4 = [
        {(0, 4), (3, 5), (5, 1), (1, 0)}, {(1, 3), (4, 5), (5, 2), (2, 1)}, {(2, 4), (5, 0), (0, 2)},
        {(0, 3), (3, 2), (2, 0)}, {(1, 4), (3, 0), (0, 1), (4, 3)}, {(2, 3), (3, 1), (1, 2)},
        {(0, 5), (4, 0)}, {(1, 5), (4, 1), (5, 3), (3, 4)}, {(2, 5), (4, 2), (5, 4)},
    ]
    assert [set(p) for p in sched.phases()] == table4


def test_thousands_of_machines():
    topo = Topology.synthetic("star:600,500,400,300,200,100")   # 2,100 machines, 4.4 M messages
    sched = check_plan("faraj-yuan", topo)
    assert sched.num_ops == 2100 * 2099


# ---- the verifier itself: it must reject what is wrong ------------------------------

def mutate(sched: Schedule, how: str):
    t = sched.triples()
    n = len(t) // 3
    if how == "drop":
        del t[0:3]
    elif how == "duplicate":
        t.extend(t[0:3])
    elif how == "merge":           # move every message of the last phase into phase 0
        last = t[3 * (n - 1)]
        for i in range(0, len(t), 3):
            if t[i] == last:
                t[i] = 0
    elif how == "extra-phase":     # push one message to a new last phase
        t[0] = sched.num_steps
    elif how == "self":
        t[2] = t[1]
    return Schedule.from_triples(sched.algorithm, sched.num_ranks, t)


@pytest.mark.parametrize("how, field", [
    ("drop", "complete"), ("duplicate", "complete"), ("self", "complete"),
    ("merge", "contention_free"), ("extra-phase", "optimal"),
])
@pytest.mark.parametrize("spec", ["figure1", "chain:4,4,4", "star:3,2,2"])
def test_verifier_rejects(how, field, spec):
    topo = Topology.load(EXAMPLES / "figure1.yaml") if spec == "figure1" else Topology.synthetic(spec)
    bad = mutate(Schedule.plan("faraj-yuan", topo), how)
    rep = bad.verify(topo)
    assert not rep[field]
    assert not rep["optimal"]
    assert rep["problem"]


def test_verifier_refuses_size_mismatch():
    from topocoll import TopocollError
    sched = Schedule.plan("faraj-yuan", Topology.synthetic("4"))
    with pytest.raises(TopocollError, match="4 ranks but the topology has 5 machines"):
        sched.verify(Topology.synthetic("5"))


def test_all_pairs_of_small_chains():
    # exhaustive over small chains of 2-4 switches with 0-3 machines each
    for k in (2, 3, 4):
        for counts in itertools.product(range(4), repeat=k):
            if sum(counts) == 0:
                continue
            topo = Topology.synthetic("chain:" + ",".join(map(str, counts)))
            check_plan("faraj-yuan", topo)
