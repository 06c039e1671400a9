"""``topocoll tune``: measure every algorithm over a range of block sizes and
write the decision file the PMPI library's ``auto`` reads (TOPOCOLL_TUNING),
and, for the MPI alone, its own tuning files (``--export-openmpi``,
``--export-mpich``)."""

from __future__ import annotations

import datetime
import math

from .._core import PARAM_FANOUT, PARAM_SEGMENTS, TopocollError, Tuning, algorithm_index, default, lib, parse_size
from ..bench import harness
from ..common import save_figure, write_json
from . import bench
from .model import fit_model

description = "measure every algorithm over block sizes and write the decision file auto reads (TOPOCOLL_TUNING)"

TUNE_SIZES = "8,64,1K,8K,32K,128K,512K,1M"
TUNING_FORMAT = "topocoll-tuning/1"
TIE = harness.TIE


def setup_parser(p):
    bench.setup_parser(p)
    p.set_defaults(sizes=TUNE_SIZES, algorithms="all", repetitions=5)
    p.add_argument("-o", "--output", default="tuning.json", metavar="TUNING.json",
                   help="the decision file (default %(default)s); TOPOCOLL_TUNING=FILE for the PMPI library")
    p.add_argument("--export-openmpi", metavar="FILE",
                   help="also measure Open MPI's own alltoall algorithms and write a coll_tuned dynamic rules file")
    p.add_argument("--export-mpich", metavar="FILE",
                   help="also measure MPICH's own alltoall algorithms and write a collective selection JSON")
    p.add_argument("--decision-plot", metavar="PNG", help="the decision map: block size x process count -> algorithm")


def run(args):
    if args.collective != "alltoall":
        raise TopocollError("invalid argument", "tune: only --collective alltoall")
    sizes = sorted({parse_size(s) for s in args.sizes.split(",") if s.strip()})
    if len(sizes) < 2:
        raise TopocollError("invalid argument", "tune needs at least two block sizes")
    args.sizes = ",".join(str(s) for s in sizes)
    algs = [a for a in bench.algorithm_list(args.algorithms) if a != "auto"]
    if "native" not in algs:
        algs.append("native")
    args.algorithms = ",".join(algs)
    if args.tuning:
        raise TopocollError("invalid argument", "tune writes a tuning file; --tuning is for 'topocoll bench'")
    result = bench.measure(args)
    rules = decide(result, algs, sizes, args)
    machines = bench.load_topology(args.topology)
    doc = {"format": TUNING_FORMAT, "topology": machines.name, "machines": machines.machines,
           "created": datetime.date.today().isoformat(), "backend": result.backend,
           "settings": {k: str(v) for k, v in result.settings.items()},
           "measured": {harness.format_size(m): {a: result.median(a, m) for a in algs if result.median(a, m)}
                        for m in sizes},
           "rules": rules}
    write_json(doc, args.output, indent=1)
    Tuning.load(args.output).check_topology(machines)   # the core reads back what the PMPI library will
    print(f"\ndecisions for {result.ranks} ranks (TOPOCOLL_TUNING={args.output}):")
    for r in rules:
        hi = "and up" if r.get("max_block") is None else f"to {r['max_block']}"
        print(f"  blocks {r['min_block']} {hi} bytes: {r['algorithm']}")
    print(f"wrote {args.output}")
    for flag, mpi in (("export_openmpi", "openmpi"), ("export_mpich", "mpich")):
        if getattr(args, flag):
            from ..bench import native_tuning
            native_tuning.export(args, mpi, getattr(args, flag), sizes)
    if args.decision_plot:
        plot_decisions(result, rules, args.decision_plot)
        print(f"wrote {args.decision_plot}")
    return 0


def run_model(result, wanted: list[str] | None):
    """The model fitted to this tune run (alpha from the topology), for the
    algorithms wanted (None: all); None where nothing could be fitted."""
    rows = [{"algorithm": s.algorithm, "msize": s.msize, "seconds": s.seconds, "ranks": result.ranks,
             "topology": result.topology.name, "settings": f"rate_bps={result.settings.get('rate_bps', '')}"}
            for s in result.samples]
    try:
        return fit_model(rows, result.topology, {}, wanted, quiet=True)
    except TopocollError:
        return None


def decide(result, algs: list[str], sizes: list[int], args) -> list[dict]:
    """Rules from the measured medians: the fastest at each measured size
    (the previous size's choice where it ties with it, within TIE);
    between two measured sizes whose winners differ, the boundary where the
    model (fitted to this run) says the second overtakes the first, else
    the geometric middle."""
    # within the noise of the fastest, keep the previous size's choice (on 16
    # machines at 128K, hierarchical-factor led faraj-yuan by 0.2 % in the tune
    # run and trailed it by 2.9 % in the next)
    best = harness.winners(result, algs, sizes, TIE)
    model = None
    model = run_model(result, sorted(set(best.values())))
    rules, start = [], 0
    for lo, hi in zip(sizes, sizes[1:]):
        a, b = best[lo], best[hi]
        if a == b:
            continue
        cut = crossover(model, result.topology, a, b, lo, hi) if model else None
        edge = cut if cut is not None else int(math.sqrt(lo * hi))
        rules.append(rule(result.ranks, start, edge - 1, a, args))
        start = edge
    rules.append(rule(result.ranks, start, None, best[sizes[-1]], args))
    return rules


def crossover(model, topo, a: str, b: str, lo: int, hi: int) -> int | None:
    """The smallest block in (lo, hi] where the model predicts b no slower
    than a, on a geometric grid; None where the model does not see one."""
    if a not in model.signatures or b not in model.signatures:
        return None
    for k in range(1, 65):
        m = int(round(lo * (hi / lo) ** (k / 64)))
        if m > lo and model.predict(b, topo, m) <= model.predict(a, topo, m):
            return m
    return None


def rule(ranks: int, lo: int, hi: int | None, algorithm: str, args) -> dict:
    r = {"ranks": ranks, "min_block": lo}
    if hi is not None:
        r["max_block"] = hi
    r["algorithm"] = algorithm
    if algorithm != "native":
        params = lib().tc_algorithm_params(algorithm_index(algorithm))
        if params & PARAM_SEGMENTS:
            r["segment_size"] = parse_size(args.segment_size) if args.segment_size else int(default("segment_size"))
        if params & PARAM_FANOUT:
            r["fanout"] = args.fanout or int(default("fanout"))
    return r


def plot_decisions(result, rules: list[dict], path: str) -> None:
    """The decision map, block size x process count: at the tuned count the
    rules written (measured); at every smaller count (the topology's first
    machines) the model fitted to this run picks the fastest of the
    algorithms it could fit."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    model = run_model(result, None)
    grid = [int(8 * 2 ** (k / 2)) for k in range(0, 2 * 17 + 1)]      # 8 B .. 1 MB
    counts = list(range(2, result.ranks)) if model else []
    picks = {}
    for n in counts:
        sub = result.topology.restrict(list(range(n)))
        for m in grid:
            pred = {}
            for a in model.signatures:
                try:
                    pred[a] = model.predict(a, sub, m)
                except TopocollError:
                    continue
            if pred:
                picks[(n, m)] = min(pred, key=pred.get)
    for m in grid:
        picks[(result.ranks, m)] = next(r["algorithm"] for r in rules
                                        if r["min_block"] <= m and (r.get("max_block") is None or m <= r["max_block"]))
    names = sorted(set(picks.values()))
    colours = {a: plt.cm.tab10(i % 10) for i, a in enumerate(names)}
    fig, ax = plt.subplots(figsize=(9, 5))
    for (n, m), a in picks.items():
        ax.bar(m, 0.9, width=m * (2 ** 0.5 - 1), bottom=n - 0.45, align="edge", color=colours[a],
               edgecolor="black" if n == result.ranks else "none", linewidth=0.4)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("block size (bytes)")
    ax.set_ylabel("ranks (the topology's first machines)")
    ax.set_title(f"decisions on {result.topology.name} [{result.backend}]: {result.ranks} ranks measured (outlined), "
                 "fewer from the fitted model", fontsize=9)
    ax.legend(handles=[Patch(color=colours[a], label=a) for a in names], fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    save_figure(fig, path)
