"""One module per command, each with ``description``, ``setup_parser`` and ``run``."""

from . import algorithms, bench, config, demo, generate, plan, simgrid, testbed, topology, verify

COMMANDS = {
    "topology": topology,
    "plan": plan,
    "verify": verify,
    "generate": generate,
    "bench": bench,
    "simgrid": simgrid,
    "testbed": testbed,
    "algorithms": algorithms,
    "config": config,
    "demo": demo,
}
