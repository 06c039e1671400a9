"""``topocoll bench``: algorithms side by side against the physical limit."""

from __future__ import annotations

import os
import sys

from .._core import (PARAM_CLUSTERS, PARAM_FANOUT, PARAM_SEGMENTS, Topology, TopocollError, algorithms, default, format_time,
                     parameters, parse_size, parse_time, phase_orders, tree_algorithms)
from ..bench import harness
from ..bench.packet import RENDEZVOUS
from .testbed import add_network_arguments
from ..common import DEFAULT_BANDWIDTH, DEFAULT_LATENCY, add_topology_argument, load_topology, rate

description = ("time MPI_Alltoall for several algorithms on a topology (SimGrid or the emulated cluster) and "
               "compare with the peak bound")

DEFAULT_SIZES = "8K,16K,32K,64K,128K,256K"


def pmpi_options() -> list:
    """Options that only set a variable of the PMPI library for the ranks:
    (flag, variable, argparse keywords)."""
    return [
        ("--segment-size", parameters()[PARAM_SEGMENTS][1],
         dict(metavar="BYTES", help="sync-shuffle, group-shuffle: segment size (default "
                                    f"{harness.format_size(int(default('segment_size')))})")),
        ("--fanout", parameters()[PARAM_FANOUT][1],
         dict(type=int, metavar="W", help=f"group-shuffle: partners a round (default {default('fanout'):.0f})")),
        ("--clusters", parameters()[PARAM_CLUSTERS][1],
         dict(metavar="LABELS", help="local-group: cluster of each rank, comma separated (default: cut the "
                                     "bottleneck links)")),
        ("--pace", "TOPOCOLL_PACE",
         dict(choices=["auto", "off"], help="testbed: hand a link to the next message once the bytes could have "
                                            "crossed it, in pieces under the eager limit (default auto: where link "
                                            "rates are known)")),
        ("--pace-lead", "TOPOCOLL_PACE_LEAD",
         dict(metavar="TIME", help="testbed: how much earlier than that the sync leaves (default "
                                   f"{format_time(default('pace_lead'))}; capacitated plans whose links carry several "
                                   f"messages at once {format_time(default('capacitated_pace_lead'))})")),
        ("--pace-lead-share", "TOPOCOLL_PACE_LEAD_SHARE",
         dict(metavar="PERCENT", help="where no --pace-lead is given, a step's lead is at most this share of the "
                                      f"step's link time (default {default('pace_lead_share') * 100:.0f}; 0: no "
                                      "cap; the testbed sets 0: its ranks wake late on two busy cores)")),
        ("--nap", "TOPOCOLL_NAP",
         dict(metavar="TIME", help="a waiting rank sleeps up to TIME between tests instead of spinning in the MPI "
                                   "(default: 200us on the testbed, else 0: spin)")),
        ("--plan", "TOPOCOLL_PLAN",
         dict(choices=["auto", "whole", "rank"], help="each rank plans the whole schedule (whole) or only its part "
                                                      "(rank: faraj-yuan, in the generator's phase order); auto: "
                                                      f"its part above {default('plan_whole_max_ranks'):.0f} ranks "
                                                      "(default)")),
        ("--alltoallv-piece-size", "TOPOCOLL_ALLTOALLV_PIECE_SIZE",
         dict(metavar="BYTES", help="alltoallv, planned: pieces of at most this many bytes (default: the "
                                    "planner's choice)")),
        ("--alltoallv-min-bytes", "TOPOCOLL_ALLTOALLV_MIN_BYTES",
         dict(metavar="BYTES", help="alltoallv, auto: plan from this mean block on (default 16K)")),
        ("--phase-order", "TOPOCOLL_PHASE_ORDER",
         dict(choices=phase_orders(), help="a synced schedule's phases: with messages moved between phases so "
                                           "that links keep their senders (grouped, the default), the "
                                           "generator's (paper), or the generator's in an order that hands "
                                           "links between senders evenly (balanced)")),
    ]


def setup_parser(p):
    add_topology_argument(p)
    add_backend_arguments(p)
    p.add_argument("--collective", default="alltoall", choices=["alltoall", "alltoallv", "bcast"],
                   help="what to time: alltoall (default), alltoallv (unequal blocks of --pattern; --sizes are "
                        "the mean blocks) or bcast (Karonis et al.'s method: every rank the root in turn, an "
                        "acknowledgement barrier after each broadcast)")
    p.add_argument("--pattern", default="uniform", metavar="PATTERN|FILE",
                   help="alltoallv: the blocks: uniform, zipf:S, hot:K, sparse:F, random (the core's patterns, "
                        "scaled to each size as the mean block), or a traffic matrix file (default %(default)s)")
    p.add_argument("--seed", type=int, default=1,
                   help="alltoallv: the pattern's seed; packet: the seed of --skew's draws (default %(default)s)")
    p.add_argument("--algorithms", default="all",
                   help="comma-separated algorithms, or 'all' (every registered one and native; default); 'auto' "
                        "is the PMPI library's choice as a user gets it (with --tuning FILE; auto:untuned without one); for "
                        "--collective bcast: multilevel, binomial, two-level (or two-level:L, clusters at level L, "
                        "0 = top), native")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"block sizes (default {DEFAULT_SIZES})")
    p.add_argument("--repetitions", type=int, default=5, help="timed calls per size (default %(default)s)")
    p.add_argument("--warmup", type=int, default=1, help="untimed calls per size first (default %(default)s)")
    add_run_options(p)
    p.add_argument("--ranks-per-machine", type=int, metavar="N",
                   help="N ranks on every machine (default: the topology's slots, else 1); machines with several "
                        "ranks are planned as switches holding them")
    for flag, var, kwargs in pmpi_options():
        p.add_argument(flag, **{**kwargs, "help": f"{kwargs['help']} ({var})"})
    p.add_argument("--tuning", metavar="FILE",
                   help="a tuning file from 'topocoll tune' for the 'auto' algorithm (TOPOCOLL_TUNING)")
    p.add_argument("--native-rules", metavar="FILE",
                   help="the MPI's own tuning file (from 'topocoll tune --export-openmpi/--export-mpich') for the "
                        "algorithm native:tuned; native:ALG runs one of the MPI's own algorithms (Open MPI: linear, "
                        "pairwise, modified_bruck, linear_sync[:REQUESTS]; MPICH: brucks, scattered, pairwise)")
    p.add_argument("--plan-topology", metavar="FILE",
                   help="the ranks plan on FILE (TOPOCOLL_TOPOLOGY) while the run is on T: the same machines in the "
                        "same order, other link rates, e.g. every link equal, to time a plan made as if it were "
                        "so on the real fabric")
    p.add_argument("--csv", help="write every timed call to this CSV file")
    p.add_argument("--plot", help="write the figure (time and throughput against size) to this PNG file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def add_run_options(p) -> None:
    """The back-ends' options: link defaults, simulation settings, the
    testbed's network and MCA parameters (bench, tune, model pingpong)."""
    p.add_argument("--bandwidth", default=DEFAULT_BANDWIDTH,
                   help="bandwidth of links the topology gives none for (default %(default)s)")
    p.add_argument("--latency", default=DEFAULT_LATENCY,
                   help="latency of links the topology gives none for (default %(default)s)")
    p.add_argument("--model", default="topocoll", choices=["topocoll", "smpi-default"],
                   help="simulation settings: topocoll (raw link rate, no cross traffic; default) or smpi-default "
                        "(SMPI's calibrated factors and cross traffic); see docs/simgrid.md")
    p.add_argument("--smpi-selector", default="ompi", choices=["ompi", "mpich"],
                   help="which MPI's decision logic SMPI's own MPI_Alltoall (native) follows (default ompi)")
    p.add_argument("--sync-depth", type=int, metavar="D",
                   help="messages a link may carry at once in contention-free schedules (TOPOCOLL_SYNC_DEPTH)")
    add_network_arguments(p, "testbed and packet: ")
    p.add_argument("--mca", action="append", default=[], metavar="KEY=VALUE",
                   help="testbed: extra Open MPI MCA parameter, e.g. btl_tcp_eager_limit=1048576")
    p.add_argument("--skew", metavar="TIME",
                   help="packet: each rank starts each call at a random time up to TIME after the barrier, as ranks "
                        "leave a real barrier apart (the testbed's bench prints how far apart its ranks leave; "
                        "default 0: all at once)")
    p.add_argument("--starts", metavar="FILE",
                   help="packet: instead of --skew, replay the starts --record-starts wrote: each timed call's "
                        "ranks start as the testbed's did in the same algorithm, size and repetition")
    p.add_argument("--record-starts", metavar="FILE",
                   help="testbed: write when each rank started each timed call (seconds after the earliest rank; "
                        "a line 'ALGORITHM BLOCK REPETITION OFFSET...'), for the packet back-end's --starts")
    p.add_argument("--rendezvous", choices=RENDEZVOUS, default=RENDEZVOUS[0],
                   help="packet: how the simulated Open MPI moves a message over its eager limit: put (its TCP "
                        "BTL's default: a header, the receiver's put request, then the whole message) or copy "
                        "(as with --mca btl_tcp_flags=send,inplace,need-ack,need-csum on the testbed: a first "
                        "fragment, an answer, the rest) (default %(default)s)")


def add_backend_arguments(p) -> None:
    """--backend and the launcher after '--' (bench, tune, model pingpong)."""
    p.add_argument("--backend", default="simgrid", choices=["simgrid", "packet", "testbed", "mpirun"],
                   help="where to run: simgrid (SMPI simulation, bandwidth shared as flows; default), packet (ns-3: "
                        "TCP packets, switch-port queues, drops, the executor's own rules; --buffer, --rto-min, "
                        "--host-queue; one rank a machine), testbed (the emulated switched cluster, real TCP and Open MPI; needs root) or "
                        "mpirun (a real cluster through your own launcher, given after '--': -- mpirun -np 16 "
                        "--hostfile hosts, or -- srun -N 16)")
    p.set_defaults(launcher=[])      # cli.py hands over what follows '--' 


def make_backend(args, machines, counts, env: dict | None = None, collective: str = "alltoall"):
    """The back-end the arguments name, set up to run on the topology."""
    env = dict(env or {})
    if args.launcher and args.backend != "mpirun":
        raise TopocollError("invalid argument", f"unexpected arguments {' '.join(args.launcher)!r} (a launcher "
                                                "goes with --backend mpirun)")
    if getattr(args, "record_starts", None) and (args.backend != "testbed" or collective != "alltoall"):
        raise TopocollError("invalid argument", "--record-starts: the testbed's (--backend testbed), for alltoall")
    from ..testbed.net import DEFAULT_FLOW_ORDER
    if args.flow_order != DEFAULT_FLOW_ORDER and args.backend != "testbed":
        raise TopocollError("invalid argument", f"--flow-order {args.flow_order}: the emulated cluster's "
                                                "(--backend testbed); the other back-ends do not set how a flow crosses")
    if args.backend == "packet":
        from ..bench.packet import PacketBackend
        return PacketBackend(args.topology, machines, rate(args.bandwidth), parse_time(args.latency),
                             buffer=args.buffer, rto_min=args.rto_min, host_queue=args.host_queue,
                             sync_depth=args.sync_depth, counts=counts, env=env, collective=collective,
                             skew=getattr(args, "skew", None), seed=getattr(args, "seed", 1),
                             rendezvous=getattr(args, "rendezvous", RENDEZVOUS[0]), starts=getattr(args, "starts", None))
    if getattr(args, "skew", None) or getattr(args, "starts", None) or \
            getattr(args, "rendezvous", RENDEZVOUS[0]) != RENDEZVOUS[0]:
        raise TopocollError("invalid argument", "--skew, --starts and --rendezvous are the packet back-end's "
                                                "(--backend packet)")
    if args.backend == "simgrid":
        from ..bench.simgrid import SimGridBackend
        return SimGridBackend(args.topology, machines, rate(args.bandwidth), parse_time(args.latency), model=args.model,
                              selector=args.smpi_selector, sync_depth=args.sync_depth, counts=counts, env=env,
                              collective=collective)
    if args.backend == "mpirun":
        from ..bench.mpirun import MpirunBackend
        return MpirunBackend(args.topology, machines, args.launcher, rate(args.bandwidth), counts=counts, env=env,
                             collective=collective)
    from ..bench.testbed import TestbedBackend
    from ..testbed.mpi import mca_params
    mca = mca_params(args.mca)
    return TestbedBackend(args.topology, machines, rate(args.bandwidth), args.buffer, args.rto_min, mca,
                          args.sync_depth, counts=counts, env=env, collective=collective, host_queue=args.host_queue,
                          flow_order=args.flow_order)


def tuning_env(path: str | None, machines) -> dict:
    """TOPOCOLL_TUNING for a tuning file, read and checked here first (the
    PMPI library would stop the job on the same problems)."""
    if not path:
        return {}
    from .._core import Tuning
    Tuning.load(path).check_topology(machines)
    return {"TOPOCOLL_TUNING": os.path.abspath(path)}


def setup_args(argv: list[str]):
    """Parsed arguments of `topocoll bench` (for the demo)."""
    import argparse
    p = argparse.ArgumentParser(prog="topocoll bench")
    setup_parser(p)
    return p.parse_args(argv)


#: MPI_Alltoallv's algorithms: the planner, direct schedules of the registry
#: run over the blocks as they are, and the MPI's own
ALLTOALLV_ALL = ["planned", "faraj-yuan", "pairwise", "linear", "rotated", "native"]


def algorithm_list(text: str, collective: str = "alltoall", levels: int = 1) -> list[str]:
    if collective == "alltoallv":
        if text == "all":
            return list(ALLTOALLV_ALL)
        names = [t.strip() for t in text.split(",") if t.strip()]
        direct = [a["name"] for a in algorithms() if a["name"] not in ("bruck", "hierarchical-factor", "local-group")]
        for n in names:
            if n not in ["planned", "native", "auto"] + direct:
                raise TopocollError("invalid argument", f"unknown alltoallv algorithm '{n}'; valid: planned, auto, "
                                                        f"native, {', '.join(direct)}, all")
        return names
    if collective != "alltoall":
        trees = tree_algorithms()
        # the registry's trees, most topology-aware first; two-level once a level it can split at
        known = [x for t in reversed(trees)
                 for x in ([f"two-level:{l}" for l in range(levels)] if t == "two-level" else [t])] + ["native"]
        if text == "all":
            return known
        names = [t.strip() for t in text.split(",") if t.strip()]
        for n in names:
            base, _, lv = n.partition(":")
            if base not in trees + ["native"] or (lv and base != "two-level") or \
                    (lv and not (lv.isdigit() and int(lv) < levels)):
                raise TopocollError("invalid argument", f"unknown {collective} algorithm '{n}'; valid: "
                                                        f"{', '.join(known)}, two-level, all")
        return names
    known = [a["name"] for a in algorithms()] + ["native"]
    if text == "all":
        return known
    known += ["auto", "auto:untuned"]
    names = [t.strip() for t in text.split(",") if t.strip()]
    for n in names:
        if n not in known and not n.startswith("native:"):
            raise TopocollError("invalid argument", f"unknown algorithm '{n}'; valid: {', '.join(known)}, all")
    return names


def layout(topo, ranks_per_machine: int | None):
    """Ranks on each machine, and the tree the ranks are planned on."""
    counts = [ranks_per_machine or topo.slots(r) for r in range(topo.num_machines)]
    if min(counts) < 1:
        raise TopocollError("invalid argument", "--ranks-per-machine must be at least 1")
    return counts, (topo.expand(counts) if max(counts) > 1 else topo)


def levels_of(topo) -> int:
    """Levels of the collectives' group vectors (as the PMPI library reads them)."""
    return max(len(topo.levels(r).split("/")) for r in range(topo.num_machines))


def environment_value(var: str, kwargs: dict) -> str | None:
    """var's value in the environment, refused as its option would refuse
    it but naming the variable; None where it is unset or empty."""
    value = os.environ.get(var)
    if not value:
        return None
    if "choices" in kwargs and value not in kwargs["choices"]:
        raise TopocollError("invalid argument", f"{var}={value!r} in the environment: valid: "
                                                f"{', '.join(kwargs['choices'])}")
    if kwargs.get("type") is int and not value.strip().isdigit():
        raise TopocollError("invalid argument", f"{var}={value!r} in the environment: expected a whole number")
    parse = {"TIME": parse_time, "BYTES": parse_size}.get(kwargs.get("metavar"))
    try:
        if parse:
            parse(value)
    except TopocollError as e:
        raise TopocollError(e.status, f"{var} in the environment: {e}") from None
    return value


def parameter_env(args) -> dict:
    """The PMPI library's variables the options given set; an option not
    given takes its variable from the environment, as the library itself
    would (the back-ends' own defaults, such as the testbed's nap, apply only
    where neither sets it)."""
    env = {}
    for flag, var, kwargs in pmpi_options():
        value = getattr(args, flag[2:].replace("-", "_")) or environment_value(var, kwargs)
        if value:
            env[var] = str(parse_size(value)) if var.endswith(("_SIZE", "_BYTES")) else str(value)
    return env


def plan_topology_file(path: str, machines: Topology) -> str:
    """--plan-topology: a topology file with T's machines in T's order."""
    if not os.path.isfile(path):
        raise TopocollError("i/o error", f"--plan-topology: no file '{path}'")
    plan = load_topology(path)
    a, b = machines.machines, plan.machines
    if a != b:
        diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        raise TopocollError("invalid argument", f"--plan-topology {path}: its machines are not the run's: rank {diff} "
                                                f"is {b[diff] if diff < len(b) else 'missing'} there, "
                                                f"{a[diff] if diff < len(a) else 'missing'} in {machines.name} "
                                                f"({len(b)} and {len(a)} machines)")
    return os.path.abspath(path)


def write_starts(path: str, starts: dict, topology: str, ranks: int) -> None:
    """--record-starts: a line a timed call, read by topocoll-packet --starts."""
    lines = [f"# topocoll bench --record-starts: {topology}, {ranks} ranks; a timed call a line: ALGORITHM BLOCK "
             "REPETITION, then when each rank left the barrier, in seconds after the earliest"]
    for algorithm, calls in starts.items():
        lines += [f"{algorithm} {size} {rep} " + " ".join(f"{x:.6f}" for x in offsets) for size, rep, offsets in calls]
    try:
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
    except OSError as e:
        raise TopocollError("i/o error", f"--record-starts: cannot write '{path}': {e.strerror}") from None


def measure(args) -> harness.Result:
    """Run the benchmark the arguments describe, print its tables, write its
    CSV and figure; the result (for the demo)."""
    machines = load_topology(args.topology)
    counts, topo = layout(machines, args.ranks_per_machine)
    algs = algorithm_list(args.algorithms, args.collective, levels_of(machines))
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    if not sizes:
        raise TopocollError("invalid argument", f"--sizes '{args.sizes}': no size given")
    if args.repetitions < 1:
        raise TopocollError("invalid argument", "--repetitions must be at least 1")
    backend = make_backend(args, machines, counts, parameter_env(args), args.collective)
    try:   # the back-end's files go whatever happens from here (a refusal, Ctrl-C)
        if getattr(args, "plan_topology", None):
            backend.plan_topology_arg = plan_topology_file(args.plan_topology, machines)
        bounds = {}
        if args.collective == "alltoallv":
            from ..common import traffic_of
            if os.path.isfile(args.pattern):
                backend.program_args = ["--matrix", os.path.abspath(args.pattern)]
            else:
                backend.program_args = ["--pattern", args.pattern, "--seed", str(args.seed)]
            for m in sizes:   # the pattern is checked here, before any run
                bounds[m] = traffic_of(args.pattern, topo, str(m), args.seed).bounds(topo, rate(args.bandwidth))["link_seconds"]
        backend.tuning = tuning_env(args.tuning, machines).get("TOPOCOLL_TUNING")
        backend.quiet = bool(getattr(args, "quiet", False))
        if getattr(args, "native_rules", None):
            if not os.path.isfile(args.native_rules):
                raise TopocollError("i/o error", f"--native-rules: no file '{args.native_rules}'")
            backend.native_rules = args.native_rules
        if hasattr(backend, "validate"):   # what the back-end takes, checked before any run
            backend.validate(sizes, args.repetitions, args.warmup)
        print(f"bench: {topo.name}, {machines.num_machines} machines, {topo.num_machines} ranks, backend {backend.name}\n"
              f"  {harness.describe_settings(backend.settings())}", file=sys.stderr)
        result = harness.run(backend, topo, algs, sizes, args.repetitions, args.warmup, quiet=args.quiet)
    finally:
        if hasattr(backend, "close"):
            backend.close()
    result.settings = backend.settings()
    if args.collective == "alltoallv":
        result.pattern, result.bounds = args.pattern, bounds
        result.settings["pattern"] = f"{args.pattern} (seed {args.seed})"
    print(harness.table(result, algs, sizes))
    if hasattr(backend, "summary") and backend.summary():
        print("\n" + backend.summary())
    if "load_average" in result.settings:
        print(f"\nload average (1 min) before and after each algorithm: {result.settings['load_average']} "
              f"on {os.cpu_count()} cores")
    if result.settings.get("start_skew"):
        print(f"ranks left the barrier before each timed call this far apart (median): "
              f"{result.settings['start_skew']} (the packet back-end's --skew models it; --record-starts keeps every "
              "rank's start, which its --starts replays)")
    if getattr(args, "record_starts", None):
        write_starts(args.record_starts, backend.starts, args.topology, topo.num_machines)
        print(f"\nwrote {args.record_starts}")
    if args.csv:
        harness.write_csv(result, args.csv)
        print(f"\nwrote {args.csv}")
    if args.plot:
        harness.plot(result, algs, sizes, args.plot)
        print(f"wrote {args.plot}")
    return result


def run(args):
    measure(args)
    return 0
