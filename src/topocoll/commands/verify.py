"""``topocoll verify``: check a schedule JSON file against a topology."""

from __future__ import annotations

import json
from array import array

from .._core import Schedule, TopocollError, algorithms
from ..common import add_topology_argument, emit_json, load_topology
from .plan import failures

description = "verify a schedule JSON against a topology: completeness, contention per phase, phase count"

FORMAT = "topocoll-schedule/1"


def setup_parser(p):
    add_topology_argument(p)
    p.add_argument("schedule", metavar="SCHEDULE.json", help="schedule written by 'topocoll plan -o'")
    p.add_argument("--json", action="store_true", help="print the verifier's report as JSON")


def read_schedule(path: str, machines: list[str]) -> tuple[str, array]:
    """The algorithm name and (phase, src, dst) triples of a schedule file,
    checked against the topology's machines."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise TopocollError("io", f"cannot read '{path}': {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise TopocollError("parse error", f"{path}:{e.lineno}: not JSON: {e.msg}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TopocollError("parse error", f"{path}: not a schedule (expected \"format\": \"{FORMAT}\")")
    names = doc.get("machines")
    if names != machines:
        if not isinstance(names, list):
            raise TopocollError("parse error", f"{path}: \"machines\" must be a list of names")
        if len(names) != len(machines):
            raise TopocollError("invalid argument", f"{path}: the schedule has {len(names)} machines, "
                                f"the topology {len(machines)}")
        i = next(i for i, (a, b) in enumerate(zip(names, machines)) if a != b)
        raise TopocollError("invalid argument", f"{path}: rank {i} is '{names[i]}' in the schedule "
                            f"but '{machines[i]}' in the topology")
    phases = doc.get("phases")
    if not isinstance(phases, list):
        raise TopocollError("parse error", f"{path}: \"phases\" must be a list of phases")
    triples = array("i")
    n = len(machines)
    for p, phase in enumerate(phases):
        if not isinstance(phase, list):
            raise TopocollError("parse error", f"{path}: phase {p} must be a list of [src, dst]")
        for msg in phase:
            if (not isinstance(msg, list) or len(msg) != 2 or not all(isinstance(x, int) for x in msg)
                    or not all(0 <= x < n for x in msg)):
                raise TopocollError("parse error", f"{path}: phase {p}: {msg!r} is not [src, dst] with ranks 0..{n - 1}")
            triples.extend((p, msg[0], msg[1]))
    return str(doc.get("algorithm", "")), triples


def run(args):
    topo = load_topology(args.topology)
    algorithm, triples = read_schedule(args.schedule, topo.machines)
    sched = Schedule.from_triples(algorithm, topo.num_machines, triples)
    report = sched.verify(topo)
    known = {a["name"]: a for a in algorithms()}
    promise = known.get(algorithm, {"contention_free": False, "optimal": False})
    bad = failures(report, promise)
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
