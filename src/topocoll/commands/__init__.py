"""One module per command, each with ``description``, ``setup_parser`` and ``run``."""

from . import algorithms, config, demo, generate, plan, topology, verify

COMMANDS = {
    "topology": topology,
    "plan": plan,
    "verify": verify,
    "generate": generate,
    "algorithms": algorithms,
    "config": config,
    "demo": demo,
}
