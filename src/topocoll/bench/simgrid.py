"""The SimGrid back-end: SMPI runs the benchmark program, linked with the
PMPI shim as a static archive (SMPI ignores LD_PRELOAD), on a platform made
from the topology.

Simulation models (``--model``):

``topocoll`` (the default) models a 100 Mbit/s full-duplex switched cluster
at the raw link rate, the rate the peak bound is stated in:

- ``smpi/bw-factor:0:1`` -- a message gets the whole link bandwidth.  SMPI's
  default factors (0.94 above 64 KB, 0.59-0.70 for 9-64 KB) are calibrated on
  one InfiniBand/Ethernet cluster's MPI and scale every algorithm alike.
- ``smpi/lat-factor:0:1`` -- a message pays the links' latency once.  The
  default factors (x11.6 above 64 KB) stand for one cluster's rendezvous
  handshakes and slow start, which the emulated cluster measures for real.
- ``network/crosstraffic:0`` -- no reverse flow per message.  SMPI models TCP
  acknowledgements as a 5 % flow on the reverse route, shared by RTT-weighted
  max-min: a flow crossing three links then loses up to 28 % against the
  acknowledgements of a two-link flow on its last link (measured: 14.6 ms
  instead of 10.6 ms for one contention-free phase of 128 KB messages on two
  switches).  On a switch an acknowledgement stream costs about 2 % of the
  reverse direction.
- ``smpi/simulate-computation:no`` -- CPU time of the simulating process is
  not injected: results are exact and repeatable.

``smpi-default`` keeps SMPI's calibrated defaults (only the computation
setting and the collective selector are set) for comparison.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .._core import Topology, TopocollError, library_path
from .harness import Sample, auto_env, collect, collective_env
from .platform import hostfile, platform_xml

MODELS = {
    "topocoll": ["smpi/bw-factor:0:1", "smpi/lat-factor:0:1", "network/crosstraffic:0"],
    "smpi-default": [],
}
COMMON = ["smpi/simulate-computation:no"]
SIMULATION_SEGMENT_SIZE = 65536
# Rooted collectives: messages up to 64 KB leave without waiting for the
# receiver, as MPI's eager protocol sends them.  SMPI's default (0) makes
# each of the acknowledgement barrier's GO messages wait one WAN latency
# for its receiver: 1 s of every broadcast's 1.05 s on the grid.
EAGER = ["smpi/async-small-thresh:65536"]


def program(collective: str = "alltoall") -> Path:
    for cand in (library_path().parent.parent / "libexec" / "topocoll" / f"{collective}_bench_smpi",
                 Path(__file__).resolve().parents[3] / "build" / "smpi" / f"{collective}_bench"):
        if cand.is_file():
            return cand
    raise TopocollError("i/o error", "the SMPI benchmark program is not built (needs libsimgrid-dev; run 'make build')")


class SimGridBackend:
    name = "simgrid"

    def __init__(self, topology_arg: str, topology: Topology, bandwidth: float, latency: float,
                 model: str = "topocoll", selector: str = "ompi", shared: bool | None = None,
                 sync_depth: int | None = None, counts: list[int] | None = None, env: dict | None = None,
                 collective: str = "alltoall"):
        if not shutil.which("smpirun"):
            raise TopocollError("i/o error", "smpirun not found (install Debian's libsimgrid-dev; 'make deps' does)")
        if model not in MODELS:
            raise TopocollError("invalid argument", f"unknown model '{model}'; valid: {', '.join(MODELS)}")
        self.topology = topology
        self.topology_arg = str(Path(topology_arg).resolve()) if Path(topology_arg).exists() else topology_arg
        self.plan_topology_arg: str | None = None   # bench --plan-topology: the ranks plan on this file
        self.bandwidth, self.latency = bandwidth, latency
        self.model, self.selector, self.sync_depth = model, selector, sync_depth
        self.counts = counts or [topology.slots(r) for r in range(topology.num_machines)]
        self.env = dict(env or {})
        # Segments cost simulation time, not fidelity (flows share fluidly):
        # 16 KB segments of 256 KB blocks on 32 ranks took 204 s to simulate
        # against 3 s with 64 KB, for the same result within 0.2 %.
        self.env.setdefault("TOPOCOLL_SEGMENT_SIZE", str(SIMULATION_SEGMENT_SIZE))
        self.collective = collective
        self.program_args: list[str] = []        # the benchmark program's own options (alltoallv: --pattern)
        self.tuning: str | None = None          # TOPOCOLL_TUNING for the algorithm auto
        self.messages: dict = {}
        # SMPI_SHARED_MALLOC from 64 ranks on: 256 ranks x 64 KB x 256 would be 4 GB a buffer
        self.shared = sum(self.counts) >= 64 if shared is None else shared
        self.workdir = Path(tempfile.mkdtemp(prefix="topocoll-simgrid-"))
        (self.workdir / "platform.xml").write_text(platform_xml(topology, bandwidth, latency))
        (self.workdir / "hostfile").write_text(hostfile(topology, self.counts))

    def settings(self) -> dict:
        return {"model": self.model, "cfg": " ".join(MODELS[self.model] + COMMON),
                "sync_depth": self.sync_depth or "default", **self.env,
                "native": f"SMPI smpi/coll-selector:{self.selector}", "shared_malloc": self.shared}

    def peak_bps(self, topology: Topology) -> float:
        return topology.peak_throughput(self.bandwidth) if self.collective == "alltoall" else 0.0

    def command(self, sizes: list[int], repetitions: int, warmup: int) -> list[str]:
        cfg = MODELS[self.model] + COMMON + [f"smpi/coll-selector:{self.selector}"] + \
            (EAGER if self.collective != "alltoall" else [])
        cmd = ["smpirun", "-platform", str(self.workdir / "platform.xml"), "-hostfile", str(self.workdir / "hostfile"),
               "-np", str(sum(self.counts))]
        cmd += [f"--cfg={c}" for c in cfg] + ["--log=root.thres:warning", str(program(self.collective)),
                                              "--warmup", str(warmup), "--repetitions", str(repetitions)]
        if self.shared and self.collective == "alltoall":
            cmd.append("--shared")
        return cmd + self.program_args + [str(s) for s in sizes]

    def run_program(self, name: str, args: list, env: dict | None = None) -> str:
        """Run another program of ours (the ping-pong) under smpirun."""
        cmd = ["smpirun", "-platform", str(self.workdir / "platform.xml"), "-hostfile", str(self.workdir / "hostfile"),
               "-np", str(sum(self.counts))] + [f"--cfg={c}" for c in MODELS[self.model] + COMMON] + \
              ["--log=root.thres:warning", str(program(name.removesuffix("_bench")))] + [str(a) for a in args]
        proc = subprocess.run(cmd, env=dict(os.environ, **(env or {})), capture_output=True, text=True,
                              cwd=self.workdir)
        if proc.returncode:
            raise TopocollError("i/o error", f"{name} failed under smpirun (exit {proc.returncode}):\n"
                                             f"{proc.stderr[-2000:]}")
        return proc.stdout

    def run(self, algorithm: str, sizes: list[int], repetitions: int, warmup: int, on_size=None) -> list[Sample]:
        if algorithm.startswith("native:"):
            raise TopocollError("invalid argument", f"{algorithm} is one of a real MPI's own algorithms: "
                                                    "--backend testbed or mpirun")
        env = dict(os.environ, TOPOCOLL_TOPOLOGY=self.plan_topology_arg or self.topology_arg, TOPOCOLL_STATS="1",
                   **self.env,
                   **collective_env(self.collective, algorithm), **auto_env(algorithm, self.tuning))
        env.pop("TOPOCOLL_RANK_MAP", None)      # SMPI's processor names are the hosts: the machines
        if self.sync_depth:
            env["TOPOCOLL_SYNC_DEPTH"] = str(self.sync_depth)
        return collect(algorithm, self.command(sizes, repetitions, warmup), env, repetitions, on_size,
                       cwd=self.workdir, collective=self.collective, messages=self.messages)
