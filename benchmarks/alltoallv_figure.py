#!/usr/bin/env python3
"""The share of the link-load bound each algorithm's median reaches, from
the CSVs of `topocoll bench --collective alltoallv` (one pattern a file, the
pattern read from its settings column), one group of bars a pattern and
block size.

Usage: alltoallv_figure.py BENCH.csv... -o FIGURE.png
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from topocoll._core import Topology, Traffic  # noqa: E402
from topocoll.common import load_topology, save_figure  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    groups = defaultdict(lambda: defaultdict(list))   # (pattern, size) -> algorithm -> seconds
    meta = {}
    for path in args.csv:
        with open(path) as f:
            for row in csv.DictReader(f):
                settings = dict(kv.split("=", 1) for kv in row["settings"].split(";") if "=" in kv)
                pattern, _, seed = settings["pattern"].partition(" (seed ")
                key = (pattern, int(row["msize_bytes"]))
                groups[key][row["algorithm"]].append(float(row["seconds"]))
                meta[key] = (row["topology"], int(seed.rstrip(")")), float(settings["rate_bps"]))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = sorted(groups, key=lambda k: (k[0], k[1]))
    algs = sorted({a for k in keys for a in groups[k]}, key=lambda a: (a != "planned", a == "native", a))
    fig, ax = plt.subplots(figsize=(max(8, 1.4 * len(keys)), 4.6))
    width = 0.8 / len(algs)
    for i, alg in enumerate(algs):
        xs, ys = [], []
        for x, key in enumerate(keys):
            if alg not in groups[key]:
                continue
            spec, seed, rate = meta[key]
            topo: Topology = load_topology(spec)
            bound = Traffic.pattern(key[0], topo.num_machines, key[1], seed).bounds(topo, rate)["link_seconds"]
            xs.append(x + (i - (len(algs) - 1) / 2) * width)
            ys.append(100 * bound / statistics.median(groups[key][alg]))
        ax.bar(xs, ys, width, label=alg)
    ax.axhline(100, color="black", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([f"{p}\n{s // 1024}K mean" for p, s in keys], fontsize=8)
    ax.set_ylabel("% of the link-load bound (bound / median)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8, ncol=len(algs))
    ax.set_title(f"MPI_Alltoallv on {meta[keys[0]][0]}, emulated cluster (100 Mbit/s)", fontsize=10)
    fig.tight_layout()
    save_figure(fig, args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
