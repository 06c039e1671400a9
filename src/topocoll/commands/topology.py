"""``topocoll topology show|convert``: inspect and convert topology files."""

from __future__ import annotations

import sys

from .._core import TopocollError, format_rate, format_time, formats
from ..common import (DEFAULT_BANDWIDTH, add_actions, add_matrix_arguments, add_topology_argument, emit_json, load_topology,
                      rate, run_action, traffic_of)

description = "show a topology (bottleneck, load, peak bound, root) or convert it between formats"


def setup_parser(p):
    sub = add_actions(p)
    show = sub.add_parser("show", help="machines, switches, bottleneck links, load, peak bound, root, subtrees",
                          description="Show a topology: machines, switches, bottleneck links, the all-to-all "
                          "load, the peak aggregate throughput bound, the Faraj-Yuan root and its subtrees.")
    add_topology_argument(show)
    show.add_argument("--bandwidth", default=DEFAULT_BANDWIDTH,
                      help="bandwidth of links the file gives none for (default %(default)s)")
    show.add_argument("--json", action="store_true", help="print as JSON")
    add_matrix_arguments(show, "prints its link-load and single-port time bounds")
    show.set_defaults(_action=run_show)
    conv = sub.add_parser("convert", help="write a topology in another format",
                          description="Convert a topology file: read any format topocoll reads, write topocoll "
                          "YAML, Slurm topology.conf (slurm), Slurm topology.yaml (slurm-yaml) or MPICH's "
                          "coordinates (mpich), where the target can say it (topology.yaml has no link rates, "
                          "topology.conf one a switch, MPICH's coordinates three levels). The output format is "
                          "--to, or told by the output file's name.")
    add_topology_argument(conv)
    conv.add_argument("-o", "--output", help="output file (default: standard output)")
    conv.add_argument("--to", choices=[f for f in formats() if f not in ("auto", "ibnetdiscover")],
                      help="output format (default: from -o: .conf slurm, topology.yaml slurm-yaml, else yaml)")
    conv.set_defaults(_action=run_convert)


run = run_action


def describe(topo, default_bw: float) -> dict:
    """Everything ``show`` reports, as a dict (used by --json and the demo)."""
    links = topo.links()
    load = topo.alltoall_load
    bottlenecks = [l for l in links if l["load"] == load and load > 0]
    info = {
        "name": topo.name,
        "machines": topo.machines,
        "switches": topo.switches,
        "links": links,
        "load": load,
        "bottleneck_links": [
            {"link": f"{l['child']}-{l['parent']}", "machines_each_side": [l["machines_below"],
                                                                         topo.num_machines - l["machines_below"]]}
            for l in bottlenecks
        ],
        "default_bandwidth": default_bw,
        "note": topo.note,
        "peak_throughput_bps": topo.peak_throughput(default_bw),
    }
    cap = topo.capacitated(default_bw)
    info["capacitated"] = {"load": cap["load"], "link": cap["link"], "peak_throughput_bps": cap["peak_bps"],
                           "capacities": {f"{l['child']}-{l['parent']}": c for l, c in zip(links, cap["capacities"])
                                          if c > 1}}
    if topo.num_machines >= 2:
        info.update(topo.aapc_root())
    return info


def run_show(args):
    topo = load_topology(args.topology)
    info = describe(topo, rate(args.bandwidth))
    if args.matrix:
        info["traffic"] = {"matrix": args.matrix,
                           **traffic_of(args.matrix, topo, args.mean_block, args.seed).bounds(topo, rate(args.bandwidth))}
    if args.json:
        emit_json(info)
        return 0
    m = info["machines"]
    print(f"topology {info['name']}")
    print(f"  machines: {len(m)} ({m[0]}{' .. ' + m[-1] if len(m) > 1 else ''}), switches: {len(info['switches'])}")
    bws = sorted({l["bandwidth"] for l in info["links"]})
    lats = sorted({l["latency"] for l in info["links"]})
    if info["links"]:
        print("  links: " + ", ".join(format_rate(b) if b else f"{args.bandwidth} (default)" for b in bws)
              + "; latency " + ", ".join(format_time(t) if t else "not given" for t in lats))
    if info["bottleneck_links"]:
        shown = info["bottleneck_links"][:6]
        more = len(info["bottleneck_links"]) - len(shown)
        print(f"  bottleneck links (load {info['load']} messages each way): "
              + ", ".join(f"{b['link']} ({b['machines_each_side'][0]}|{b['machines_each_side'][1]})" for b in shown)
              + (f" and {more} more" if more > 0 else ""))
    print(f"  all-to-all load: {info['load']} -> an optimal schedule has {info['load']} contention-free phases")
    print(f"  peak aggregate throughput: {info['peak_throughput_bps'] / 1e6:.1f} Mbit/s")
    if info["note"]:
        print(f"  read as a tree: {info['note']}")
    c = info["capacitated"]
    if c["capacities"]:
        fast = sorted(c["capacities"].items(), key=lambda kv: -kv[1])[:6]
        print(f"  links carrying several messages at once (rate / slowest host link): "
              + ", ".join(f"{k} x{v}" for k, v in fast) + (" ..." if len(c["capacities"]) > 6 else ""))
        print(f"  capacitated bound: {c['load']} phases (link {c['link']}), peak "
              f"{c['peak_throughput_bps'] / 1e6:.1f} Mbit/s")
    if "root" in info:
        subtrees = info["subtrees"]
        sizes = ", ".join(f"{s['via']}:{len(s['machines'])}" for s in subtrees[:12])
        more = f" and {len(subtrees) - 12} more" if len(subtrees) > 12 else ""
        print(f"  root: {info['root']}; subtrees (largest first, via:machines): {sizes}{more}")
    if "traffic" in info:
        t = info["traffic"]
        print(f"  traffic {t['matrix']}: {t['total_bytes']} bytes in all")
        if "link" in t:
            print(f"    link-load bound: {format_time(t['link_seconds'])} (link {t['link']} carries {t['link_bytes']} "
                  "bytes)")
        if "port_rank" in t:
            print(f"    single-port bound: {format_time(t['port_seconds'])} (rank {t['port_rank']} "
                  f"{'sends' if t['port_sends'] else 'receives'} {t['port_bytes']} bytes)")
    return 0


def run_convert(args):
    topo = load_topology(args.topology)
    fmt = args.to
    if fmt is None and args.output:
        base = args.output.rsplit("/", 1)[-1]
        fmt = "slurm" if base.endswith(".conf") else "slurm-yaml" if base == "topology.yaml" else "yaml"
    fmt = fmt or "yaml"
    text = topo.write(fmt)
    if args.output:
        try:
            with open(args.output, "w") as f:
                f.write(text)
        except OSError as e:
            raise TopocollError("i/o error", f"cannot write '{args.output}': {e.strerror}") from None
    else:
        sys.stdout.write(text)
    return 0
