#!/usr/bin/env python3
"""The unequal-block planner at scale: what planning and verifying a matrix
costs (tc_alltoallv_plan with the PMPI library's options, then
tc_traffic_verify), its steps against the links' piece load (the fewest a
contention-free plan can have) and the model's time against the link-load
bound, for every pattern on two- and three-level trees of 12 to 1,024
ranks; medians of N runs (the plan is the same each time).

Usage: alltoallv_planning.py [--repetitions N] [--mean-block SIZE]

Targets (issue 19): 256 ranks planned and verified in < 50 ms, 1,024 in < 1 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from topocoll._core import Network, Topology, Traffic, parse_size  # noqa: E402

CASES = ["chain:4,4,4", "tree:2,2,3", "6", "star:2,1,3", "tree:16,16", "tree:4,4,16", "tree:32,32", "tree:8,8,16"]
PATTERNS = ["uniform", "zipf:1.0", "hot:1", "hot:2", "sparse:0.3", "random"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--mean-block", default="64K")
    args = ap.parse_args()
    net = Network()
    print(f"{'tree':<12} {'ranks':>5} {'pattern':<11} {'plan+verify ms':>14} {'steps':>8} {'piece load':>10} "
          f"{'model/bound':>11} {'piece':>8}")
    ratios, exact = [], 0
    for spec in CASES:
        topo = Topology.synthetic(spec)
        for pat in PATTERNS:
            d = Traffic.pattern(pat, topo.num_machines, parse_size(args.mean_block), seed=4)
            times = []
            for _ in range(args.repetitions):
                t0 = time.perf_counter()
                sched, info = d.plan(topo, network=net)
                r = d.verify(sched, topo, net)
                times.append(time.perf_counter() - t0)
            if not (r["complete"] and r["contention_free"]):
                print(f"{spec} {pat}: VERIFICATION FAILED: {r['problem']}")
                return 1
            ratio = r["bound_seconds"] / r["predicted_seconds"]
            if pat != "uniform":
                ratios.append(ratio)
                exact += r["steps"] == r["piece_load"]
            piece = "uniform" if info["uniform"] else ("whole" if not info["piece_bytes"] else
                                                       f"{info['piece_bytes'] // 1024}K")
            print(f"{spec:<12} {topo.num_machines:>5} {pat:<11} {statistics.median(times) * 1e3:>14.1f} "
                  f"{r['steps']:>8} {r['piece_load']:>10} {ratio:>11.3f} {piece:>8}", flush=True)
    print(f"\nnon-uniform cases: {len(ratios)}; steps equal to the piece load in {exact}; bound / model "
          f"{min(ratios):.3f}-{max(ratios):.3f}, median {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
