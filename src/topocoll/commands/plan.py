"""``topocoll plan``: plan an all-to-all schedule for a topology."""

from __future__ import annotations

import resource
import sys
import time

from .._core import Network, Schedule, TopocollError, algorithms, default, parse_size
from ..common import (DEFAULT_BANDWIDTH, add_matrix_arguments, add_plan_arguments, add_topology_argument, emit_json,
                      plan_options, plan_topology, rate, traffic_of)

description = "plan an all-to-all schedule for a topology and write it as JSON"


def setup_parser(p):
    add_topology_argument(p)
    names = [a["name"] for a in algorithms()]
    p.add_argument("-a", "--algorithm", default="faraj-yuan", choices=names,
                   help="algorithm (default %(default)s; see 'topocoll algorithms')")
    p.add_argument("-o", "--output", help="write the schedule JSON here (default: standard output)")
    p.add_argument("--check", action="store_true",
                   help="plan and verify without writing the schedule; exit 1 if the algorithm's promises fail")
    p.add_argument("--json", action="store_true",
                   help='print a summary as JSON: {"phases", "load", "contention_free", "messages", "seconds", ...}')
    p.add_argument("--syncs", action="store_true",
                   help="add the pairwise synchronisations that keep phases apart (Faraj & Yuan, section 5) "
                        "and report their counts before and after removing redundant ones")
    p.add_argument("--sync-depth", type=int, default=1, metavar="D",
                   help="with --syncs: a link may carry D messages at once (1, the paper's: strict phases)")
    p.add_argument("--no-verify", action="store_true", help="skip the verifier when writing a schedule")
    p.add_argument("--rank", type=int, metavar="R",
                   help="plan only rank R's part, as the PMPI library does above "
                        f"{default('plan_whole_max_ranks'):.0f} ranks (TOPOCOLL_PLAN): its "
                        "messages, sent or received, in their phases, and with --syncs the syncs it waits for or "
                        "signals; --json adds seconds and peak_bytes (faraj-yuan)")
    add_plan_arguments(p)
    add_matrix_arguments(p, "plans MPI_Alltoallv's exchange of those blocks (the unequal-block planner: contention-"
                            "free steps, blocks cut into pieces), verifies it and prints steps, messages, the model's "
                            "time and the link-load bound")
    p.add_argument("--piece-size", default="0", metavar="SIZE",
                   help="with --matrix: pieces of at most SIZE bytes (default 0: the planner's choice)")
    p.add_argument("--bandwidth", default=DEFAULT_BANDWIDTH,
                   help="rate of links the topology gives none (default %(default)s): with --matrix for the model "
                        "and bound, and for link capacities (capacitated)")


def run_matrix(args, topo) -> int:
    """topocoll plan T --matrix D: the unequal-block planner, verified."""
    if args.rank is not None or args.output:
        raise TopocollError("invalid argument", "--matrix prints a summary (text or --json); --rank and -o are for "
                                                "all-to-all schedules of equal blocks")
    d = traffic_of(args.matrix, topo, args.mean_block, args.seed)
    net = Network(default_rate=rate(args.bandwidth))
    t0 = time.perf_counter()
    sched, info = d.plan(topo, piece_bytes=parse_size(args.piece_size), execute=args.syncs,
                         sync_depth=args.sync_depth, network=net)
    t_plan = time.perf_counter() - t0
    r = d.verify(sched, topo, net)
    t_verify = time.perf_counter() - t0 - t_plan
    bound = d.bounds(topo, rate(args.bandwidth))
    summary = {"matrix": args.matrix, "machines": topo.num_machines, "algorithm": sched.algorithm,
               "uniform": info["uniform"], "piece_bytes": info["piece_bytes"], "candidates": info["candidates"],
               "steps": r["steps"], "piece_load": r["piece_load"], "messages": r["messages"],
               "complete": r["complete"], "contention_free": r["contention_free"],
               "predicted_seconds": r["predicted_seconds"], "link_bound_seconds": bound["link_seconds"],
               "port_bound_seconds": bound["port_seconds"], "syncs": len(sched.syncs()) if args.syncs else None,
               "plan_seconds": round(t_plan, 6), "verify_seconds": round(t_verify, 6)}
    if args.json:
        emit_json(summary)
    else:
        pieces = "whole blocks" if not info["piece_bytes"] or info["uniform"] else f"pieces of {info['piece_bytes']} bytes"
        print(f"{args.matrix} on {topo.name}: {sched.algorithm}{' (uniform: faraj-yuan' + chr(39) + 's phases)' if info['uniform'] else ''}, "
              f"{r['steps']} steps (the links' piece load: {r['piece_load']}), {r['messages']} messages, {pieces}; "
              f"verified: " + ("complete" if r["complete"] else "INCOMPLETE") +
              (", contention-free" if r["contention_free"] else ", with contention") +
              (f", {summary['syncs']} syncs" if args.syncs else ""))
        print(f"  model {r['predicted_seconds'] * 1e3:.2f} ms, link-load bound {bound['link_seconds'] * 1e3:.2f} ms "
              f"(the model's time reaches {100 * bound['link_seconds'] / r['predicted_seconds']:.1f} % of it), "
              f"single-port bound {bound['port_seconds'] * 1e3:.2f} ms; planned in {t_plan * 1e3:.1f} ms, verified in {t_verify * 1e3:.1f} ms"
              if r["predicted_seconds"] else "  nothing to send")
    if not r["complete"] or not r["contention_free"]:
        raise TopocollError("verification failed", f"{args.matrix} on {topo.name}: {r['problem']}")
    return 0


def peak_rss_growth(before: int) -> int:
    """Bytes the process's peak resident memory (VmHWM: rusage's ru_maxrss
    carries a parent's peak across exec) grew above `before`, its resident
    memory when planning started; 0 while below an earlier peak."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    try:
        with open("/proc/self/status") as f:
            peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    return max(0, peak - before)


def resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_rank(args, topo) -> int:
    """topocoll plan T --rank R: one rank's part, planned without the whole."""
    if args.check:
        raise TopocollError("invalid argument", "--rank plans one rank's part; --check verifies a whole schedule "
                                                "(the tests join every rank's part and verify that)")
    if args.sync_depth < 1:
        raise TopocollError("invalid argument", f"--sync-depth {args.sync_depth}: at least 1 (one message a link at a time)")
    if not 0 <= args.rank < topo.num_machines:
        raise TopocollError("invalid argument", f"--rank {args.rank}: the topology has ranks 0-{topo.num_machines - 1}")
    before = resident_bytes()
    t0 = time.perf_counter()
    part = Schedule.plan_rank(args.algorithm, topo, args.rank, args.sync_depth)
    seconds = time.perf_counter() - t0
    peak = peak_rss_growth(before)
    syncs = len(part.syncs())
    if not args.syncs:
        part.set_syncs([])
    if args.output:
        part.write_json(args.output, topo)
    elif not args.json:
        sys.stdout.write(part.write_json(None, topo))
    mine = [m for m in part.messages() if args.rank in m[1:]]
    summary = {"algorithm": args.algorithm, "machines": topo.num_machines, "rank": args.rank,
               "phases": part.num_phases, "load": topo.alltoall_load,
               "sends": sum(1 for m in mine if m[1] == args.rank), "receives": sum(1 for m in mine if m[2] == args.rank),
               "syncs": syncs, "seconds": round(seconds, 6), "peak_bytes": peak}
    if args.json:
        emit_json(summary)
    elif args.output:
        print(f"{args.algorithm} on {topo.name}, rank {args.rank}'s part: {summary['sends']} sends and "
              f"{summary['receives']} receives in {part.num_phases} phases, {syncs} syncs; {seconds:.3f} s; "
              f"wrote {args.output}", file=sys.stderr)
    return 0


def run(args):
    topo = plan_topology(args)
    if args.matrix:
        return run_matrix(args, topo)
    if args.rank is not None:
        return run_rank(args, topo)
    t0 = time.perf_counter()
    sched = Schedule.plan_with(args.algorithm, topo, **plan_options(args), bandwidth=rate(args.bandwidth))
    t_plan = time.perf_counter() - t0
    report = None
    if args.check or not args.no_verify:
        report = sched.verify(topo)
    t_verify = time.perf_counter() - t0 - t_plan
    sync_stats = None
    if args.syncs:
        t1 = time.perf_counter()
        sync_stats = sched.add_syncs(topo, args.sync_depth)
        sync_stats["seconds"] = round(time.perf_counter() - t1, 4)
        if report is not None:   # the core's sync verifier: what the executor would run is safe
            checked = sched.verify_syncs(topo, args.sync_depth)
            sync_stats.update(ordered=checked["ordered"], acyclic=checked["acyclic"])
            if not checked["ordered"] or not checked["acyclic"]:
                report["problem"] = report["problem"] or checked["problem"]
                sync_bad = (["a shared link left unordered"] if not checked["ordered"] else []) + \
                           (["the syncs can deadlock"] if not checked["acyclic"] else [])
            else:
                sync_bad = []
    if not args.check:
        if args.output:
            sched.write_json(args.output, topo)
        elif not args.json:
            sys.stdout.write(sched.write_json(None, topo))
    seconds = time.perf_counter() - t0
    bad = list(report["broken"]) if report else []
    if sync_stats and "ordered" in sync_stats:
        bad += sync_bad
    summary = {
        "algorithm": args.algorithm,
        "machines": topo.num_machines,
        "phases": sched.num_steps,
        "load": topo.alltoall_load,
        "messages": sched.num_ops,
        "contention_free": report["contention_free"] if report else None,
        "complete": report["complete"] if report else None,
        "optimal": report["optimal"] if report else None,
        "seconds": round(seconds, 4),
        "plan_seconds": round(t_plan, 4),
        "verify_seconds": round(t_verify, 4) if report else None,
    }
    if report:   # links of unequal rates: messages at once a link, floor(rate / slowest host link)
        summary.update(capacitated_load=report["capacitated_load"], within_capacity=report["within_capacity"],
                       capacitated_optimal=report["capacitated_optimal"])
    if sync_stats:
        summary["syncs"] = sync_stats
    if args.json:
        emit_json(summary)
    elif args.check or args.output:
        state = ("verified: complete" + (", contention-free" if report["contention_free"] else ", with contention")
                 + (", optimal" if report["optimal"] else "")) if report else "not verified"
        if report and report["capacitated_load"] != topo.alltoall_load:
            state += (f"; capacitated bound {report['capacitated_load']}: "
                      + ("within capacity" if report["within_capacity"] else "over capacity")
                      + (", at the bound" if report["capacitated_optimal"] else ""))
        print(f"{args.algorithm} on {topo.name}: {sched.num_steps} phases (load {topo.alltoall_load}), "
              f"{sched.num_ops} messages, {state}; {seconds:.3f} s"
              + (f"; wrote {args.output}" if args.output and not args.check else ""), file=sys.stderr)
        if sync_stats:
            print(f"syncs: {sync_stats['sharing_pairs']} pairs of messages share a link (the paper's dependence "
                  f"graph), {sync_stats['candidates']} consecutive on a link from different senders, "
                  f"{sync_stats['kept']} kept after removing those implied by program order and other syncs; "
                  f"{sync_stats['seconds']:.3f} s"
                  + ("; verified: every shared link ordered, no deadlock"
                     if sync_stats.get("ordered") and sync_stats.get("acyclic") else ""), file=sys.stderr)
    if bad:
        raise TopocollError("verification failed", f"{args.algorithm} on {topo.name}: " + "; ".join(bad)
                            + (f" ({report['problem']})" if report["problem"] else ""))
    return 0
