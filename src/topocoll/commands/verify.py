"""``topocoll verify``: check a schedule JSON file against a topology."""

from __future__ import annotations

from .._core import Schedule
from ..common import add_topology_argument, emit_json, load_topology

description = "verify a schedule JSON against a topology: completeness, contention per phase, phase count"


def setup_parser(p):
    add_topology_argument(p)
    p.add_argument("schedule", metavar="SCHEDULE.json", help="schedule written by 'topocoll plan -o'")
    p.add_argument("--json", action="store_true", help="print the verifier's report as JSON")


def run(args):
    topo = load_topology(args.topology)
    sched = Schedule.load_json(args.schedule, topo)
    algorithm = sched.algorithm
    report = sched.verify(topo)
    bad = report["broken"]
    report["algorithm"] = algorithm
    report["ok"] = not bad
    if args.json:
        emit_json(report)
    else:
        print(f"{args.schedule}: {algorithm or 'unnamed'} schedule, {report['phases']} phases, "
              f"{report['messages']} messages on {topo.name} (load {report['load']})")
        print(f"  complete: {'yes' if report['complete'] else 'no'}; "
              f"contention-free: {'yes' if report['contention_free'] else 'no (%d phases)' % report['contended_phases']}; "
              f"optimal: {'yes' if report['optimal'] else 'no'}")
        if report["problem"]:
            print(f"  first problem: {report['problem']}")
        print("  OK" if not bad else "  FAILED: " + "; ".join(bad))
    return 0 if not bad else 1
