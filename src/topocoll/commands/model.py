"""``topocoll model``: the contention-signature model (Steffenel, Martinasso &
Trystram): measure the point-to-point parameters, fit the signature, predict."""

from __future__ import annotations

import csv
import math
import statistics
import sys

from .._core import Network, Topology, TopocollError, algorithms, parse_size, untuned_auto
from ..bench import harness
from ..common import (add_actions, add_topology_argument, emit_json, load_topology, read_json, run_action,
                      save_figure, write_json)
from ..model import MIN_FIT_SIZES, PINGPONG_FORMAT, Model, fit_signature, pingpong_classes

description = "the contention-signature model: ping-pong parameters, fit to all-to-all timings, predictions"

PINGPONG_SIZES = "0,1K,8K,64K,256K"


def setup_parser(p):
    from . import bench
    sub = add_actions(p)
    pp = sub.add_parser("pingpong", help="measure alpha and beta for each class of path with an MPI ping-pong",
                        description="Rank 0 ping-pongs with every other rank (median half round trips); the peers "
                                    "are grouped by the class of their path (network links crossed: 2 same switch, "
                                    "3 one more switch, ...; 0 same machine with --ranks-per-machine) and "
                                    "t = alpha + m beta is fitted to each class.")
    add_topology_argument(pp)
    bench.add_backend_arguments(pp)
    pp.add_argument("--sizes", default=PINGPONG_SIZES, help=f"message sizes (default {PINGPONG_SIZES})")
    pp.add_argument("--repetitions", type=int, default=20, help="timed round trips a size (default %(default)s)")
    pp.add_argument("--ranks-per-machine", type=int, metavar="N", help="N ranks a machine (measures class 0 too)")
    pp.add_argument("-o", "--output", metavar="P.json", help="write the parameters here (default: stdout)")
    bench.add_run_options(pp)
    pp.set_defaults(_action=run_pingpong)

    fp = sub.add_parser("fit", help="fit gamma, delta and M (eq. 5) to all-to-all timings, per algorithm",
                        description="Fit the contention signature of each algorithm in a bench CSV (one process "
                                    f"count, at least {MIN_FIT_SIZES} block sizes) by generalised least squares, "
                                    "the native all-to-all first as the paper does.")
    fp.add_argument("csv", metavar="BENCH.csv", help="a CSV written by 'topocoll bench --csv' or 'topocoll tune'")
    fp.add_argument("--pingpong", metavar="P.json", help="alpha by path class from 'topocoll model pingpong'")
    fp.add_argument("--topology", metavar="T", help="the topology of the CSV (default: its topology column)")
    fp.add_argument("--algorithms", default="all", help="algorithms to fit (default: all in the CSV)")
    fp.add_argument("--min-size", default="0", help="leave out blocks below this size (default: none)")
    fp.add_argument("-o", "--output", metavar="MODEL.json", help="write the model here")
    fp.add_argument("--plot", metavar="PNG", help="predicted against measured, per algorithm")
    fp.set_defaults(_action=run_fit)

    pr = sub.add_parser("predict", help="predicted time of every algorithm for a topology and block size")
    add_topology_argument(pr)
    pr.add_argument("--size", required=True, help="block size (bytes, K, M)")
    pr.add_argument("--algorithm", default="all", help="an algorithm, native, or all (default)")
    pr.add_argument("--model", metavar="MODEL.json", help="a model from 'topocoll model fit' (default: the core's "
                                                          "defaults, as the PMPI library's untuned auto uses)")
    pr.add_argument("--ranks-per-machine", type=int, default=1, metavar="N", help="ranks a machine (default 1)")
    pr.add_argument("--bandwidth", help="rate of links the topology gives none (default: the model's)")
    pr.add_argument("--json", action="store_true", help="JSON: the predicted seconds per algorithm")
    pr.set_defaults(_action=run_predict)


def run(args):
    return run_action(args)


def run_pingpong(args):
    from . import bench
    machines = load_topology(args.topology)
    counts, topo = bench.layout(machines, args.ranks_per_machine)
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    if not sizes or args.repetitions < 1:
        raise TopocollError("invalid argument", "--sizes needs a size and --repetitions at least 1")
    if sum(counts) < 2:
        raise TopocollError("invalid argument", "a ping-pong needs two ranks")
    if args.backend == "packet":   # it simulates the executor's MPI_Alltoall, not MPI programs
        raise TopocollError("invalid argument", "model pingpong runs an MPI program: --backend simgrid, testbed or "
                                                "mpirun (the packet simulator runs MPI_Alltoall only)")
    backend = bench.make_backend(args, machines, counts)
    print(f"model pingpong: {topo.name}, {sum(counts)} ranks, backend {backend.name}", file=sys.stderr)
    try:
        out = backend.run_program("pingpong_bench", ["--repetitions", args.repetitions] + sizes)
    finally:
        if hasattr(backend, "close"):
            backend.close()
    results = []
    for line in out.splitlines():
        parts = line.split()
        if parts[:1] == ["pingpong"] and len(parts) == 4:
            results.append((int(parts[1]), int(parts[2]), float(parts[3])))
    if not results:
        raise TopocollError("i/o error", "the ping-pong printed no results")
    classes = pingpong_classes(topo, results, list(range(topo.num_machines)))
    doc = {"format": PINGPONG_FORMAT, "topology": machines.name, "machines": machines.machines,
           "backend": backend.name, "settings": {k: str(v) for k, v in backend.settings().items()},
           "classes": classes}
    for c in classes:
        print(f"  path class {c['links']} (links crossed): alpha {c['alpha'] * 1e6:.1f} us, beta "
              f"{c['beta'] * 1e9:.3f} ns/byte ({8 / c['beta'] / 1e6 if c['beta'] > 0 else math.inf:.1f} Mbit/s), "
              f"peers {c['peers'][:6]}{' ...' if len(c['peers']) > 6 else ''}", file=sys.stderr)
    write_json(doc, args.output)
    if args.output:
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def load_pingpong(path: str) -> dict[int, float]:
    """alpha by path class from a ping-pong file."""
    doc = read_json(path, "ping-pong")
    if not isinstance(doc, dict) or doc.get("format") != PINGPONG_FORMAT or not isinstance(doc.get("classes"), list):
        raise TopocollError("parse error", f"{path}: not a ping-pong file (\"format\": \"{PINGPONG_FORMAT}\" and "
                                           "\"classes\" expected)")
    out = {}
    for i, c in enumerate(doc["classes"]):
        ok = isinstance(c, dict) and isinstance(c.get("links"), int) and not isinstance(c.get("links"), bool) \
            and 0 <= c["links"] < 130 and isinstance(c.get("alpha"), (int, float)) and 0 <= c["alpha"] <= 3600
        if not ok:
            raise TopocollError("parse error", f"{path}: classes[{i}]: needs \"links\" (0-129) and \"alpha\" "
                                               "(seconds, 0-3600)")
        out[c["links"]] = float(c["alpha"])
    return out


def read_bench_csv(path: str) -> list[dict]:
    """The rows of a bench CSV (docs/interfaces.md), checked."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise TopocollError("i/o error", f"cannot read '{path}': {e.strerror}") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise TopocollError("parse error", f"{path}: not a bench CSV: {e}") from None
    need = {"algorithm", "msize_bytes", "seconds", "ranks", "topology"}
    if not rows or not need <= set(rows[0]):
        raise TopocollError("parse error", f"{path}: not a bench CSV (needs the columns {', '.join(sorted(need))})")
    out = []
    for i, r in enumerate(rows, start=2):
        try:
            row = {"algorithm": r["algorithm"], "msize": int(r["msize_bytes"]), "seconds": float(r["seconds"]),
                   "ranks": int(r["ranks"]), "topology": r["topology"], "settings": r.get("settings") or ""}
        except (TypeError, ValueError):
            raise TopocollError("parse error", f"{path}:{i}: a row with a bad msize_bytes, ranks or seconds") from None
        if not (row["seconds"] > 0 and math.isfinite(row["seconds"])) or row["msize"] < 0:
            raise TopocollError("parse error", f"{path}:{i}: seconds must be > 0 and msize_bytes >= 0")
        out.append(row)
    return out


def settings_rate(rows: list[dict]) -> float | None:
    for part in rows[0]["settings"].split(";"):
        k, _, v = part.partition("=")
        if k == "rate_bps":
            try:
                return float(v)
            except ValueError:
                return None
    return None


def csv_topology(rows: list[dict], arg: str | None) -> Topology:
    """The topology the CSV ran on (its ranks as machines)."""
    names = {r["topology"] for r in rows}
    counts = {r["ranks"] for r in rows}
    if len(counts) != 1:
        raise TopocollError("invalid argument", f"the CSV has {len(counts)} process counts ({sorted(counts)}); the "
                                                "fit takes one (n')")
    if not arg and len(names) != 1:
        raise TopocollError("invalid argument", "the CSV names several topologies; give --topology")
    topo = load_topology(arg or names.pop())
    ranks = counts.pop()
    if ranks != topo.num_machines:
        if ranks % topo.num_machines:
            raise TopocollError("invalid argument", f"the CSV ran {ranks} ranks, which {topo.name}'s "
                                                    f"{topo.num_machines} machines do not divide evenly")
        topo = topo.expand(ranks // topo.num_machines)
    return topo


def fit_model(rows: list[dict], topo: Topology, alpha: dict[int, float], wanted: list[str] | None,
              min_size: int = 0, source: dict | None = None, machines: list[str] | None = None,
              quiet: bool = False) -> Model:
    """A model fitted to the rows' medians, one signature per algorithm."""
    model = Model(Network(alpha, default_rate=settings_rate(rows)), machines=machines or topo.machines,
                  fitted=source or {})
    algs = []
    for r in rows:
        if r["algorithm"] not in algs and (not wanted or r["algorithm"] in wanted) and r["algorithm"] != "auto":
            algs.append(r["algorithm"])
    algs.sort(key=lambda a: a != "native")     # native first, as the paper does
    for alg in algs:
        samples: dict[int, list[float]] = {}
        for r in rows:
            if r["algorithm"] == alg and r["msize"] >= min_size:
                samples.setdefault(r["msize"], []).append(r["seconds"])
        points = [(m, statistics.median(ts)) for m, ts in samples.items()]
        try:
            model.signatures[alg] = fit_signature(points, lambda m: model.features(alg, topo, m))
        except ValueError as e:
            if not quiet:
                print(f"model fit: {alg}: not fitted: {e}", file=sys.stderr)
    if not model.signatures:
        raise TopocollError("invalid argument", f"nothing to fit: each algorithm needs at least {MIN_FIT_SIZES} "
                                                "block sizes")
    return model


def fit_table(model: Model) -> str:
    lines = [f"  {'algorithm':<20} {'gamma':>8} {'delta ms':>9} {'M':>8}   median |error|  worst   points"]
    for alg, s in model.signatures.items():
        errs = [abs(p["error"]) for p in s["points"]]
        M = "-" if math.isinf(s["threshold"]) else harness.format_size(int(s["threshold"]))
        lines.append(f"  {alg:<20} {s['gamma']:>8.4f} {s['delta'] * 1e3:>9.3f} {M:>8}   {statistics.median(errs):>12.1%}"
                     f"  {max(errs):>6.1%}   {len(errs)}")
    return "\n".join(lines)


def run_fit(args):
    rows = read_bench_csv(args.csv)
    topo = csv_topology(rows, args.topology)
    alpha = load_pingpong(args.pingpong) if args.pingpong else {}
    wanted = None if args.algorithms == "all" else [a.strip() for a in args.algorithms.split(",") if a.strip()]
    source = {"csv": args.csv, "topology": rows[0]["topology"], "ranks": rows[0]["ranks"],
              "settings": rows[0]["settings"], "pingpong": args.pingpong}
    machines = load_topology(args.topology or rows[0]["topology"]).machines
    model = fit_model(rows, topo, alpha, wanted, parse_size(args.min_size), source, machines)
    print(f"model fit: {topo.name}, n' = {topo.num_machines} ranks, "
          f"{'alpha from ' + args.pingpong if args.pingpong else 'alpha from the topology (overhead + latencies)'}")
    print(fit_table(model))
    if args.output:
        write_json(model.to_json(), args.output)
        print(f"wrote {args.output}", file=sys.stderr)
    if args.plot:
        plot_fit(model, args.plot, topo.name)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def plot_fit(model: Model, path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    markers = "osD^vP*Xh<>"
    for i, (alg, s) in enumerate(model.signatures.items()):
        pts = s["points"]
        line, = ax.plot([p["msize"] for p in pts], [p["predicted"] * 1e3 for p in pts], linewidth=1.2, label=f"{alg} model")
        ax.plot([p["msize"] for p in pts], [p["measured"] * 1e3 for p in pts], markers[i % len(markers)],
                color=line.get_color(), label=f"{alg} measured")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("block size (bytes)")
    ax.set_ylabel("MPI_Alltoall (ms, median)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(f"contention-signature model against measurement: {title}", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path)


def run_predict(args):
    from ..common import rate
    topo = load_topology(args.topology)
    if args.ranks_per_machine < 1:
        raise TopocollError("invalid argument", "--ranks-per-machine must be at least 1")
    model = Model.load(args.model) if args.model else Model.default(rate(args.bandwidth) if args.bandwidth else None)
    model.check_topology(topo)
    if args.bandwidth and args.model:
        model.network.default_rate = rate(args.bandwidth)
    if args.ranks_per_machine > 1:
        topo = topo.expand(args.ranks_per_machine)
    block = parse_size(args.size)
    names = [a["name"] for a in algorithms()] + ["native"]
    if args.algorithm != "all":
        if args.algorithm not in names:
            raise TopocollError("invalid argument", f"unknown algorithm '{args.algorithm}'; valid: "
                                                    f"{', '.join(names)}, all")
        names = [args.algorithm]
    pred = {}
    for a in names:
        try:
            pred[a] = model.predict(a, topo, block)
        except TopocollError as e:
            if args.algorithm != "all":
                raise
            print(f"model predict: {a}: {e}", file=sys.stderr)
    best = min(pred, key=pred.get)
    auto, _ = untuned_auto(topo, block, model.network.default_rate)
    if args.json:
        emit_json({"topology": topo.name, "ranks": topo.num_machines, "msize_bytes": block, "seconds": pred,
                   "best": best, "auto_untuned": auto, "model": args.model})
        return 0
    print(f"{topo.name}, {topo.num_machines} ranks, {harness.format_size(block)} blocks, model "
          f"{args.model or 'the core defaults (no fit)'}")
    for a in sorted(pred, key=pred.get):
        fitted = model.signature(a)[1]
        print(f"  {a:<20} {pred[a] * 1e3:>10.3f} ms{'' if fitted else '   (default signature: not fitted)'}")
    print(f"predicted best: {best}")
    print(f"auto without a tuning file (the PMPI library): {auto}")
    return 0
