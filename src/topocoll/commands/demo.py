"""``topocoll demo``: the main job on the built-in topologies."""

from __future__ import annotations

import time
from pathlib import Path

from .._core import Schedule, Topology
from ..common import DEFAULT_BANDWIDTH, rate
from .topology import describe

description = ("plan and verify faraj-yuan on the paper's three test topologies, then benchmark every algorithm "
               "on them in SimGrid (tables, CSV and figures in out/)")

BUILTIN = ["a-single-switch.conf", "b-star.conf", "c-chain.conf"]


def examples_dir() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent / "examples" / "topologies"
        if cand.is_dir():
            return cand
    raise FileNotFoundError("examples/topologies not found")


def setup_parser(p):
    p.add_argument("topologies", nargs="*", metavar="T",
                   help="topologies to show (default: the paper's (a), (b) and (c))")
    p.add_argument("--bandwidth", default=DEFAULT_BANDWIDTH,
                   help="bandwidth of links the file gives none for (default %(default)s)")
    p.add_argument("--no-bench", action="store_true", help="only plan and verify; no simulation")
    p.add_argument("--out", default="out", help="folder for the CSV files and figures (default %(default)s)")
    p.add_argument("--sizes", default="8K,16K,32K,64K,128K,256K", help="block sizes (default %(default)s)")
    p.add_argument("--repetitions", type=int, default=3,
                   help="timed calls per size (default %(default)s; the simulation is deterministic)")


def run(args):
    paths = args.topologies or [str(examples_dir() / n) for n in BUILTIN]
    bw = rate(args.bandwidth)
    print("Faraj-Yuan all-to-all on the paper's test topologies (IPDPS 2005, Figure 5)\n")
    header = f"{'topology':<18} {'machines':>8} {'bottleneck link(s)':<24} {'load':>5} {'phases':>6} " \
             f"{'contention':>10} {'peak Mbit/s':>11} {'plan+verify':>11}"
    print(header)
    print("-" * len(header))
    for path in paths:
        topo = Topology.load(path)
        info = describe(topo, bw)
        t0 = time.perf_counter()
        sched = Schedule.plan("faraj-yuan", topo)
        rep = sched.verify(topo)
        dt = time.perf_counter() - t0
        links = info["bottleneck_links"]
        shown = links[0]["link"] + (f" +{len(links) - 1}" if len(links) > 1 else "") if links else "-"
        print(f"{topo.name:<18} {topo.num_machines:>8} {shown:<24} {info['load']:>5} {sched.num_steps:>6} "
              f"{'none' if rep['contention_free'] else 'YES':>10} {info['peak_throughput_bps'] / 1e6:>11.1f} "
              f"{dt * 1000:>9.1f}ms")
        if not (rep["complete"] and rep["optimal"]):
            raise SystemExit(f"topocoll demo: verification failed on {topo.name}: {rep['problem']}")
    print(f"\npeak = |M|(|M|-1)B/(|Mu||Mv|) at B = {args.bandwidth} per link; every schedule above was "
          "checked by the verifier: each message once, no link shared within a phase, phases = load.")
    if args.no_bench:
        return 0
    from . import bench
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for path in paths:
        name = Path(path).stem
        print(f"\n=== {name}: every algorithm in SimGrid (topocoll model), {args.sizes} ===", flush=True)
        bench.run(bench.setup_args([path, "--sizes", args.sizes, "--repetitions", str(args.repetitions),
                                    "--bandwidth", args.bandwidth, "--csv", str(out / f"{name}.csv"),
                                    "--plot", str(out / f"{name}.png")]))
    return 0
