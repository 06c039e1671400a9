"""The mpirun back-end: the benchmark programs on a real cluster through the
user's own launcher (``mpirun``, ``mpiexec``, ``srun`` with its arguments),
with the PMPI library of that launcher's MPI preloaded.  The launcher places
the ranks; the topology names the machines they land on (their processor
names, or TOPOCOLL_RANK_MAP in the environment)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .._core import Topology, TopocollError, library_path
from . import native_tuning
from .harness import Sample, auto_env, collect, collective_env


def mpi_of(launcher: list[str]) -> str:
    """"openmpi" or "mpich": the MPI a launcher belongs to (its --version)."""
    exe = shutil.which(launcher[0])
    if not exe:
        raise TopocollError("invalid argument", f"launcher '{launcher[0]}' not found")
    if Path(exe).name == "srun":
        return os.environ.get("TOPOCOLL_MPI", "openmpi")
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TopocollError("invalid argument", f"'{launcher[0]} --version' failed: {e}") from None
    text = out.stdout + out.stderr
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi"
    if "HYDRA" in text or "MPICH" in text.upper():
        return "mpich"
    raise TopocollError("invalid argument", f"cannot tell which MPI '{launcher[0]}' launches (neither Open MPI nor "
                                            "MPICH in its --version); set TOPOCOLL_MPI=openmpi|mpich with srun")


def program(name: str, mpi: str) -> Path:
    suffix = "" if mpi == "openmpi" else "_mpich"
    for cand in (library_path().parent.parent / "libexec" / "topocoll" / f"{name}{suffix}",
                 Path(__file__).resolve().parents[3] / "build" / f"{name}{suffix}"):
        if cand.is_file():
            return cand
    raise TopocollError("i/o error", f"the program {name}{suffix} is not built (run 'make build')")


class MpirunBackend:
    name = "mpirun"

    def __init__(self, topology_arg: str, topology: Topology, launcher: list[str], rate_bps: float,
                 counts: list[int] | None = None, env: dict | None = None, collective: str = "alltoall"):
        if not launcher:
            raise TopocollError("invalid argument", "--backend mpirun needs the launcher after '--', e.g. "
                                                    "'-- mpirun -np 16 --hostfile hosts'")
        self.topology, self.launcher, self.rate_bps = topology, list(launcher), rate_bps
        self.topology_arg = str(Path(topology_arg).resolve()) if Path(topology_arg).exists() else topology_arg
        self.plan_topology_arg: str | None = None   # bench --plan-topology: the ranks plan on this file
        self.mpi = mpi_of(self.launcher)
        self.counts = counts or [1] * topology.num_machines
        self.env = dict(env or {})
        self.collective = collective
        self.program_args: list[str] = []        # the benchmark program's own options (alltoallv: --pattern)
        self.tuning: str | None = None          # TOPOCOLL_TUNING for the algorithm auto
        self.messages: dict = {}
        self.load = [os.getloadavg()[0]]
        self.native_rules: str | None = None    # native:tuned's tuning file

    def settings(self) -> dict:
        return {"launcher": " ".join(self.launcher), "mpi": self.mpi, **self.env,
                "load_average": "/".join(f"{x:.2f}" for x in self.load)}

    def peak_bps(self, topology: Topology) -> float:
        return topology.peak_throughput(self.rate_bps) if self.collective == "alltoall" else 0.0

    def command(self, argv: list[str], env: dict, mca: dict | None = None) -> list[str]:
        """The launcher, told to pass the variables (Open MPI's mpirun does
        not without -x; MPICH's and srun pass the environment), and argv."""
        cmd = [self.launcher[0]]
        if self.mpi == "openmpi" and Path(self.launcher[0]).name != "srun":
            for name in sorted(env):
                cmd += ["-x", name]
        for k, v in (mca or {}).items():    # as OMPI_MCA_ variables under srun
            if Path(self.launcher[0]).name == "srun":
                env[f"OMPI_MCA_{k}"] = v
            else:
                cmd += ["--mca", k, v]
        return cmd + self.launcher[1:] + [str(a) for a in argv]

    def preload(self) -> dict:
        lib = library_path().parent / f"libtopocoll_pmpi{'' if self.mpi == 'openmpi' else '_mpich'}.so"
        return {"LD_PRELOAD": str(lib), "TOPOCOLL_TOPOLOGY": self.plan_topology_arg or self.topology_arg}

    def run(self, algorithm: str, sizes: list[int], repetitions: int, warmup: int, on_size=None) -> list[Sample]:
        mca, native_env = native_tuning.settings(self.mpi, algorithm, self.native_rules)
        env = {**self.preload(), "TOPOCOLL_STATS": "1", **self.env, **collective_env(self.collective, algorithm),
               **native_env, **auto_env(algorithm, self.tuning)}
        argv = [program(f"{self.collective}_bench", self.mpi), "--warmup", warmup, "--repetitions", repetitions] + \
            self.program_args + sizes
        cmd = self.command(argv, env, mca)
        samples = collect(algorithm, cmd, dict(os.environ, **env), repetitions, on_size,
                          collective=self.collective, messages=self.messages)
        self.load.append(os.getloadavg()[0])
        return samples

    def run_program(self, name: str, args: list, env: dict | None = None) -> str:
        env = {**self.preload(), **self.env, **(env or {})}
        proc = subprocess.run(self.command([program(name, self.mpi)] + args, env), env=dict(os.environ, **env),
                              capture_output=True, text=True)
        if proc.returncode:
            raise TopocollError("i/o error", f"{name} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        return proc.stdout
