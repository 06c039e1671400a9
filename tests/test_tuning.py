"""Issue 17: the contention-signature model on a tree (core model.c), the
fit, predictions, tuning files (core tuning.c) and the MPI's own tuning
files, each against something that could fail."""

from __future__ import annotations

import csv as csvlib
import json
import math
import os
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from topocoll._core import (Network, Topology, TopocollError, Tuning, default_signature, model_features, model_time,
                            plan_segments, untuned_auto)
from topocoll.bench import native_tuning
from topocoll.model import Model, fit_signature, pingpong_classes

from .conftest import ALGORITHMS, ROOT
from .mpi_util import available, pmpi_lib, program, run

CLI = [sys.executable, "-m", "topocoll.cli"]
TOPOLOGIES = ["8", "chain:4,4,4", "chain:8,8", "tree:2,3,2"]


def cli(*args, **kw):
    return subprocess.run(CLI + [str(a) for a in args], capture_output=True, text=True, **kw)


# ---- the model's features --------------------------------------------------------------

@pytest.mark.parametrize("spec", TOPOLOGIES)
@pytest.mark.parametrize("algorithm", ALGORITHMS + ["native"])
def test_every_algorithm_has_a_prediction(spec, algorithm):
    """Every algorithm of the registry (and the MPI's own) gets finite,
    positive features on every topology, and its time grows with the block."""
    topo = Topology.synthetic(spec)
    f = model_features(algorithm, topo, Network())
    assert f["startup"] > 0 and f["byte_time"] > 0 and f["messages"] >= 1 and f["steps"] >= 1
    sig = default_signature(algorithm)
    times = [model_time(f, sig, m) for m in (8, 1024, 65536, 1 << 20)]
    assert all(math.isfinite(t) and t > 0 for t in times) and times == sorted(times)


def test_one_switch_is_steffenel_eq5():
    """On one switch the MPI's own is the paper's eq. 5 exactly:
    (n-1)(alpha + m beta gamma + [m >= M] delta)."""
    n, alpha, rate = 9, 70e-6, 1e8
    topo = Topology.synthetic(str(n))
    f = model_features("native", topo, Network({2: alpha}, default_rate=rate))
    sig = {"gamma": 1.7, "delta": 3e-3, "threshold": 4096}
    beta = 8 / rate
    for m in (100, 4096, 65536):
        want = (n - 1) * (alpha + m * beta * sig["gamma"] + (sig["delta"] if m >= 4096 else 0))
        assert model_time(f, sig, m) == pytest.approx(want, rel=1e-12)


def test_faraj_yuan_is_phases_on_the_bottleneck():
    """faraj-yuan: as many steps as the bottleneck's load, and its byte time
    is the bound's (load x 8 / rate): the schedule is optimal."""
    topo = Topology.synthetic("chain:4,4,4")
    f = model_features("faraj-yuan", topo, Network(default_rate=1e8))
    assert f["steps"] == topo.alltoall_load == 32
    assert f["byte_time"] == pytest.approx(32 * 8 / 1e8)
    # the MPI's own is charged the same bound: only gamma and the start-ups differ
    assert model_features("native", topo, Network(default_rate=1e8))["byte_time"] == pytest.approx(f["byte_time"])


def test_measured_alpha_replaces_the_topology_estimate():
    topo = Topology.synthetic("chain:2,2")
    est = model_features("ring", topo, Network(overhead=1e-4, default_latency=1e-5))
    meas = model_features("ring", topo, Network({2: 1e-6, 3: 2e-6}, overhead=1e-4, default_latency=1e-5))
    assert meas["startup"] < est["startup"] / 10
    assert topo.path_class(0, 1) == 2 and topo.path_class(0, 2) == 3 and topo.path_class(1, 1) == 0


def test_segments_follow_the_pmpi_rule():
    assert plan_segments(1, 16384, 8) == 1
    assert plan_segments(16385, 16384, 8) == 2
    assert plan_segments(1 << 40, 1, 8) == 256
    assert plan_segments(1 << 30, 1, 65536) == 1     # the planner's message limit


# ---- the fit -----------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(gamma=st.floats(0.5, 5), delta=st.floats(0, 0.02), threshold=st.sampled_from([1024, 8192, math.inf]),
       spec=st.sampled_from(["6", "chain:3,3", "chain:2,2,2"]))
def test_fit_recovers_a_signature(gamma, delta, threshold, spec):
    """Times made by the model with a known signature give it back (GLS on
    at least four sizes), with zero residuals."""
    topo = Topology.synthetic(spec)
    net = Network({2: 50e-6, 3: 60e-6, 4: 70e-6})
    f = model_features("native", topo, net)
    sig = {"gamma": gamma, "delta": delta if not math.isinf(threshold) else 0.0, "threshold": threshold}
    sizes = [64, 1024, 8192, 65536, 262144]
    fit = fit_signature([(m, model_time(f, sig, m)) for m in sizes], lambda m: f)
    assert fit["gamma"] == pytest.approx(gamma, rel=1e-6)
    assert max(abs(p["error"]) for p in fit["points"]) < 1e-6


def test_fit_needs_four_sizes():
    f = {"startup": 1e-3, "byte_time": 1e-6, "messages": 4.0, "steps": 4}
    with pytest.raises(ValueError, match="at least 4"):
        fit_signature([(1, 1.0), (2, 2.0), (3, 3.0)], lambda m: f)


def test_pingpong_classes_fit_alpha_and_beta():
    topo = Topology.synthetic("chain:2,2")
    res = []
    for peer, alpha in ((1, 50e-6), (2, 80e-6), (3, 80e-6)):
        for m in (0, 1024, 65536, 262144):
            res.append((peer, m, alpha + m * 8e-8))
    classes = pingpong_classes(topo, res, [0, 1, 2, 3])
    assert [c["links"] for c in classes] == [2, 3]
    assert classes[0]["alpha"] == pytest.approx(50e-6) and classes[1]["alpha"] == pytest.approx(80e-6)
    assert classes[0]["beta"] == pytest.approx(8e-8) and classes[1]["peers"] == [2, 3]


# ---- tuning files (the core's reader) ----------------------------------------------------

def tuning_doc(rules, machines=None, **extra):
    return {"format": "topocoll-tuning/1", "topology": "chain:2,2", "machines": machines or ["n0", "n1", "n2", "n3"],
            "rules": rules, **extra}


def write(tmp_path, doc, name="t.json"):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=1))
    return p


GOOD = [{"ranks": 4, "min_block": 0, "max_block": 4095, "algorithm": "native"},
        {"ranks": 4, "min_block": 4096, "algorithm": "sync-shuffle", "segment_size": 8192}]


def test_tuning_selects_by_ranks_and_block(tmp_path):
    t = Tuning.load(write(tmp_path, tuning_doc(GOOD, measured={"8": {"native": 1e-3}})))
    assert t.machines == ["n0", "n1", "n2", "n3"] and t.topology == "chain:2,2"
    assert t.select(4, 0)["algorithm"] == "native"
    assert t.select(4, 4095)["algorithm"] == "native"
    chosen = t.select(4, 1 << 30)
    assert chosen["algorithm"] == "sync-shuffle" and chosen["segment_size"] == 8192 and chosen["line"] > 1
    with pytest.raises(TopocollError, match=r"tuned for communicators of 4 ranks, not 5"):
        t.select(5, 100)
    t.check_topology(Topology.synthetic("chain:2,2"))
    with pytest.raises(TopocollError, match="tuned on topology 'chain:2,2', which has no machine 'n4'"):
        t.check_topology(Topology.synthetic("chain:3,3"))
    with pytest.raises(TopocollError, match="of 4 machines, not on"):
        t.check_topology(Topology.synthetic("3"))


@pytest.mark.parametrize("doc, says", [
    ("{", r"t\.json:1:2: not JSON"),
    ('{"format": "other", "machines": ["a"], "rules": []}', "not a tuning file"),
    (tuning_doc([{"ranks": 4, "algorithm": "warp-speed"}]), r"t\.json:\d+:\d+: rule 0: unknown algorithm 'warp-speed'"),
    (tuning_doc([{"ranks": 4, "algoritm": "native"}]), r"rule 0: unknown key \"algoritm\""),
    (tuning_doc([{"ranks": 4}]), "needs \"ranks\" and \"algorithm\""),
    (tuning_doc([{"ranks": 4, "min_block": 5, "algorithm": "native"}]), r"no rule covers blocks below 5 bytes"),
    (tuning_doc([{"ranks": 4, "max_block": 9, "algorithm": "native"}]), r"no rule covers blocks above 9 bytes"),
    (tuning_doc([GOOD[0], {**GOOD[1], "min_block": 5000}]), r"no rule covers blocks of 4096 to 4999 bytes"),
    (tuning_doc([GOOD[0], {**GOOD[1], "min_block": 100}]), r"overlaps the rule at line"),
    (tuning_doc([{"ranks": 4, "algorithm": "native", "segment_size": 0}]), r"\"segment_size\": 0 is out of range"),
    (tuning_doc([{"ranks": 4, "min_block": 1.5, "algorithm": "native"}]), "expected a whole number"),
    (tuning_doc([{"ranks": True, "algorithm": "native"}]), "expected a number"),
    (tuning_doc([]), "no \"rules\""),
    ({**tuning_doc(GOOD), "machines": []}, "no \"machines\""),
])
def test_bad_tuning_files_are_refused_with_the_place(tmp_path, doc, says):
    with pytest.raises(TopocollError, match=says):
        Tuning.load(write(tmp_path, doc))


# ---- the CLI -----------------------------------------------------------------------------

def test_model_predict_names_the_best_and_untuned_auto():
    r = cli("model", "predict", "chain:4,4,4", "--size", "128K", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out["seconds"]) == set(ALGORITHMS) | {"native"}
    assert out["best"] == min(out["seconds"], key=out["seconds"].get)
    assert out["auto_untuned"] == untuned_auto(Topology.synthetic("chain:4,4,4"), 128 << 10)[0]
    small = json.loads(cli("model", "predict", "chain:4,4,4", "--size", "8", "--json").stdout)
    assert small["auto_untuned"] == "native" and out["auto_untuned"] == "faraj-yuan"


def test_untuned_auto_never_picks_a_schedule_the_model_calls_slower():
    for spec in ("chain:4,4,4", "chain:8,8", "16", "tree:2,2,2"):
        topo = Topology.synthetic(spec)
        for m in (8, 64, 1024, 8192, 32768, 131072, 1 << 20):
            pick, t = untuned_auto(topo, m)
            assert pick == ("faraj-yuan" if t["faraj-yuan"] < t["native"] else "native")


def fake_csv(tmp_path, spec="chain:2,2", sigs=None):
    """A bench CSV made by the model with known signatures (plus 1 % noise
    that alternates, so the medians are the model's)."""
    topo = Topology.synthetic(spec)
    net = Network()
    lines = ["backend,topology,algorithm,ranks,msize_bytes,repetition,seconds,peak_bps,settings"]
    sigs = sigs or {"native": {"gamma": 1.4, "delta": 0.0, "threshold": math.inf},
                    "faraj-yuan": {"gamma": 1.02, "delta": 0.0, "threshold": math.inf}}
    for a, sig in sigs.items():
        f = model_features(a, topo, net)
        for m in (1024, 8192, 32768, 131072, 262144):
            for rep, k in enumerate((1.0, 1.01, 0.99)):
                lines.append(f'testbed,"{spec}",{a},{topo.num_machines},{m},{rep},{model_time(f, sig, m) * k:.9f},0,'
                             f"rate_bps=100000000")
    p = tmp_path / "bench.csv"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_model_fit_writes_a_model_predict_reads(tmp_path):
    csv = fake_csv(tmp_path)
    out, png = tmp_path / "m.json", tmp_path / "fit.png"
    r = cli("model", "fit", csv, "-o", out, "--plot", png)
    assert r.returncode == 0, r.stderr
    assert r.stdout.index("native") < r.stdout.index("faraj-yuan")      # native first, as the paper
    doc = json.loads(out.read_text())
    assert doc["algorithms"]["native"]["gamma"] == pytest.approx(1.4, rel=1e-3)
    assert png.stat().st_size > 1000
    model = Model.load(out)
    assert model.signature("native")[1] and not model.signature("bruck")[1]
    p = json.loads(cli("model", "predict", "chain:2,2", "--size", "128K", "--model", out, "--json").stdout)
    assert p["seconds"]["native"] / p["seconds"]["faraj-yuan"] > 1.2
    # another process count of the same cluster is fine; another cluster is refused
    assert cli("model", "predict", "chain:1,1", "--size", "1K", "--model", out).returncode == 0
    r = cli("model", "predict", "chain:4,4", "--size", "1K", "--model", out)
    assert r.returncode == 2 and "has no machine 'n4'" in r.stderr


@pytest.mark.parametrize("change, says", [
    (lambda d: d.update(format="x"), "not a model file"),
    (lambda d: d["algorithms"]["native"].update(gamma=-1), "\"gamma\" must be a number"),
    (lambda d: d["algorithms"].update({"teleport": {"gamma": 1, "delta": 0}}), "unknown algorithm 'teleport'"),
    (lambda d: d["network"].update(alpha={"two": 1e-5}), "path classes"),
    (lambda d: d.pop("machines"), "\"machines\" must list"),
])
def test_bad_model_files_are_refused(tmp_path, change, says):
    out = tmp_path / "m.json"
    assert cli("model", "fit", fake_csv(tmp_path), "-o", out).returncode == 0
    doc = json.loads(out.read_text())
    change(doc)
    out.write_text(json.dumps(doc))
    r = cli("model", "predict", "chain:2,2", "--size", "1K", "--model", out)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr


def test_model_fit_refuses_bad_csvs(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    r = cli("model", "fit", p)
    assert r.returncode == 2 and "not a bench CSV" in r.stderr
    csv = fake_csv(tmp_path).read_text().splitlines()
    p.write_text("\n".join(csv[:2] + [csv[2].replace('"chain:2,2",native,4', '"chain:2,2",native,5')]) + "\n")
    r = cli("model", "fit", p)
    assert r.returncode == 2 and "process counts" in r.stderr


def test_tune_and_bench_auto_on_simgrid(tmp_path):
    """tune measures, writes a decision file the core reads back; bench times
    auto with it (TOPOCOLL_TUNING) and without (auto:untuned)."""
    out = tmp_path / "t.json"
    r = cli("tune", "chain:2,2", "--backend", "simgrid", "--sizes", "8,1K,64K,256K", "--algorithms",
            "faraj-yuan,bruck", "--repetitions", "1", "--warmup", "0", "-o", out, "--quiet",
            "--decision-plot", tmp_path / "d.png")
    assert r.returncode == 0, r.stderr[-2000:]
    t = Tuning.load(out)
    doc = json.loads(out.read_text())
    from topocoll.commands.tune import TIE
    for m in (8, 1024, 65536, 262144):     # the measured best (or one tied with it) wins at each measured size
        times = doc["measured"][{8: "8", 1024: "1K", 65536: "64K", 262144: "256K"}[m]]
        assert times[t.select(4, m)["algorithm"]] <= min(times.values()) * (1 + TIE)
    r = cli("bench", "chain:2,2", "--backend", "simgrid", "--algorithms", "auto,auto:untuned", "--sizes", "8,256K",
            "--repetitions", "1", "--tuning", out, "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    assert re.search(r"auto\s+\d", r.stdout) and re.search(r"auto:untuned\s+\d", r.stdout)
    r = cli("bench", "chain:3,3", "--backend", "simgrid", "--algorithms", "auto", "--sizes", "8", "--tuning", out)
    assert r.returncode == 2 and "tuned on topology 'chain:2,2'" in r.stderr


# ---- the PMPI library's auto ---------------------------------------------------------------

def pmpi_env(n, **kw):
    return {"LD_PRELOAD": str(pmpi_lib("openmpi")), "TOPOCOLL_TOPOLOGY": "chain:2,2", "TOPOCOLL_STATS": "1",
            "TOPOCOLL_RANK_MAP": ",".join(f"n{i}" for i in range(n)), **kw}


def stats(proc):
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"topocoll: alltoall (\S+) calls=(\d+)", proc.stderr)}


@pytest.mark.mpi
def test_pmpi_auto_follows_the_tuning_file(tmp_path):
    rules = [{"ranks": 4, "min_block": 0, "max_block": 399, "algorithm": "native"},
             {"ranks": 4, "min_block": 400, "max_block": 100000, "algorithm": "bruck"},
             {"ranks": 4, "min_block": 100001, "algorithm": "faraj-yuan"}]
    f = write(tmp_path, tuning_doc(rules))
    proc = run("openmpi", 4, [program("alltoall_check", "openmpi"), "1", "100", "30000"],
               pmpi_env(4, TOPOCOLL_TUNING=str(f), TOPOCOLL_VERBOSE="1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "errors=0" in proc.stdout
    s = stats(proc)
    assert s.get("native", 0) > 0 and s.get("bruck", 0) > 0 and s.get("faraj-yuan", 0) > 0, proc.stderr
    assert re.search(rf"bruck for blocks of \d+ bytes \(auto: TOPOCOLL_TUNING {re.escape(str(f))}:\d+\)", proc.stderr)


@pytest.mark.mpi
def test_pmpi_untuned_auto_says_the_model_chose(tmp_path):
    proc = run("openmpi", 4, [program("alltoall_check", "openmpi"), "1", "1", "100000"],
               pmpi_env(4, TOPOCOLL_VERBOSE="1", TOPOCOLL_BANDWIDTH="100Mbit"))
    assert proc.returncode == 0 and "errors=0" in proc.stdout, proc.stderr[-2000:]
    assert re.search(r"native for blocks of \d+ bytes \(auto: model \(no TOPOCOLL_TUNING\): native predicted", proc.stderr)
    assert "faraj-yuan (one rank per machine) for blocks of 400000 bytes (auto: model" in proc.stderr
    s = stats(proc)
    assert s.get("native", 0) > 0 and s.get("faraj-yuan", 0) > 0


@pytest.mark.mpi
@pytest.mark.parametrize("doc, n, says", [
    ('{"format": "topocoll-tuning/1",\n "rules": [}', 4, r"TOPOCOLL_TUNING: .*t\.json:2:\d+: rule 0: expected"),
    (tuning_doc([{"ranks": 4, "algorithm": "nope"}]), 4, r"TOPOCOLL_TUNING: .*t\.json:\d+:\d+: rule 0: unknown algorithm"),
    (tuning_doc(GOOD, machines=["a", "b", "c", "d"]), 4, "TOPOCOLL_TUNING: .*has no machine 'n0'"),
    (tuning_doc(GOOD), 3, "TOPOCOLL_TUNING: .*tuned for communicators of 4 ranks, not 3"),
])
def test_pmpi_refuses_a_bad_tuning_file(tmp_path, doc, n, says):
    f = write(tmp_path, doc)
    proc = run("openmpi", n, [program("alltoall_check", "openmpi"), "1", "100"],
               pmpi_env(n, TOPOCOLL_TUNING=str(f)))
    assert proc.returncode != 0 and re.search(says, proc.stderr), proc.stderr[-1500:]


# ---- the MPI's own tuning files ------------------------------------------------------------

def test_openmpi_rules_text():
    text = native_tuning.openmpi_rules([(0, "native:linear"), (1000, "native:pairwise"), (5000, "native")], 12)
    assert text.split() == ["1", "3", "2", "12", "3", "0", "1", "0", "0", "12000", "2", "0", "0",
                            "60000", "0", "0", "0", "13", "1", "0", "0", "0", "0"]
    assert native_tuning.ranges({8: "a", 64: "a", 1024: "b", 8192: "b"}) == [(0, "a"), (256, "b")]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["native", "a", "b", "c"]), st.floats(0.5, 2.0), min_size=1),
                min_size=1, max_size=6))
def test_winners_change_nothing_that_is_not_measurably_better(table):
    """The preferred algorithm (the MPI's own decision in an export) stays
    wherever it is within the tie of the fastest; any other choice is within
    the tie of the fastest, and where it is not the fastest it is the
    previous size's (fewer switches)."""
    from topocoll.bench.harness import Result, Sample, winners
    tie = 0.02
    sizes = [8 << i for i in range(len(table))]
    res = Result("x", None, 4, 1.0, {}, [Sample(a, m, 0, t) for m, row in zip(sizes, table) for a, t in row.items()])
    best = winners(res, ["native", "a", "b", "c"], sizes, tie, prefer="native")
    previous = None
    for m, row in zip(sizes, table):
        fastest = min(row.values())
        assert row[best[m]] <= fastest * (1 + tie)
        if "native" in row and row["native"] <= fastest * (1 + tie):
            assert best[m] == "native"
        elif row[best[m]] > fastest:
            assert best[m] == previous
        previous = best[m]


SPY = ROOT / "core" / "tests" / "mpi" / "ompi_alltoall_spy.c"


@pytest.fixture(scope="module")
def spy(tmp_path_factory):
    so = tmp_path_factory.mktemp("spy") / "spy.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(so), str(SPY), "-ldl"], check=True)
    return so


def ompi_ran(rules, spy, sizes, np=4):
    cmd = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(np), "-x", f"LD_PRELOAD={spy}",
           "--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", "coll_tuned_dynamic_rules_filename", str(rules),
           str(program("alltoall_bench", "openmpi")), "--repetitions", "1"] + [str(s) for s in sizes]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert all(l.split()[2] == "ok" for l in proc.stdout.splitlines() if l.startswith("check"))
    return set(re.findall(r"spy: ompi_coll_base_alltoall_intra_(\w+)", proc.stderr))


@pytest.mark.mpi
@pytest.mark.skipif(not available("openmpi"), reason="Open MPI is part of the suite's set-up")
def test_openmpi_loads_the_exported_rules_and_runs_what_they_name(tmp_path, spy):
    f = tmp_path / "r.rules"
    f.write_text(native_tuning.openmpi_rules([(0, "native:linear"), (1000, "native:pairwise"),
                                              (20000, "native:linear_sync")], 4))
    assert ompi_ran(f, spy, [8]) == {"basic_linear"}
    assert ompi_ran(f, spy, [2000]) == {"pairwise"}
    assert ompi_ran(f, spy, [8, 2000, 30000]) == {"basic_linear", "pairwise", "linear_sync"}
    # a range left to the MPI's own decision (algorithm 0) runs that decision (linear_sync at 4-6 ranks)
    f.write_text(native_tuning.openmpi_rules([(0, "native:pairwise"), (1000, "native")], 4))
    assert ompi_ran(f, spy, [8]) == {"pairwise"}
    assert ompi_ran(f, spy, [2000]) == {"linear_sync"}
    # another communicator size falls back to Open MPI's own fixed decision (linear_sync at 4-6 ranks)
    assert ompi_ran(f, spy, [8], np=5) == {"linear_sync"}
    # Open MPI ignores a malformed file without a word: its fixed decision runs instead
    f.write_text("1\n3\n1\n4\nxx\n")
    assert ompi_ran(f, spy, [8]) == {"linear_sync"}


def mpich_check(tree, tmp_path, np=4):
    f = tmp_path / "m.json"
    f.write_text(json.dumps(tree))
    return run("mpich", np, [program("alltoall_check", "mpich"), "1", "100"],
               {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(f)}, timeout=120)


@pytest.mark.mpi
@pytest.mark.skipif(not available("mpich"), reason="MPICH is part of the suite's set-up")
def test_mpich_loads_the_exported_tree_and_runs_what_it_names(tmp_path):
    default = native_tuning.mpich_default_tree()
    good = native_tuning.mpich_tree([(0, "native:brucks"), (1000, "native:scattered"), (20000, "native:pairwise")],
                                    4, default)
    proc = mpich_check(good, tmp_path)
    assert proc.returncode == 0 and "errors=0" in proc.stdout, proc.stderr[-1500:]
    # a range left to MPICH's own decision holds MPICH's own subtree there, and MPICH reads it
    # (alltoall_check's blocks are below 1000 bytes)
    own = native_tuning.mpich_tree([(0, "native"), (1000, "native:scattered")], 4, default)
    branch = own["collective=alltoall"]["comm_type=intra"]["is_sendbuf_inplace=no"]
    assert branch["comm_size<=4"]["avg_msg_size<=999"] == branch["comm_size=any"]
    proc = mpich_check(own, tmp_path)
    assert proc.returncode == 0 and "errors=0" in proc.stdout, proc.stderr[-1500:]
    # the file is read and its choice runs: an in-place-only algorithm named for ordinary calls
    # (MPI_Alltoall_intra_pairwise_sendrecv_replace ignores sendbuf) delivers wrong blocks
    wrong = native_tuning.mpich_tree([(0, "native:brucks")], 4, default)
    wrong["collective=alltoall"]["comm_type=intra"]["is_sendbuf_inplace=no"]["comm_size<=4"] = {
        "algorithm=MPIR_Alltoall_intra_pairwise_sendrecv_replace": {}}
    proc = mpich_check(wrong, tmp_path)
    assert re.search(r"errors=[1-9]", proc.stdout), proc.stdout[-500:]
    # another communicator size keeps MPICH's own choice (correct data)
    proc = mpich_check(wrong, tmp_path, np=5)
    assert proc.returncode == 0 and "errors=0" in proc.stdout
    # a malformed tree is reported and stops the job
    proc = mpich_check({"collective=alltoall": {"comm_typo=intra": {"algorithm=MPIR_Alltoall_intra_brucks": {}}}},
                       tmp_path)
    assert proc.returncode != 0 and "unknown key" in proc.stderr + proc.stdout


# ---- the user's own launcher ---------------------------------------------------------------

@pytest.mark.mpi
@pytest.mark.parametrize("mpi, launcher, variant", [
    ("openmpi", ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", "4"], "native:pairwise"),
    ("mpich", ["mpiexec.mpich", "-n", "4"], "native:brucks"),
])
def test_bench_and_pingpong_through_the_users_launcher(tmp_path, mpi, launcher, variant):
    env = dict(os.environ, TOPOCOLL_RANK_MAP="n0,n1,n2,n3")
    csv = tmp_path / "b.csv"
    r = cli("bench", "chain:2,2", "--backend", "mpirun", "--algorithms", f"native,faraj-yuan,auto:untuned,{variant}",
            "--sizes", "1K", "--repetitions", "2", "--csv", csv, "--quiet", "--", *launcher, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    algs = {row["algorithm"] for row in csvlib.DictReader(csv.open())}
    assert algs == {"native", "faraj-yuan", "auto:untuned", variant}
    r = cli("model", "pingpong", "chain:2,2", "--backend", "mpirun", "--sizes", "0,64K", "--repetitions", "3",
            "-o", tmp_path / "p.json", "--", *launcher, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    classes = json.loads((tmp_path / "p.json").read_text())["classes"]
    assert [c["links"] for c in classes] == [2, 3] and all(c["alpha"] > 0 for c in classes)


def test_mpirun_backend_needs_a_launcher():
    r = cli("bench", "4", "--backend", "mpirun", "--sizes", "1K")
    assert r.returncode == 2 and "needs the launcher after '--'" in r.stderr
    r = cli("bench", "4", "--backend", "simgrid", "--sizes", "1K", "--", "mpirun")
    assert r.returncode == 2 and "a launcher goes with --backend mpirun" in r.stderr
    r = cli("bench", "4", "--backend", "simgrid", "--algorithms", "native:linear", "--sizes", "8", "--quiet")
    assert r.returncode == 2 and "testbed or mpirun" in r.stderr
