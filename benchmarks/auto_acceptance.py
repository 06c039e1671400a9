#!/usr/bin/env python3
"""Tables of issue 17's acceptance from one `topocoll bench` CSV that ran
auto (with --tuning), auto:untuned, native, native:tuned (--native-rules)
and every algorithm of the registry side by side:

- tuned auto against the best single algorithm at each size (the registry's
  and native; medians): never more than 5 % slower, 2 % on average;
- untuned auto against native: never more than 15 % slower;
- native with the exported tuning file against stock native: never more than
  3 % slower.

Usage: auto_acceptance.py BENCH.csv [BENCH.csv ...]
"""

from __future__ import annotations

import statistics
import sys

from topocoll._core import algorithms
from topocoll.bench.harness import format_size
from topocoll.commands.model import read_bench_csv


def medians(rows):
    out = {}
    for r in rows:
        out.setdefault((r["algorithm"], r["msize"]), []).append(r["seconds"])
    return {k: statistics.median(v) for k, v in out.items()}


def main(paths: list[str]) -> int:
    singles = [a["name"] for a in algorithms()] + ["native"]
    for path in paths:
        rows = read_bench_csv(path)
        med = medians(rows)
        sizes = sorted({m for _, m in med})
        calls = sum(1 for r in rows if r["algorithm"] == "native" and r["msize"] == sizes[0])
        print(f"\n{rows[0]['topology']}, {rows[0]['ranks']} ranks ({path}); medians of {calls} calls")
        print(f"  {'block':>6} {'best single':>20} {'ms':>9} {'auto ms':>9} {'auto/best':>9} "
              f"{'untuned':>9} {'untuned/native':>14} {'native':>9} {'tuned native':>12} {'tuned/stock':>11}")
        ratios = []
        for m in sizes:
            best = min((a for a in singles if (a, m) in med), key=lambda a: med[(a, m)])
            auto, untuned = med.get(("auto", m)), med.get(("auto:untuned", m))
            native, tuned = med.get(("native", m)), med.get(("native:tuned", m))
            r = auto / med[(best, m)] if auto else float("nan")
            ratios.append(r)
            print(f"  {format_size(m):>6} {best:>20} {med[(best, m)] * 1e3:>9.2f} {auto * 1e3 if auto else 0:>9.2f} "
                  f"{r:>9.3f} {untuned * 1e3 if untuned else 0:>9.2f} "
                  f"{untuned / native if untuned and native else float('nan'):>14.3f} {native * 1e3 if native else 0:>9.2f} "
                  f"{tuned * 1e3 if tuned else 0:>12.2f} {tuned / native if tuned and native else float('nan'):>11.3f}")
        good = [x for x in ratios if x == x]
        if good:
            print(f"  tuned auto / best: worst {max(good):.3f}, mean {sum(good) / len(good):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
