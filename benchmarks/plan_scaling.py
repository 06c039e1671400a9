#!/usr/bin/env python3
"""Planning scale: how long `topocoll plan` takes, and how much memory, on
large trees.  Each case runs the real CLI in a fresh process N times; the
figures are medians of wall time and the peak resident size (the kernel's
rusage of the child).  Usage: plan_scaling.py [--repetitions N]

Targets: 1,024 machines two-level, plan + write JSON < 2 s; 4,096 machines
three-level (16.7 M messages), plan + verify (--check) < 10 s and < 2 GB;
1,024 machines with pairwise synchronisation (--syncs) < 10 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

CLI = Path(sys.executable).parent / "topocoll"

CASES = [
    # (label, spec, extra args, limit seconds, limit MB)
    ("1,024 machines, two-level (32 switches x 32), plan + write JSON", "tree:32,32", ["-o", "{tmp}/s.json"], 2.0, None),
    ("4,096 machines, three-level (16 x 16 x 16), plan --check", "tree:16,16,16", ["--check"], 10.0, 2048),
    ("1,024 machines, two-level, plan --syncs --check (pairwise synchronisation)", "tree:32,32",
     ["--syncs", "--check"], 10.0, None),
]


def run_once(spec: str, extra: list[str], tmp: str) -> tuple[float, float]:
    args = [str(CLI), "plan", spec] + [a.format(tmp=tmp) for a in extra]
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)     # the CLI's one-line summaries
        os.execv(args[0], args)
    t0 = time.perf_counter()
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"plan_scaling: {' '.join(args)} failed")
    return wall, usage.ru_maxrss / 1024.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repetitions", type=int, default=5)
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores; load average before: {os.getloadavg()[0]:.2f}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for label, spec, extra, limit_s, limit_mb in CASES:
            runs = [run_once(spec, extra, tmp) for _ in range(args.repetitions)]
            wall = statistics.median(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            verdict = wall < limit_s and (limit_mb is None or rss < limit_mb)
            ok &= verdict
            print(f"{label}: median {wall:.2f} s (min {min(r[0] for r in runs):.2f}, max {max(r[0] for r in runs):.2f}), "
                  f"peak RSS {rss:.0f} MB, limit {limit_s:.0f} s"
                  + (f" / {limit_mb} MB" if limit_mb else "") + (" -- ok" if verdict else " -- OVER"))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
