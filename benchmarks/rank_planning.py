#!/usr/bin/env python3
"""Per-rank planning at scale: what a rank of the PMPI library spends before
its first all-to-all, planning only its part (tc_alltoall_plan_rank) against
planning the whole schedule as before (grouped phases where they apply,
syncs).  Each measurement is the program plan_bench (no MPI, no Python) in a
fresh process; time and the growth of its peak resident memory while
planning (and the whole program's peak, which the targets are held to);
medians of N runs, for the ranks that cost most (the first rank of
the largest subtree, a middle one, the last one), the worst of them reported.

Usage: rank_planning.py [--repetitions N] [--whole-up-to RANKS] [--plot PNG]

Targets (issue 18): per rank at 4,096 ranks < 50 ms and < 16 MB; at 16,384
ranks < 250 ms and < 64 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from topocoll.bench.mpirun import program  # noqa: E402

CASES = [
    # (ranks, label, spec, ranks a machine)
    (1024, "two-level, 32 x 32", "tree:32,32", 1),
    (1024, "three-level, 8 x 8 x 16", "tree:8,8,16", 1),
    (1024, "two-level, 16 x 16, 4 ranks a machine", "tree:16,16", 4),
    (4096, "two-level, 64 x 64", "tree:64,64", 1),
    (4096, "three-level, 16 x 16 x 16", "tree:16,16,16", 1),
    (4096, "two-level, 32 x 32, 4 ranks a machine", "tree:32,32", 4),
    (16384, "two-level, 128 x 128", "tree:128,128", 1),
    (16384, "three-level, 16 x 32 x 32", "tree:16,32,32", 1),
    (16384, "two-level, 64 x 64, 4 ranks a machine", "tree:64,64", 4),
]
TARGETS = {4096: (0.050, 16 << 20), 16384: (0.250, 64 << 20)}


def measure(spec: str, rank: int, per: int, whole: bool, repetitions: int) -> dict:
    runs = []
    for _ in range(repetitions):
        cmd = [str(program("plan_bench", "openmpi")), spec, str(rank), "--ranks-per-machine", str(per)]
        out = subprocess.run(cmd + (["--whole"] if whole else []), capture_output=True, text=True, timeout=3600)
        if out.returncode:
            return {"error": out.stderr.strip()}
        runs.append(json.loads(out.stdout))
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "peak_bytes": statistics.median(r["peak_bytes"] for r in runs),
            "process_peak_bytes": max(r["process_peak_bytes"] for r in runs),
            "messages": runs[0]["messages"], "syncs": runs[0]["syncs"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--whole-up-to", type=int, default=4096, metavar="RANKS",
                    help="plan the whole schedule too up to this many ranks (4,096: about 35 s and 2.5 GB a run; "
                         "default %(default)s)")
    ap.add_argument("--plot", metavar="PNG", help="planning time and memory against ranks, per rank and whole")
    args = ap.parse_args()
    rows = []
    print(f"machine: {os.cpu_count()} cores; load average before: {os.getloadavg()[0]:.2f}; "
          f"medians of {args.repetitions} runs")
    print("| ranks | tree | per rank: worst median ms (rank) | MB planning | MB process | syncs of that rank | "
          "whole schedule: s | MB | target |")
    print("|---|---|---|---|---|---|---|---|---|")
    ok = True
    for ranks, label, spec, per in CASES:
        worst = None
        for rank in (0, ranks // 2 + 1, ranks - 1):
            m = measure(spec, rank, per, False, args.repetitions)
            if "error" in m:
                print(f"{label}: rank {rank}: {m['error']}", file=sys.stderr)
                return 1
            m["rank"] = rank
            if worst is None or m["seconds"] > worst["seconds"]:
                worst = m
        whole = measure(spec, 0, per, True, 1 if ranks > 1024 else args.repetitions) \
            if ranks <= args.whole_up_to else None
        target = TARGETS.get(ranks)
        met = target is None or (worst["seconds"] < target[0] and worst["process_peak_bytes"] < target[1])
        ok &= met
        rows.append((ranks, label, worst, whole))
        w = ("-", "-") if whole is None else \
            (whole.get("error", f"{whole['seconds']:.2f}"), "-" if "error" in whole else f"{whole['peak_bytes'] / 2**20:.0f}")
        goal = "-" if target is None else f"< {target[0] * 1e3:.0f} ms, < {target[1] >> 20} MB: " + \
            ("met" if met else "**not met**")
        print(f"| {ranks:,} | {label} | {worst['seconds'] * 1e3:.1f} ({worst['rank']}) | "
              f"{worst['peak_bytes'] / 2**20:.1f} | {worst['process_peak_bytes'] / 2**20:.1f} | {worst['syncs']:,} | "
              f"{w[0]} | {w[1]} | {goal} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.plot:
        plot(rows, args.plot)
        print(f"wrote {args.plot}")
    return 0 if ok else 1


def plot(rows, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from topocoll.common import save_figure
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    shapes = sorted({label.split(",")[0] + (", several a machine" if "ranks a machine" in label else "")
                     for _, label, _, _ in rows})
    for shape in shapes:
        pts = [(r, w, wh) for r, label, w, wh in rows
               if label.split(",")[0] + (", several a machine" if "ranks a machine" in label else "") == shape]
        xs = [r for r, _, _ in pts]
        ax_t.plot(xs, [w["seconds"] for _, w, _ in pts], "o-", label=f"per rank, {shape}")
        ax_m.plot(xs, [w["process_peak_bytes"] / 2**20 for _, w, _ in pts], "o-", label=f"per rank, {shape}")
        whole = [(r, wh) for r, _, wh in pts if wh and "error" not in wh]
        if whole:
            ax_t.plot([r for r, _ in whole], [wh["seconds"] for _, wh in whole], "s--", label=f"whole, {shape}")
            ax_m.plot([r for r, _ in whole], [wh["peak_bytes"] / 2**20 for _, wh in whole], "s--", label=f"whole, {shape}")
    for ax, unit in ((ax_t, "seconds a rank"), (ax_m, "MB a rank (peak)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("ranks")
        ax.set_ylabel(unit)
        ax.grid(True, which="both", alpha=0.3)
    ax_t.legend(fontsize=7)
    fig.suptitle("faraj-yuan: planning one rank's part against the whole schedule")
    fig.tight_layout()
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
