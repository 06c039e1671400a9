"""``topocoll algorithms``: the registry of all-to-all algorithms."""

from .._core import algorithms as registry
from ..common import emit_json

description = "list the all-to-all algorithms and the properties the verifier checks for each"


def setup_parser(p):
    p.add_argument("--json", action="store_true", help="print the registry as JSON")


def run(args):
    algs = registry()
    if args.json:
        emit_json(algs)
        return 0
    width = max(len(a["name"]) for a in algs)
    for a in algs:
        props = [k for k in ("contention_free", "optimal", "single_port", "host_single_port", "bottleneck_once",
                             "topology_aware") if a[k]]
        print(f"{a['name']:<{width}}  {a['summary']}" + (f"  [{', '.join(props)}]" if props else "")
              + (f"  parameters: {', '.join(a['parameters'])}" if a["parameters"] else ""))
    print(f"{'native':<{width}}  the MPI library's own MPI_Alltoall (runtime only)")
    return 0
