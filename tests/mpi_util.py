"""Launching real MPI jobs (Open MPI and MPICH from Debian) for the tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from topocoll._core import library_path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
MPIS = ["openmpi", "mpich"]
SUFFIX = {"openmpi": "", "mpich": "_mpich"}


def pmpi_lib(mpi: str) -> Path:
    return library_path().parent / f"libtopocoll_pmpi{SUFFIX[mpi]}.so"


def program(name: str, mpi: str) -> Path:
    return BUILD / f"{name}{SUFFIX[mpi]}"


def available(mpi: str) -> bool:
    return shutil.which(f"mpirun.{mpi}" if mpi == "openmpi" else "mpiexec.mpich") is not None


def run(mpi: str, np: int, argv: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    """Run argv on np ranks of the given MPI, with env added to ours."""
    full = dict(os.environ)
    full.update(env)
    full.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if mpi == "openmpi":
        # 2 cores: ranks yield when idle; ompi#8045: Open MPI 4.1.4's AVX
        # reductions sum 8-bit integers wrongly, so keep them off everywhere
        cmd = ["mpirun.openmpi", "--oversubscribe", "-np", str(np), "--mca", "mpi_yield_when_idle", "1",
               "--mca", "op", "^avx", "--mca", "btl", "self,vader,tcp"]
        for k in env:
            cmd += ["-x", k]
    else:
        cmd = ["mpiexec.mpich", "-n", str(np)]
    return subprocess.run(cmd + [str(a) for a in argv], env=full, capture_output=True, text=True, timeout=timeout)
