"""Every registered algorithm, on random trees of every shape and on the
known edge cases, judged by the verifier (and by independent checks here)."""

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topocoll import Schedule, Topology, algorithms
from topocoll._core import PROP_BOTTLENECK_ONCE

from .conftest import ALGORITHMS, EXAMPLES
from .trees import trees

PROMISES = {a["name"]: a for a in algorithms()}


def options(name: str) -> dict:
    """Non-default parameters for the algorithms that read them, so the
    segmented and grouped paths are what the tests prove."""
    params = PROMISES[name]["parameters"]
    return {"segments": 3 if "segment_size" in params else 1, "fanout": 3 if "fanout" in params else 0}


def check_plan(name: str, topo: Topology, **opts) -> Schedule:
    sched = Schedule.plan_with(name, topo, **(opts or options(name)))
    # clusters given by hand need not be the bottleneck's parts
    rep = sched.verify(topo, waive=PROP_BOTTLENECK_ONCE if opts.get("clusters") else 0)
    assert not rep["broken"], (rep["broken"], rep["problem"])
    if PROMISES[name]["optimal"]:
        assert sched.num_steps == topo.alltoall_load
    if sched.num_ops:
        assert rep["max_parts"] == (options(name)["segments"] if not opts else opts.get("segments", 1))
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


SMALL_CHAINS = ["chain:" + ",".join(map(str, counts)) for k in (2, 3, 4)
                for counts in itertools.product(range(4), repeat=k) if sum(counts)]


@pytest.mark.parametrize("spec", SMALL_CHAINS)
def test_all_small_chains(spec):
    """Exhaustive over chains of 2-4 switches with 0-3 machines each."""
    check_plan("faraj-yuan", Topology.synthetic(spec))


# ---- several ranks a machine, segments, groups, clusters ---------------------------

@pytest.mark.parametrize("name", ALGORITHMS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(max_machines=16, max_switches=5), data=st.data())
def test_several_ranks_a_machine(name, tree, data):
    """Machines expanded into their ranks (1-3 each): every algorithm keeps its
    promises on the expanded tree; faraj-yuan stays optimal."""
    base = Topology.parse(tree.yaml(), "yaml", "random.yaml")
    counts = data.draw(st.lists(st.integers(1, 3), min_size=base.num_machines, max_size=base.num_machines))
    topo = base.expand(counts)
    assert topo.num_machines == sum(counts)
    hosts = topo.hosts()
    assert [hosts.count(h) for h in dict.fromkeys(hosts)] == counts
    check_plan(name, topo)


def test_expanded_load_is_the_machine_links():
    topo = Topology.synthetic("4").expand(4)             # 4 machines x 4 ranks on one switch
    assert topo.alltoall_load == 4 * 12                   # a machine's link: its 4 ranks x 12 others
    assert topo.machines[:5] == ["n0.0", "n0.1", "n0.2", "n0.3", "n1.0"]
    fy = check_plan("faraj-yuan", topo)
    assert fy.num_steps == 48
    hf = check_plan("hierarchical-factor", topo)
    assert hf.num_steps == 1 + 3 * 16                    # intra-machine step, 3 rounds of 4 x 4
    assert not Schedule.plan("shift", topo).verify(topo)["host_single_port"]


@pytest.mark.parametrize("p", [2, 3, 5, 8, 9, 12])
@pytest.mark.parametrize("k", [1, 2, 5])
def test_sync_shuffle_instants(p, k):
    """Instant s: every rank sends segment s to each other rank, in the
    order r+1, r+2, ...: p-1 distinct targets, and no two ranks target one
    rank at the same position of the order."""
    topo = Topology.synthetic(str(p))
    sched = check_plan("sync-shuffle", topo, segments=k)
    assert sched.num_steps == k
    for ph in sched.phases():
        for r in range(p):
            assert [d for s, d in ph if s == r] == [(r + i) % p for i in range(1, p)]


@pytest.mark.parametrize("p", [2, 3, 6, 7, 16])
@pytest.mark.parametrize("w", [1, 3, 5])
def test_group_shuffle_rounds(p, w):
    """ceil(c/w) rounds of k instants (c colouring rounds); within a round a
    rank sends to and receives from the same <= w partners."""
    topo = Topology.synthetic(str(p))
    k = 2
    sched = check_plan("group-shuffle", topo, segments=k, fanout=w)
    c = p - 1 if p % 2 == 0 else p
    assert sched.num_steps == -(-c // w) * k
    for ph in sched.phases():
        for r in range(p):
            out = [d for s, d in ph if s == r]
            into = [s for s, d in ph if d == r]
            assert len(out) == len(set(out)) <= w
            assert sorted(out) == sorted(into)


@pytest.mark.parametrize("p", range(2, 14))
def test_shift_and_pairwise_rounds(p):
    topo = Topology.synthetic(str(p))
    shift = check_plan("shift", topo)
    assert shift.num_steps == p - 1
    assert all(sorted(ph) == sorted((r, (r + i + 1) % p) for r in range(p)) for i, ph in enumerate(shift.phases()))
    pw = check_plan("pairwise", topo)
    assert pw.num_steps == (p if p % 2 else p - 1)
    for ph in pw.phases():            # pairs swap: r -> q in a step means q -> r too
        assert set(ph) == {(d, s) for s, d in ph}


def two_clusters(n1: int, n2: int) -> Topology:
    return Topology.parse(f"""bandwidth: 100Mbit
switches:
  - name: a
    machines: [{", ".join(f"a{i}" for i in range(n1))}]
    switches: [b]
  - name: b
    machines: [{", ".join(f"b{i}" for i in range(n2))}]
    uplink: {{bandwidth: 10Mbit}}
""", "yaml", "two.yaml")


@pytest.mark.parametrize("n1, n2", [(1, 1), (3, 7), (4, 4), (2, 5), (5, 2), (6, 6), (1, 6)])
def test_local_group_two_clusters(n1, n2):
    """Steffenel's LG: every inter-cluster block crosses the slow link once,
    after max(n1, n2) - 1 local steps, in ceil(max/min) steps; 2 max(n1, n2)
    messages when min divides max (their section VI.C), else the last,
    partial group sends min(n1, n2) messages back (our departure: the
    paper's agent does not exist there)."""
    topo = two_clusters(n1, n2)
    assert topo.clusters() == [0] * n1 + [1] * n2
    sched = check_plan("local-group", topo)
    lo, hi = min(n1, n2), max(n1, n2)
    assert sched.verify(topo)["bottleneck_once"]
    side = [0] * n1 + [1] * n2
    t = sched.triples()
    inter = [(t[i], t[i + 1], t[i + 2]) for i in range(0, len(t), 3) if side[t[i + 1]] != side[t[i + 2]]]
    assert len(inter) == hi + lo * -(-hi // lo)
    if hi % lo == 0:
        assert len(inter) == 2 * hi
    assert sched.num_steps == hi - 1 + -(-hi // lo)
    assert {s for s, _, _ in inter} == set(range(hi - 1, sched.num_steps))


@pytest.mark.parametrize("spec", ["chain:3,3,3", "chain:2,5,3,4", "star:2,3,4,5", "tree:3,2,2"])
def test_local_group_k_clusters(spec):
    """Beyond the paper: k clusters paired by a 1-factorisation; the
    bottleneck links still carry each crossing block once."""
    topo = Topology.synthetic(spec)
    sched = check_plan("local-group", topo)
    assert len(set(topo.clusters())) >= 2
    assert sched.verify(topo)["bottleneck_once"]


def test_local_group_given_clusters():
    topo = Topology.synthetic("8")
    sched = check_plan("local-group", topo, clusters=[0, 0, 0, 1, 1, 1, 1, 1])
    assert sched.num_steps == 4 + 2                    # shift among 5, then ceil(5/3) steps
    assert not Schedule.plan("bruck", Topology.synthetic("chain:4,4")).verify(
        Topology.synthetic("chain:4,4"))["bottleneck_once"]
