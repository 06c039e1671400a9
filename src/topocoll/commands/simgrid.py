"""``topocoll simgrid platform``: a SimGrid platform file for a topology."""

from __future__ import annotations

from pathlib import Path

from .._core import TopocollError, parse_time
from ..bench.platform import hostfile, platform_xml
from ..common import DEFAULT_BANDWIDTH, DEFAULT_LATENCY, add_actions, add_topology_argument, load_topology, rate, run_action

description = "write a SimGrid platform (and hostfile) for a topology"


def setup_parser(p):
    sub = add_actions(p)
    plat = sub.add_parser("platform", help="machines as hosts, switches as routers, split-duplex links, tree routes",
                          description="Write a SimGrid v4.1 platform: machines as hosts, switches as routers, "
                          "every link split-duplex with its bandwidth and latency, routes along the tree "
                          "(neighbour routes composed by Floyd routing).")
    add_topology_argument(plat)
    plat.add_argument("-o", "--output", required=True, metavar="PLATFORM.xml")
    plat.add_argument("--hostfile", help="also write the hostfile (default: PLATFORM.hosts beside it)")
    plat.add_argument("--bandwidth", default=DEFAULT_BANDWIDTH, help="for links given none (default %(default)s)")
    plat.add_argument("--latency", default=DEFAULT_LATENCY, help="for links given none (default %(default)s)")
    plat.set_defaults(_action=run_platform)


run = run_action


def run_platform(args):
    topo = load_topology(args.topology)
    out = Path(args.output)
    hosts = Path(args.hostfile) if args.hostfile else out.with_suffix(".hosts")
    try:
        out.write_text(platform_xml(topo, rate(args.bandwidth), parse_time(args.latency)))
        hosts.write_text(hostfile(topo))
    except OSError as e:
        raise TopocollError("i/o error", f"cannot write: {e}") from None
    print(f"wrote {out} and {hosts} ({topo.num_machines} hosts, {topo.num_switches} routers)")
    return 0
