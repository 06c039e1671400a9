"""Helpers shared by the commands: loading topologies, rates, output."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ._core import (Topology, TopocollError, Traffic, default, format_rate, format_time, hostlist_expand, parse_rate,
                    parse_size)

# the core's defaults (topocoll.h), as option texts: "100Mbit", "50us"
DEFAULT_BANDWIDTH = format_rate(default("bandwidth"))
DEFAULT_LATENCY = format_time(default("latency"))


TOPOLOGY_HELP = ("topology: a file (Slurm topology.conf or topology.yaml, scontrol show topology's text, MPICH's "
                 "coordinates file, ibnetdiscover's output or topocoll YAML; told by contents), or a synthetic "
                 "spec: N, star:a,b,.., chain:a,b,.., tree:f1,..,m")


class _LoadOption(argparse.Action):
    """--topology-name, --node-name-map: kept in the environment variable the
    loader (and the ranks' PMPI library) reads."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        os.environ[self.const] = values


def add_topology_argument(parser, help_extra: str = "") -> None:
    parser.add_argument("topology", metavar="T", help=TOPOLOGY_HELP + help_extra)
    parser.add_argument("--topology-name", metavar="NAME", action=_LoadOption, const="TOPOCOLL_TOPOLOGY_NAME",
                        help="a Slurm topology.yaml's topology to read (default: its cluster default, else its only "
                             "one; TOPOCOLL_TOPOLOGY_NAME)")
    parser.add_argument("--node-name-map", metavar="FILE", action=_LoadOption, const="TOPOCOLL_NODE_NAME_MAP",
                        help="ibnetdiscover: host names by adapter GUID, lines 'GUID name' (default: the first word "
                             "of each adapter's description; TOPOCOLL_NODE_NAME_MAP)")


def load_topology(arg: str) -> Topology:
    return Topology.load(arg)


def rate(text: str) -> float:
    return parse_rate(text)


def emit_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")


def write_json(doc, path: str | None, indent: int = 2) -> None:
    """A JSON document to a file (stdout when path is None)."""
    if not path:
        emit_json(doc)
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=indent)
            f.write("\n")
    except OSError as e:
        raise TopocollError("i/o error", f"cannot write '{path}': {e.strerror}") from None


def read_json(path: str, what: str):
    """A JSON document from a file; what names the kind of file in errors."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise TopocollError("i/o error", f"cannot read {what} '{path}': {e.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TopocollError("parse error", f"{path}: not a {what} file: {e}") from None


def save_figure(fig, path: str) -> None:
    """Write a matplotlib figure as PNG and close it."""
    import matplotlib.pyplot as plt
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise TopocollError("i/o error", f"cannot write '{path}': {e.strerror}") from None
    finally:
        plt.close(fig)


def add_actions(parser):
    """Sub-actions of a command (``topocoll topology show``...): each action's
    parser sets ``_action``; the command's ``run`` is ``run_action``."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    return sub


def run_action(args):
    return args._action(args)


def add_plan_arguments(parser) -> None:
    """Options of the algorithms' parameters (the registry says which
    algorithm reads which) and of several ranks a machine."""
    parser.add_argument("--ranks-per-machine", type=int, default=1, metavar="N",
                        help="N ranks on every machine: each machine is planned as a switch holding its ranks "
                             "(default 1)")
    parser.add_argument("--segments", type=int, default=1, metavar="K",
                        help="sync-shuffle, group-shuffle: cut each block into K segments (default 1)")
    parser.add_argument("--fanout", type=int, default=0, metavar="W",
                        help=f"group-shuffle: partners a round (default {default('fanout'):.0f})")
    parser.add_argument("--clusters", metavar="LABELS",
                        help="local-group: the cluster of each rank, comma separated in rank order "
                             "(hostlists allowed); default: the parts left when the bottleneck links are cut")


def plan_topology(args) -> Topology:
    """The topology named on the command line, with --ranks-per-machine applied."""
    topo = load_topology(args.topology)
    n = getattr(args, "ranks_per_machine", 1)
    if n < 1:
        raise TopocollError("invalid argument", f"--ranks-per-machine {n}: at least 1")
    return topo.expand(n) if n > 1 else topo


def plan_options(args) -> dict:
    """Keyword arguments of Schedule.plan_with from the command line."""
    opts = {"segments": args.segments, "fanout": args.fanout}
    if args.segments < 1 or args.fanout < 0:
        raise TopocollError("invalid argument", "--segments must be >= 1 and --fanout >= 1")
    if args.clusters:
        labels = hostlist_expand(args.clusters)
        opts["clusters"] = [labels.index(x) for x in labels]
    return opts


def add_matrix_arguments(parser, what: str, required: bool = False) -> None:
    """--matrix FILE|PATTERN, --mean-block and --seed: unequal blocks."""
    parser.add_argument("--matrix", metavar="FILE|PATTERN", required=required,
                        help="unequal blocks (MPI_Alltoallv): a traffic matrix file (one line a sending rank, its "
                             "blocks' bytes in receiver order) or a pattern (uniform, zipf:S, hot:K, sparse:F, "
                             f"random); {what}")
    parser.add_argument("--mean-block", default="128K", metavar="SIZE",
                        help="with a pattern: the mean block (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="with a pattern: its random seed (default %(default)s)")


def traffic_of(spec: str, topo: Topology, mean_block: str, seed: int) -> Traffic:
    """A matrix file, else a pattern over the topology's ranks (the core
    knows the patterns' names)."""
    if os.path.isfile(spec):
        return Traffic.load(spec)
    try:
        return Traffic.pattern(spec, topo.num_machines, parse_size(mean_block), seed)
    except TopocollError as e:
        if not str(e).startswith("unknown pattern"):
            raise
        raise TopocollError("i/o error", f"--matrix: no file '{spec}', and {e}") from None
