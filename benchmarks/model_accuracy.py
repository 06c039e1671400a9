#!/usr/bin/env python3
"""Model accuracy on held-out points (issue 17's acceptance): fit the
contention signature at one process count n' from a bench CSV, then predict
every other CSV (other process counts on the same emulated cluster) and
report the prediction errors per algorithm and size range.

Usage: model_accuracy.py FIT.csv [--pingpong P.json] [--min-size 8K]
                         [--range 32K-256K] HELD.csv...

Prints, per algorithm: median and 90th percentile of |error| over the held
out points in the range (the acceptance: native and faraj-yuan below 7 % and
15 %), then the same for the sizes below it, then every point.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from topocoll._core import parse_size
from topocoll.commands.model import csv_topology, fit_model, load_pingpong, read_bench_csv


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("fit")
    p.add_argument("held", nargs="+")
    p.add_argument("--pingpong")
    p.add_argument("--min-size", default="0")
    p.add_argument("--range", default="32K-256K")
    p.add_argument("--algorithms", default="native,faraj-yuan")
    args = p.parse_args()
    lo, hi = (parse_size(x) for x in args.range.split("-"))
    algs = args.algorithms.split(",")
    rows = read_bench_csv(args.fit)
    topo = csv_topology(rows, None)
    alpha = load_pingpong(args.pingpong) if args.pingpong else {}
    model = fit_model(rows, topo, alpha, algs, parse_size(args.min_size))
    print(f"fitted at n' = {topo.num_machines} ({args.fit}, blocks >= {args.min_size}):")
    for a, s in model.signatures.items():
        print(f"  {a}: gamma {s['gamma']:.4f}, delta {s['delta'] * 1e3:.3f} ms from {s['threshold']:g} bytes")
    points = []
    for path in args.held:
        held = read_bench_csv(path)
        t = csv_topology(held, None)
        if t.num_machines == topo.num_machines and path == args.fit:
            continue
        for a in algs:
            sizes = sorted({r["msize"] for r in held if r["algorithm"] == a})
            for m in sizes:
                measured = statistics.median(r["seconds"] for r in held if r["algorithm"] == a and r["msize"] == m)
                predicted = model.predict(a, t, m)
                points.append((a, t.name, t.num_machines, m, measured, predicted, predicted / measured - 1))
    print(f"\nheld-out points: {len(points)}")
    for a in algs:
        for label, sel in ((f"{args.range}", lambda m: lo <= m <= hi), (f"below {args.range.split('-')[0]}",
                                                                         lambda m: m < lo)):
            errs = [abs(e) for (x, _, _, m, _, _, e) in points if x == a and sel(m)]
            if errs:
                print(f"  {a:<12} {label:<14} n={len(errs):>3}  median |error| {statistics.median(errs):6.1%}  "
                      f"p90 {percentile(errs, 0.9):6.1%}  worst {max(errs):6.1%}")
    print("\nalgorithm    topology        ranks   block    measured ms  predicted ms   error")
    for a, name, n, m, meas, pred, e in sorted(points, key=lambda x: (x[0], x[2], x[3])):
        print(f"{a:<12} {name:<15} {n:>5} {m:>8} {meas * 1e3:>14.2f} {pred * 1e3:>13.2f} {e:>8.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
