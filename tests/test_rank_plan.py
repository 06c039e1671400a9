"""Per-rank planning (tc_alltoall_plan_rank): every rank's part, planned
without the whole, joins into the generator's schedule, which the verifier
accepts (complete, contention-free, optimal) and whose syncs order every
shared link without a deadlock; the CLI's `plan --rank`; the PMPI library's
TOPOCOLL_PLAN."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topocoll import Schedule, Topology, TopocollError
from topocoll.common import load_topology

from .conftest import EXAMPLES
from .mpi_util import MPIS, pmpi_lib, program, run
from .test_alltoall_plans import EDGE_CASES
from .trees import trees

CLI = [sys.executable, "-m", "topocoll.cli"]
PER_RANK = ["faraj-yuan"]


def cli(*args, **kw):
    return subprocess.run(CLI + [str(a) for a in args], capture_output=True, text=True, **kw)


def check_parts(topo: Topology, algorithm: str = "faraj-yuan", depth: int = 1) -> Schedule:
    """Every rank's part, joined by the core (which checks that they agree),
    against the verifiers and against the whole schedule the generator plans."""
    parts = [Schedule.plan_rank(algorithm, topo, r, depth) for r in range(topo.num_machines)]
    for r, part in enumerate(parts):
        assert part.part_rank == r and part.num_phases == topo.alltoall_load
        # a part holds the rank's messages, and of others only its syncs' other ends
        syncs, msgs = part.syncs(), part.messages()
        ends = {i for pair in syncs for i in pair}
        for i, (_, src, dst) in enumerate(msgs):
            assert r in (src, dst) or i in ends
        for a, b in syncs:
            assert r in (msgs[a][1], msgs[b][1])
    whole = Schedule.from_parts(parts)
    report = whole.verify(topo)
    assert report["complete"] and report["contention_free"] and report["optimal"], report["problem"]
    checked = whole.verify_syncs(topo, depth)
    assert checked["ordered"] and checked["acyclic"], checked["problem"]
    # the parts are the generator's phases exactly (the per-rank form keeps its order)
    assert sorted(whole.messages()) == sorted(Schedule.plan(algorithm, topo).messages())
    return whole


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("spec", EDGE_CASES)
def test_parts_make_the_whole_edge_cases(spec, depth):
    check_parts(Topology.synthetic(spec), depth=depth)


@pytest.mark.parametrize("example", ["figure1.yaml", "a-single-switch.conf", "b-star.conf", "c-chain.conf",
                                     "smp-4x4.yaml"])
def test_parts_make_the_whole_examples(example):
    check_parts(Topology.load(EXAMPLES / example))


@pytest.mark.parametrize("spec", ["tree:32,32", "tree:8,8,16", "star:1,511,512"])
def test_parts_make_the_whole_at_1024_ranks(spec):
    topo = load_topology(spec)
    assert topo.num_machines == 1024
    check_parts(topo)


@pytest.mark.parametrize("spec, per", [("chain:2,3", 2), ("chain:4,4,4", 3), ("tree:2,3", 4)])
def test_parts_with_several_ranks_a_machine(spec, per):
    check_parts(Topology.synthetic(spec).expand(per))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(max_machines=80, max_switches=12), depth=st.sampled_from([1, 1, 2]))
def test_parts_make_the_whole_on_random_trees(tree, depth):
    check_parts(Topology.parse(tree.yaml(), "yaml", "random.yaml"), depth=depth)


def test_fewer_syncs_than_candidates_and_disagreeing_parts_refused():
    topo = Topology.synthetic("chain:4,4,4")
    parts = [Schedule.plan_rank("faraj-yuan", topo, r) for r in range(topo.num_machines)]
    whole = Schedule.from_parts(parts)
    # the highest-shared-link rule keeps fewer syncs than the consecutive pairs it starts from
    plain = Schedule.plan_with("faraj-yuan", topo, phase_order="paper")
    assert 0 < len(whole.syncs()) < plain.add_syncs(topo)["candidates"]
    # a part that lost its syncs no longer agrees with the others
    parts[5].set_syncs([])
    with pytest.raises(TopocollError, match=r"sync .* is in rank \d+'s part but not in rank 5's"):
        Schedule.from_parts(parts)
    # a part in the wrong place, a part of another schedule
    with pytest.raises(TopocollError, match="entry 0 is not rank 0's part"):
        Schedule.from_parts(parts[1:] + parts[:1])
    other = Schedule.plan_rank("faraj-yuan", Topology.synthetic("chain:6,6"), 0)
    with pytest.raises(TopocollError, match="entry 1 is not rank 1's part of the 12-rank schedule of 36 phases"):
        Schedule.from_parts([other] + parts[1:])


def test_refusals():
    topo = Topology.synthetic("chain:2,2")
    with pytest.raises(TopocollError, match="rank 4 is not one of the topology's 4 ranks"):
        Schedule.plan_rank("faraj-yuan", topo, 4)
    with pytest.raises(TopocollError, match="no per-rank form .*faraj-yuan"):
        Schedule.plan_rank("bruck", topo, 0)
    with pytest.raises(TopocollError, match="unknown all-to-all algorithm"):
        Schedule.plan_rank("nope", topo, 0)


# ---- topocoll plan --rank ------------------------------------------------------------------

def test_cli_plan_rank(tmp_path):
    out = tmp_path / "p.json"
    r = cli("plan", "chain:4,4,4", "--rank", "5", "--syncs", "-o", out)
    assert r.returncode == 0 and "rank 5's part" in r.stderr, r.stderr
    doc = json.loads(out.read_text())
    assert doc["format"] == "topocoll-schedule/1" and len(doc["machines"]) == 12
    assert len(doc["phases"]) == 32            # every phase of the whole, empty ones too
    msgs = [tuple(m) for ph in doc["phases"] for m in ph]
    assert all(5 in m for m in msgs) and len(msgs) == 22
    assert sum(m[0] == 5 for m in msgs) == 11 and sum(m[1] == 5 for m in msgs) == 11
    assert doc["syncs"] and all(5 in (s["from"], s["to"]) for s in doc["syncs"])
    # the same messages, in the same phases, as the whole schedule has for rank 5
    whole = Schedule.plan("faraj-yuan", Topology.synthetic("chain:4,4,4"))
    assert sorted((p, s, d) for p, ph in enumerate(doc["phases"]) for s, d in ph) == \
        sorted(m for m in whole.messages() if 5 in m[1:])
    r = cli("plan", "chain:4,4,4", "--rank", "5")
    assert r.returncode == 0 and "syncs" not in json.loads(r.stdout)
    r = cli("plan", "tree:16,16", "--rank", "3", "--json")
    s = json.loads(r.stdout)
    assert s["sends"] == s["receives"] == 255 and s["phases"] == s["load"] == 3840
    assert s["seconds"] > 0 and s["peak_bytes"] >= 0 and s["syncs"] > 0


@pytest.mark.parametrize("args, says", [
    (["--rank", "12"], "--rank 12: the topology has ranks 0-11"),
    (["--rank", "-1"], "--rank -1"),
    (["--rank", "0", "-a", "bruck"], "'bruck' has no per-rank form"),
    (["--rank", "0", "--check"], "--check verifies a whole schedule"),
    (["--rank", "0", "--sync-depth", "0"], "--sync-depth 0: at least 1"),
])
def test_cli_plan_rank_refusals(args, says):
    r = cli("plan", "chain:4,4,4", *args)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr


# ---- the PMPI library: TOPOCOLL_PLAN -------------------------------------------------------

def pmpi_env(mpi, np, **kw):
    return {"LD_PRELOAD": str(pmpi_lib(mpi)), "TOPOCOLL_TOPOLOGY": "chain:3,3,2", "TOPOCOLL_STATS": "1",
            "TOPOCOLL_ALLTOALL": "faraj-yuan", "TOPOCOLL_RANK_MAP": ",".join(f"n{i}" for i in range(np)), **kw}


@pytest.mark.mpi
@pytest.mark.parametrize("mpi", MPIS)
def test_pmpi_runs_its_part_every_byte(mpi):
    """Each rank plans only its part; every byte of every block arrives, and
    TOPOCOLL_CHECK joins every rank's part and verifies the whole."""
    env = pmpi_env(mpi, 8, TOPOCOLL_PLAN="rank", TOPOCOLL_CHECK="1", TOPOCOLL_VERBOSE="1")
    proc = run(mpi, 8, [program("alltoall_check", mpi), "0", "1", "1000", "65536"], env)
    assert proc.returncode == 0 and re.search(r"errors=0", proc.stdout), proc.stderr[-2000:]
    assert re.search(r"topocoll: alltoall faraj-yuan calls=[1-9]", proc.stderr), proc.stderr[-2000:]
    assert "faraj-yuan planned per rank (TOPOCOLL_PLAN=rank)" in proc.stderr


@pytest.mark.mpi
def test_pmpi_whole_and_auto_below_the_threshold_plan_whole():
    for plan in ("whole", "auto"):
        proc = run("openmpi", 4, [program("alltoall_check", "openmpi"), "1000"],
                   pmpi_env("openmpi", 4, TOPOCOLL_PLAN=plan, TOPOCOLL_VERBOSE="1"))
        assert proc.returncode == 0 and "errors=0" in proc.stdout, proc.stderr[-2000:]
        assert "planned per rank" not in proc.stderr


@pytest.mark.mpi
def test_pmpi_refuses_an_unknown_plan_word():
    proc = run("openmpi", 2, [program("alltoall_check", "openmpi"), "1"],
               pmpi_env("openmpi", 2, TOPOCOLL_PLAN="parts"))
    assert proc.returncode != 0 and "TOPOCOLL_PLAN" in proc.stderr and "whole" in proc.stderr, proc.stderr[-1500:]


# ---- the model above TC_PLAN_WHOLE_MAX_RANKS: features without the whole schedule ----------

@pytest.mark.parametrize("spec", ["tree:32,32", "tree:8,8,16", "star:1,511,512"])
@pytest.mark.parametrize("latency", [None, 20e-6])
def test_model_estimates_faraj_yuan_without_the_whole(spec, latency):
    """Above 256 ranks auto's model takes faraj-yuan's features from the
    topology (every phase one message a rank and a link): phases, messages
    and byte time exactly those of the planned schedule, start-ups within 20 %."""
    from topocoll._core import Network, model_features, schedule_features
    topo, net = load_topology(spec), Network(default_latency=latency)
    est = model_features("faraj-yuan", topo, net)
    planned = schedule_features(Schedule.plan_for_execution("faraj-yuan", topo), topo, net)
    for k in ("steps", "messages", "byte_time"):
        assert est[k] == pytest.approx(planned[k], rel=1e-9), k
    assert est["startup"] == pytest.approx(planned["startup"], rel=0.2)


def test_model_and_auto_at_16384_ranks_plan_nothing_whole():
    """16,384 ranks are past the whole planner's message limit: the model's
    features and auto's choice come without it."""
    from topocoll._core import Network, model_features, untuned_auto
    topo = load_topology("tree:128,128")
    with pytest.raises(TopocollError, match="limit"):
        Schedule.plan("faraj-yuan", topo)
    f = model_features("faraj-yuan", topo, Network())
    assert f["steps"] == topo.alltoall_load == 128 * (16384 - 128)
    choice, predicted = untuned_auto(topo, 256 * 1024)
    assert choice in ("faraj-yuan", "native") and predicted["faraj-yuan"] > 0
