"""SimGrid platform files for a topology.

Machines become hosts, switches routers, and every link a split-duplex link
(each direction its own bandwidth, as full-duplex Ethernet) with the
topology's bandwidth and latency.  Only the routes between neighbours are
written; the zone's Floyd routing composes them, so every route follows the
tree and no path is computed here.
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

from .._core import Topology


def link_id(child: str, parent: str) -> str:
    return f"{child}--{parent}"


def platform_xml(topo: Topology, default_bandwidth: float, default_latency: float) -> str:
    """The platform (SimGrid v4.1 XML) for the topology.  Links whose file
    gives no bandwidth or latency get the defaults (bit/s, seconds)."""
    out = [
        "<?xml version='1.0'?>",
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
        f"<!-- topology {topo.name}: {topo.num_machines} machines, {topo.num_switches} switches; "
        "written by topocoll -->",
        '<platform version="4.1">',
        f'  <zone id={quoteattr("topocoll-" + (topo.name or "tree"))} routing="Floyd">',
    ]
    for m in topo.machines:
        out.append(f"    <host id={quoteattr(m)} speed=\"1Gf\"/>")
    for s in topo.switches:
        out.append(f"    <router id={quoteattr(s)}/>")
    links = topo.links()
    for l in links:
        bw = l["bandwidth"] or default_bandwidth
        lat = l["latency"] or default_latency
        out.append(f"    <link id={quoteattr(link_id(l['child'], l['parent']))} bandwidth=\"{bw:.0f}bps\" "
                   f"latency=\"{lat * 1e6:.6g}us\" sharing_policy=\"SPLITDUPLEX\"/>")
    for l in links:
        lid = quoteattr(link_id(l["child"], l["parent"]))
        for src, dst, direction in ((l["child"], l["parent"], "UP"), (l["parent"], l["child"], "DOWN")):
            out.append(f"    <route src={quoteattr(src)} dst={quoteattr(dst)} symmetrical=\"NO\">"
                       f"<link_ctn id={lid} direction=\"{direction}\"/></route>")
    out += ["  </zone>", "</platform>", ""]
    return "\n".join(out)


def hostfile(topo: Topology, counts: list[int] | None = None) -> str:
    """One line per rank, machine by machine: counts[i] (default: its slots)
    ranks on machine i."""
    counts = counts or [topo.slots(r) for r in range(topo.num_machines)]
    return "".join(f"{m}\n" * counts[r] for r, m in enumerate(topo.machines))
