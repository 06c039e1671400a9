"""``topocoll config``: where the installed pieces are."""

from pathlib import Path

from .._core import TopocollError, include_path, library_path

PMPI_NAMES = {"openmpi": "libtopocoll_pmpi.so", "mpich": "libtopocoll_pmpi_mpich.so"}

description = "print the paths of the core library, its headers and the PMPI library"


def setup_parser(p):
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--lib", action="store_true", help="absolute path of libtopocoll.so")
    g.add_argument("--include", action="store_true", help="folder holding topocoll/topocoll.h")
    g.add_argument("--pmpi-lib", action="store_true", help="absolute path of libtopocoll_pmpi.so (LD_PRELOAD it)")
    p.add_argument("--mpi", choices=["openmpi", "mpich"], default="openmpi",
                   help="which MPI the PMPI library is built for (default %(default)s)")


def run(args):
    if args.lib:
        print(library_path())
    elif args.include:
        print(include_path())
    else:
        pmpi = Path(library_path()).parent / PMPI_NAMES[args.mpi]
        if not pmpi.is_file():
            raise TopocollError("i/o error", f"{pmpi} is not built (the PMPI library needs an MPI; run 'make build')")
        print(pmpi.resolve())
    return 0
