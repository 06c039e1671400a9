"""The MPI's own all-to-all algorithms, measured and written into the MPI's
own tuning file, so that a user can tune the MPI without topocoll:

- Open MPI (coll/tuned): a dynamic rules file (``--mca
  coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename F``);
  the message size a rule is keyed by is the bytes a rank sends in all,
  block x communicator size;
- MPICH (4.x): a collective selection JSON
  (``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=F``), keyed by the block size
  (avg_msg_size).  The file replaces MPICH's whole selection tree, so the
  tree of the MPICH installed here is read from its library and only the
  alltoall branch for this communicator size is changed.

A variant of native is named ``native:ALGORITHM`` (bench algorithm names).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .._core import TopocollError
from . import harness

#: Open MPI 4.1's coll_tuned_alltoall_algorithm numbers.
OPENMPI = {"linear": 1, "pairwise": 2, "modified_bruck": 3, "linear_sync": 4}
#: Measured and exported; modified_bruck is left out: Open MPI 4.1.4's
#: crashes on a strided send type (alltoall_check's vector: "munmap_chunk():
#: invalid pointer" in ompi_coll_base_alltoall_intra_bruck), and a tuning
#: file must not make a correct program crash.
OPENMPI_EXPORTED = ["linear", "pairwise", "linear_sync"]
#: MPICH 4.0's MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM names and their selection
#: tree containers (pairwise_sendrecv_replace is for MPI_IN_PLACE only).
MPICH = {"brucks": "MPIR_Alltoall_intra_brucks", "scattered": "MPIR_Alltoall_intra_scattered",
         "pairwise": "MPIR_Alltoall_intra_pairwise"}
MPICH_LIBRARY = "/usr/lib/x86_64-linux-gnu/libmpich.so.12"


def variants(mpi: str) -> list[str]:
    return [f"native:{v}" for v in (OPENMPI_EXPORTED if mpi == "openmpi" else MPICH)]


def settings(mpi: str, algorithm: str, rules: str | None = None) -> tuple[dict, dict]:
    """(MCA parameters, environment) that make the MPI run a native variant;
    ``native:tuned`` is the MPI with its tuning file ``rules``."""
    if not algorithm.startswith("native:"):
        return {}, {}
    name = algorithm.partition(":")[2]
    if name == "tuned":
        if not rules:
            raise TopocollError("invalid argument", "native:tuned needs --native-rules FILE")
        rules = str(Path(rules).resolve())
        if mpi == "openmpi":
            return {"coll_tuned_use_dynamic_rules": "1", "coll_tuned_dynamic_rules_filename": rules}, {}
        return {}, {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": rules}
    base, _, requests = name.partition(":")
    if mpi == "openmpi":
        if base not in OPENMPI:
            raise TopocollError("invalid argument", f"unknown Open MPI alltoall algorithm '{base}'; valid: "
                                                    f"{', '.join(OPENMPI)}")
        mca = {"coll_tuned_use_dynamic_rules": "1", "coll_tuned_alltoall_algorithm": str(OPENMPI[base])}
        if requests:
            mca["coll_tuned_alltoall_algorithm_max_requests"] = requests
        return mca, {}
    if base not in MPICH:
        raise TopocollError("invalid argument", f"unknown MPICH alltoall algorithm '{base}'; valid: {', '.join(MPICH)}")
    return {}, {"MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM": base}


def ranges(best: dict[int, str]) -> list[tuple[int, str]]:
    """(first block, variant) runs: a boundary halfway (geometrically)
    between two measured sizes whose winners differ."""
    sizes = sorted(best)
    out = [(0, best[sizes[0]])]
    for lo, hi in zip(sizes, sizes[1:]):
        if best[hi] != out[-1][1]:
            out.append((int((lo * hi) ** 0.5), best[hi]))
    return out


def openmpi_rules(runs: list[tuple[int, str]], ranks: int) -> str:
    """Open MPI's classic rules text: the rules for exactly this communicator
    size (``native`` is algorithm 0: Open MPI's fixed decision); one size up
    falls back to the fixed decision and smaller ones have no rule.  Version 1: Open MPI 4.1.4 ignores a file
    that starts "rule-file-version-2" (measured: its fixed decision ran), so
    linear_sync keeps its default request count."""
    lines = ["1", "3", "2", str(ranks), str(len(runs))]
    for first, variant in runs:
        lines.append(f"{first * ranks} {0 if variant == 'native' else OPENMPI[variant.partition(':')[2]]} 0 0")
    lines += [str(ranks + 1), "1", "0 0 0 0"]
    return "\n".join(lines) + "\n"


def mpich_default_tree(library: str = MPICH_LIBRARY) -> dict:
    """MPICH's built-in selection tree (the one with MPIR_Alltoall_intra_*
    leaves), read from the installed library."""
    try:
        data = Path(library).read_bytes()
    except OSError as e:
        raise TopocollError("i/o error", f"cannot read MPICH's library {library}: {e.strerror}") from None
    for m in re.finditer(rb'\{"collective=[^\x00]*', data):
        blob = m.group(0)
        if b"algorithm=MPIR_Alltoall_intra_" in blob:
            try:
                return json.loads(blob)
            except ValueError:
                continue
    raise TopocollError("i/o error", f"MPICH's selection tree not found in {library} (not MPICH 4?)")


def mpich_tree(runs: list[tuple[int, str]], ranks: int, default: dict) -> dict:
    """MPICH's tree with the alltoall branch for this communicator size
    replaced by the runs (``native``: MPICH's own subtree there; other sizes
    and in-place calls keep MPICH's own)."""
    tree = json.loads(json.dumps(default))
    intra = tree.get("collective=alltoall", {}).get("comm_type=intra")
    if not isinstance(intra, dict) or "is_sendbuf_inplace=no" not in intra:
        raise TopocollError("i/o error", "MPICH's selection tree has no alltoall branch for intra-communicators")
    own = intra["is_sendbuf_inplace=no"]
    sizes = {}
    for i, (first, variant) in enumerate(runs):
        last = runs[i + 1][0] - 1 if i + 1 < len(runs) else None
        key = "avg_msg_size=any" if last is None else f"avg_msg_size<={last}"
        name = variant.partition(":")[2]
        sizes[key] = {f"algorithm={MPICH[name]}": {}} if name else own
    # comm_size<= is the only size test MPICH 4.0 reads as written
    intra["is_sendbuf_inplace=no"] = {f"comm_size<={ranks - 1}": own, f"comm_size<={ranks}": sizes,
                                      "comm_size=any": own} if ranks > 1 else {f"comm_size<={ranks}": sizes,
                                                                              "comm_size=any": own}
    return tree


def export(args, mpi: str, path: str, sizes: list[int]) -> None:
    """Measure the MPI's own algorithms with the arguments of `tune` and
    write its tuning file."""
    from ..commands import bench
    if args.backend == "testbed" and mpi == "mpich":
        raise TopocollError("invalid argument", "--export-mpich measures MPICH: use --backend mpirun -- "
                                                "mpiexec.mpich ... (the emulated cluster runs Open MPI)")
    if args.backend == "simgrid":
        raise TopocollError("invalid argument", f"--export-{mpi} measures the real MPI: --backend testbed or mpirun")
    names = ["native"] + variants(mpi)
    saved = args.algorithms, args.csv, args.plot
    args.algorithms, args.csv, args.plot = ",".join(names), None, None
    print(f"\ntune: {mpi}'s own alltoall algorithms", file=sys.stderr)
    try:
        result = bench.measure(args)
    finally:
        args.algorithms, args.csv, args.plot = saved
    # where the MPI's own decision is within the tie of its best variant, the
    # file leaves it to that decision: a tuning file changes only what it
    # measurably improves
    runs = ranges(harness.winners(result, names, sizes, harness.TIE, prefer="native"))
    text = openmpi_rules(runs, result.ranks) if mpi == "openmpi" else \
        json.dumps(mpich_tree(runs, result.ranks, mpich_default_tree()), indent=1) + "\n"
    try:
        Path(path).write_text(text)
    except OSError as e:
        raise TopocollError("i/o error", f"cannot write '{path}': {e.strerror}") from None
    use = (f"mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename {path}"
           if mpi == "openmpi" else f"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={path}")
    print(f"{mpi}: " + ", ".join(f"from {first} bytes {v.partition(':')[2] or 'its own decision'}"
                                 for first, v in runs))
    print(f"wrote {path} ({use})")
