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
# MPICH's ranks spin in every wait: where they share the 2 cores, the
# executor naps between tests instead (the same data paths; half the time at
# 9 ranks); MPI_Waitall, the executor's default, runs wherever this is not given
MPICH_NAP = {"TOPOCOLL_NAP": "200us"}
# Whether the running test is marked mpi (tests/conftest.py sets it; None
# outside pytest): `make test` runs those one at a time, so run() refuses an
# unmarked test rather than let it launch ranks beside another test
running_marked: bool | None = None


def pmpi_lib(mpi: str) -> Path:
    return library_path().parent / f"libtopocoll_pmpi{SUFFIX[mpi]}.so"


def program(name: str, mpi: str) -> Path:
    return BUILD / f"{name}{SUFFIX[mpi]}"


def available(mpi: str) -> bool:
    return shutil.which(f"mpirun.{mpi}" if mpi == "openmpi" else "mpiexec.mpich") is not None


def run(mpi: str, np: int, argv: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    """Run argv on np ranks of the given MPI, with env added to ours."""
    if running_marked is False:
        raise RuntimeError("mark this test @pytest.mark.mpi: it launches MPI ranks, which make test runs one "
                           "test at a time")
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
