"""One module per command, each with ``description``, ``setup_parser`` and ``run``."""

from . import algorithms, config, demo, plan, topology, verify

COMMANDS = {
    "topology": topology,
    "plan": plan,
    "verify": verify,
    "algorithms": algorithms,
    "config": config,
    "demo": demo,
}
