"""``topocoll generate``: a topology-specific MPI_Alltoall as one C file."""

from __future__ import annotations

from pathlib import Path

from .. import __version__
from .._core import OP_INTS, Schedule, TopocollError, algorithms, include_path, phase_orders
from ..common import add_plan_arguments, add_topology_argument, plan_options, plan_topology

description = "write a self-contained C file with an MPI_Alltoall routine planned for a topology"

C_IDENT = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789"


def setup_parser(p):
    add_topology_argument(p)
    p.add_argument("-o", "--output", required=True, metavar="FILE.c", help="the C file to write")
    p.add_argument("--name", default="topocoll_alltoall",
                   help="the routine's name (default %(default)s); same arguments as MPI_Alltoall")
    p.add_argument("--sync-depth", type=int, default=1, metavar="D",
                   help="messages a link may carry at once (default %(default)s: the paper's strict phases)")
    p.add_argument("--phase-order", default=phase_orders()[0], choices=phase_orders(),
                   help="a synced schedule's phases: messages moved between phases so that links keep their "
                        "senders (grouped, the default, as the PMPI library runs them), the generator's (paper), "
                        "or the generator's reordered (balanced); see TOPOCOLL_PHASE_ORDER")
    add_plan_arguments(p)
    p.add_argument("-a", "--algorithm", default="faraj-yuan", choices=[a["name"] for a in algorithms()],
                   help="algorithm (default %(default)s)")


def c_array(ctype: str, name: str, values, per_line: int = 16, group: int = 1) -> tuple[str, str]:
    """The declaration of a constant table and the expression naming it:
    an empty table is no array but NULL (a one-element placeholder lets an
    optimising compiler warn about reads it cannot prove never happen).
    With group > 1 every `group` values are one braced element (a struct)."""
    vals = [str(v) for v in values]
    if not vals:
        return "", "NULL"
    if group > 1:
        vals = ["{" + ", ".join(vals[i:i + group]) + "}" for i in range(0, len(vals), group)]
        per_line = max(1, per_line // group)
    lines = [", ".join(vals[i:i + per_line]) for i in range(0, len(vals), per_line)]
    return f"static const {ctype} {name}[{len(vals)}] = {{\n    " + ",\n    ".join(lines) + "\n};\n", name


#: the executor's files, in the order a generated routine holds them
EXECUTOR_FILES = ["tc_exec.h", "tc_exec_view.c", "tc_exec_pace.c", "tc_exec.c"]


def executor_source() -> str:
    """The executor as one piece of C: its header and files (installed beside
    topocoll.h, or in a source checkout), each function static."""
    for folder in (include_path() / "topocoll", Path(__file__).resolve().parents[3] / "core" / "mpi"):
        if all((folder / f).is_file() for f in EXECUTOR_FILES):
            texts = [(folder / f).read_text().replace('#include "tc_exec.h"\n', "") for f in EXECUTOR_FILES]
            # static, and quiet about what this routine does not call (tcx_alltoallv)
            return "#define TCX_API static __attribute__((unused))\n" + "\n".join(texts)
    raise TopocollError("i/o error", "the executor's files (tc_exec.h, ...) were not found; run 'make build'")


def generate(topo, algorithm: str, name: str, sync_depth: int = 1, **options) -> str:
    """The C source of the routine: executor, tables and entry point."""
    if not name or name[0].isdigit() or any(c not in C_IDENT for c in name):
        raise TopocollError("invalid argument", f"--name '{name}' is not a C identifier")
    sched = Schedule.plan_for_execution(algorithm, topo, sync_depth, **options)
    order = f", {options['phase_order']} phases" if "phase_order" in options else ""
    t = sched.tables()
    machines = topo.machines
    shown = ", ".join(machines[:8]) + (", ..." if len(machines) > 8 else "")
    n = topo.num_machines
    tables = {key: c_array(ctype, f"{name}_{key}", t[key], group=OP_INTS if key == "ops" else 1)
              for key, ctype in (("step_begin", "long long"), ("ops", "tcx_op"), ("blocks", "int"), ("syncs", "long long"))}
    decls = "\n".join(d for d, _ in tables.values() if d)
    ref = {key: r for key, (_, r) in tables.items()}
    return f"""/*
 * {name}: MPI_Alltoall planned by topocoll {__version__} ({algorithm}{order}) for the
 * topology '{topo.name}': {n} machines, {sched.num_steps} steps, {sched.num_ops} messages,
 * {len(t['syncs']) // 2} pairwise syncs.  Rank i of the communicator is machine i:
 * {shown}.
 * A communicator of another size, or an intercommunicator, goes to
 * MPI_Alltoall.  Generated file: regenerate rather than edit
 * (topocoll generate T -o FILE.c --name {name}).
 */
#include <mpi.h>

int {name}(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
           MPI_Datatype recvtype, MPI_Comm comm);

/* ---- topocoll's executor (tc_exec.h, tc_exec_view.c, tc_exec_pace.c, tc_exec.c), each function static ---- */
{executor_source()}
/* ---- the plan ---- */
{decls}
static const tcx_schedule {name}_schedule = {{
    "{algorithm}", {n}, {sched.num_steps}, {ref["step_begin"]}, {ref["ops"]}, {ref["blocks"]},
    {len(t['syncs']) // 2}, {ref["syncs"]}
}};

static int {name}_keyval = MPI_KEYVAL_INVALID;

static int {name}_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{{
    (void)comm; (void)keyval; (void)extra;
    tcx_state_free((tcx_state *)attr);
    free(attr);
    return MPI_SUCCESS;
}}

int {name}(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
           MPI_Datatype recvtype, MPI_Comm comm)
{{
    int size, inter = 0, found = 0;
    tcx_state *st = NULL;
    MPI_Comm_test_inter(comm, &inter);
    MPI_Comm_size(comm, &size);
    if (inter || size != {n})
        return MPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    if ({name}_keyval == MPI_KEYVAL_INVALID)
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, {name}_delete, &{name}_keyval, NULL);
    MPI_Comm_get_attr(comm, {name}_keyval, &st, &found);
    if (!found) {{
        /* first call on this communicator: a private duplicate and this rank's part */
        st = (tcx_state *)malloc(sizeof *st);
        if (!st || tcx_state_init(st, &{name}_schedule, comm) != MPI_SUCCESS) {{
            free(st);
            return MPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
        }}
        MPI_Comm_set_attr(comm, {name}_keyval, st);
    }}
    return tcx_alltoall(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
}}
"""


def run(args):
    topo = plan_topology(args)
    text = generate(topo, args.algorithm, args.name, args.sync_depth, phase_order=args.phase_order,
                    **plan_options(args))
    try:
        Path(args.output).write_text(text)
    except OSError as e:
        raise TopocollError("i/o error", f"cannot write '{args.output}': {e.strerror}") from None
    print(f"wrote {args.output}: {args.name}() for {topo.name} ({topo.num_machines} machines, {args.algorithm})")
    return 0
