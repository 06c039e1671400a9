"""One module per command, each with ``description``, ``setup_parser`` and ``run``."""

from . import algorithms, bench, config, demo, generate, model, plan, simgrid, testbed, topology, tune, verify

COMMANDS = {
    "topology": topology,
    "plan": plan,
    "verify": verify,
    "generate": generate,
    "bench": bench,
    "model": model,
    "tune": tune,
    "simgrid": simgrid,
    "testbed": testbed,
    "algorithms": algorithms,
    "config": config,
    "demo": demo,
}
