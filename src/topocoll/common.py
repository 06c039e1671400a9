"""Helpers shared by the commands: loading topologies, rates, output."""

from __future__ import annotations

import json
import sys

from ._core import Topology, parse_rate

DEFAULT_BANDWIDTH = "100Mbit"   # the paper's cluster (INTERFACES.md)
DEFAULT_LATENCY = "50us"


def add_topology_argument(parser, help_extra: str = "") -> None:
    parser.add_argument(
        "topology",
        metavar="T",
        help="topology: a Slurm topology.conf or a topocoll YAML file (told by extension or contents), "
        "or a synthetic spec: N, star:a,b,.., chain:a,b,.., tree:f1,..,m" + help_extra,
    )


def load_topology(arg: str) -> Topology:
    return Topology.load(arg)


def rate(text: str) -> float:
    return parse_rate(text)


def emit_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")


def add_actions(parser):
    """Sub-actions of a command (``topocoll topology show``...): each action's
    parser sets ``_action``; the command's ``run`` is ``run_action``."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    return sub


def run_action(args):
    return args._action(args)
