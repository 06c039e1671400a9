"""``topocoll demo``: the main job on the built-in topologies."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from .._core import Schedule, Topology, TopocollError
from ..common import DEFAULT_BANDWIDTH, rate
from .topology import describe

description = ("plan and verify faraj-yuan on the paper's three test topologies; as root, run it against the MPI's "
               "own all-to-all on an emulated switched cluster (real TCP); then every algorithm on the paper's "
               "topologies in SimGrid (tables, CSV and figures in out/)")

BUILTIN = ["a-single-switch.conf", "b-star.conf", "c-chain.conf"]
# The emulated cluster's case: 12 machines on a chain of 3 switches, the
# schedule against Open MPI's own all-to-all and the topology-oblivious
# algorithms that came closest to it in the last full tables (ring,
# sync-shuffle; docs/results/2026-11-22-testbed.md).
TESTBED_TOPOLOGY = "chain:4,4,4"
TESTBED_ALGORITHMS = "faraj-yuan,native,ring,sync-shuffle"
# Beyond the emulated cluster: 64 machines (8 switches of 8 under a root) in
# the packet-level simulation, the schedule against Open MPI's own and the
# best topology-oblivious exchange (docs/packet.md); about a minute.
PACKET_TOPOLOGY = "tree:8,8"
PACKET_ALGORITHMS = "faraj-yuan,native,pairwise"
PACKET_SIZES = "64K"


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
    p.add_argument("--no-bench", action="store_true", help="only plan and verify; no emulated cluster, no simulation")
    p.add_argument("--no-testbed", action="store_true", help="skip the emulated cluster (it needs root)")
    p.add_argument("--no-simgrid", action="store_true", help="skip the simulation")
    p.add_argument("--no-packet", action="store_true", help="skip the packet-level simulation of 64 machines")
    p.add_argument("--testbed-sizes", default="128K,256K", help="block sizes on the emulated cluster (default %(default)s)")
    p.add_argument("--testbed-repetitions", type=int, default=5,
                   help="timed calls per size on the emulated cluster (default %(default)s)")
    p.add_argument("--out", default="out", help="folder for the CSV files and figures (default %(default)s)")
    p.add_argument("--sizes", default="16K,64K,256K", help="block sizes in SimGrid (default %(default)s)")
    p.add_argument("--repetitions", type=int, default=1,
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
    if not args.no_testbed:
        emulated_cluster(args, out)
    if not args.no_packet:
        packet_scaled(args, out)
    if args.no_simgrid:
        return 0
    print("\nSimGrid's flow model shares each link's bandwidth fluidly among the flows on it: no queues, drops or "
          "retransmissions,\nso contention costs little there and most algorithms sit near the bound; the emulated "
          "cluster above shows what it costs over TCP.")
    for path in paths:
        name = Path(path).stem
        print(f"\n=== {name}: every algorithm in SimGrid (topocoll model), {args.sizes} ===", flush=True)
        bench.run(bench.setup_args([path, "--sizes", args.sizes, "--repetitions", str(args.repetitions),
                                    "--bandwidth", args.bandwidth, "--csv", str(out / f"{name}.csv"),
                                    "--plot", str(out / f"{name}.png")]))
    return 0


def packet_scaled(args, out: Path) -> None:
    """faraj-yuan at scale, packet by packet (ns-3)."""
    from . import bench
    from ..bench import packet
    print(f"\n=== beyond the testbed: {PACKET_TOPOLOGY} (64 machines, 8 leaf switches under a root), packet-level "
          f"simulation (ns-3, TCP), {PACKET_SIZES} blocks ===", flush=True)
    try:
        packet.program()
    except TopocollError as e:
        print(f"skipped: {e}")
        return
    bench.run(bench.setup_args([PACKET_TOPOLOGY, "--backend", "packet", "--algorithms", PACKET_ALGORITHMS,
                                "--sizes", PACKET_SIZES, "--repetitions", "1", "--bandwidth", args.bandwidth,
                                "--csv", str(out / f"packet-{PACKET_TOPOLOGY.replace(':', '-').replace(',', '-')}.csv")]))


def testbed_missing() -> str | None:
    """Why the emulated cluster cannot run here, or None."""
    if os.geteuid() != 0:
        return "it needs root (network namespaces)"
    for tool in ("ip", "tc", "mpirun.openmpi"):
        if not shutil.which(tool):
            return f"'{tool}' is not installed"
    return None


def emulated_cluster(args, out: Path) -> None:
    """faraj-yuan against the MPI's own all-to-all on the emulated cluster."""
    from . import bench
    from ..bench.harness import format_size
    from ..cli import main as topocoll
    why = testbed_missing()
    print(f"\n=== the emulated switched cluster: {TESTBED_TOPOLOGY} (12 machines, 3 switches), 100 Mbit/s, real TCP ===",
          flush=True)
    if why:
        print(f"skipped: {why}; see docs/testbed.md")
        return
    topocoll(["testbed", "down"])
    try:
        if topocoll(["testbed", "up", TESTBED_TOPOLOGY]) != 0:
            raise TopocollError("i/o error", "the emulated cluster did not come up (the line above says why)")
        result = bench.measure(bench.setup_args([
            TESTBED_TOPOLOGY, "--backend", "testbed", "--algorithms", TESTBED_ALGORITHMS, "--sizes", args.testbed_sizes,
            "--repetitions", str(args.testbed_repetitions), "--csv", str(out / "testbed-chain-4-4-4.csv"),
            "--plot", str(out / "testbed-chain-4-4-4.png")]))
    finally:
        topocoll(["testbed", "down"])
    sizes = sorted({s.msize for s in result.samples})
    speedups = ", ".join(f"{result.median('native', m) / result.median('faraj-yuan', m):.2f}x at {format_size(m)}"
                         for m in sizes)
    print(f"\nfaraj-yuan against the MPI's own MPI_Alltoall on the emulated cluster: {speedups}")
