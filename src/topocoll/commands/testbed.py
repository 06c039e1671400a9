"""``topocoll testbed up|down|status|run``: the emulated switched cluster."""

from __future__ import annotations

import sys

from ..common import add_actions, add_topology_argument, emit_json, load_topology, rate, run_action


def add_network_arguments(p, prefix=""):
    """The testbed's network options, for `testbed up` and `bench --backend testbed`."""
    from ..testbed.net import DEFAULT_FLOW_ORDER, DEFAULT_HOST_QUEUE, FLOW_ORDERS, HOST_QUEUES
    p.add_argument("--buffer", type=int, default=100, metavar="PACKETS",
                   help=prefix + "switch-port queue in packets (default %(default)s)")
    p.add_argument("--rto-min", help=prefix + "TCP minimum retransmission timeout on every route, e.g. 10ms "
                                     "(default: the kernel's, 200 ms)")
    p.add_argument("--host-queue", default=DEFAULT_HOST_QUEUE, choices=list(HOST_QUEUES),
                   help=prefix + "a machine's egress queue: sparse-first serves a queue per peer round-robin, "
                   "a peer with little queued (ACKs, MPI's syncs) first, keeping each connection's packets in order, "
                   "as a stock Debian host's fq_codel does; short-first (testbed only) sends any packet under 128 "
                   "bytes ahead of bulk data, so a connection's ACKs overtake its own data (the testbed's default "
                   "before 2026-11-27); fifo, one queue (default %(default)s)")
    p.add_argument("--flow-order", default=DEFAULT_FLOW_ORDER, choices=list(FLOW_ORDERS),
                   help=prefix + "kept: each veth steers a flow's frames to one CPU by the flow's hash (RPS), so a "
                   "flow crosses the emulated network in order, as through a switch; any: the kernel's default, "
                   "where two CPUs can swap a flow's frames (the testbed's only behaviour before 2026-12-05; "
                   "the packet back-end's tree always keeps flows in order) (default %(default)s)")


description = "bring up an emulated switched cluster (network namespaces, shaped links) and run MPI on it"


def setup_parser(p):
    sub = add_actions(p)
    up = sub.add_parser("up", help="create the namespaces, bridges, veth links and shaping for a topology",
                        description="One network namespace per machine (hostname = the machine's name) and per "
                        "switch (a bridge), a veth pair per link, each direction shaped with tbf to the link's "
                        "rate with a finite switch-port queue. Needs root.")
    add_topology_argument(up)
    up.add_argument("--rate", default="100mbit", help="rate of links the topology gives none for (default %(default)s)")
    add_network_arguments(up)
    up.add_argument("--congestion", default="cubic", help="TCP congestion control per route (default %(default)s)")
    up.set_defaults(_action=run_up)
    down = sub.add_parser("down", help="remove everything the testbed made (also after a crash)")
    down.set_defaults(_action=run_down)
    st = sub.add_parser("status", help="what is up")
    st.add_argument("--json", action="store_true")
    st.set_defaults(_action=run_status)
    r = sub.add_parser("run", help="run an MPI program on the testbed: topocoll testbed run -- PROGRAM ARGS",
                       description="Run PROGRAM with Open MPI's mpirun from the first machine's namespace, one "
                       "rank per machine slot, TCP only. TOPOCOLL_* and LD_PRELOAD are passed to the ranks.")
    r.add_argument("--np", type=int, help="ranks (default: every machine slot)")
    r.add_argument("--mca", action="append", default=[], metavar="KEY=VALUE", help="extra Open MPI MCA parameter")
    r.add_argument("program", nargs="+", metavar="PROGRAM", help="program and its arguments (after --)")
    r.set_defaults(_action=run_run)


run = run_action


def run_up(args):
    from ..testbed import net
    topo = load_topology(args.topology)

    def progress(k, n):
        sys.stderr.write(f"\rtestbed: link {k}/{n}")
        if k == n:
            sys.stderr.write("\n")

    record = net.up(topo, args.topology, rate(args.rate), args.buffer, args.rto_min, args.congestion, progress,
                    args.host_queue, args.flow_order)
    print(f"testbed up: {len(record['machines'])} machines, {len(record['switches'])} switches, "
          f"{args.rate} links, {args.buffer}-packet switch ports, {args.host_queue} host queues, "
          f"flow order {args.flow_order}, {args.congestion}, "
          f"RTO min {record['rto_min']}")
    return 0


def run_down(args):
    from ..testbed import net
    removed = net.down()
    print(f"testbed down: removed {len(removed)} namespaces" if removed else "testbed down: nothing was up")
    return 0


def run_status(args):
    from ..testbed import net
    record = net.status()
    if args.json:
        emit_json(record)
        return 0
    if not record:
        print("no testbed is up")
        return 1
    if "machines" not in record:
        print(f"stray namespaces (run 'topocoll testbed down'): {', '.join(record['stray_namespaces'])}")
        return 1
    state = "up" if record["up"] else f"BROKEN (missing {', '.join(record['missing'])})"
    print(f"testbed {state}: {record['name']} ({len(record['machines'])} machines, {len(record['switches'])} "
          f"switches), {record['rate_bps'] / 1e6:g} Mbit/s, {record['buffer_packets']}-packet ports, "
          f"{record['host_queue']} host queues, flow order {record['flow_order']}, "
          f"{record['congestion']}, RTO min {record['rto_min']}, since {record['created']}")
    return 0 if record["up"] else 1


def run_run(args):
    import os
    from ..testbed import mpi
    env = {k: v for k, v in os.environ.items() if k.startswith("TOPOCOLL_") or k == "LD_PRELOAD"}
    proc = mpi.run(args.program, env, np=args.np, mca=mpi.mca_params(args.mca), capture=False)
    return proc.returncode
