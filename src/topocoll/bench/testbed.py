"""The testbed back-end: the benchmark program under Open MPI on the emulated
switched cluster (real TCP through shaped, finitely buffered switch ports),
with the PMPI library preloaded; `native` is Open MPI's own MPI_Alltoall."""

from __future__ import annotations

import os
import statistics
import subprocess
from pathlib import Path

from .._core import Topology, TopocollError, default, format_time, library_path, phase_orders
from ..testbed import mpi, net
from . import native_tuning
from .harness import Sample, auto_env, collect, collective_env

# the library's pace lead when TOPOCOLL_PACE_LEAD is not given (the core's defaults)
DEFAULT_LEAD = (f"{format_time(default('pace_lead'))} (capacitated "
                f"{format_time(default('capacitated_pace_lead'))})")


#: a share of the cores the hypervisor took during an algorithm's run above
#: which the bench says its times include it: the emulated network stops with
#: the cores (on the project's VM a run's median rose by about half the share
#: taken, docs/results/2026-12-03-packet-host-steal.md)
STEAL_NOTE = 0.05


def cpu_ticks() -> tuple[int, int] | None:
    """(steal, all) clock ticks of this machine's cores so far, from
    /proc/stat's first line; None where the kernel does not give steal"""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if fields[:1] != ["cpu"] or len(fields) < 9 or not all(f.isdigit() for f in fields[1:9]):
        return None
    ticks = [int(f) for f in fields[1:9]]     # user nice system idle iowait irq softirq steal
    return ticks[7], sum(ticks)


def steal_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """the share of the cores' time the hypervisor took between two cpu_ticks()"""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def program(collective: str = "alltoall") -> Path:
    for cand in (library_path().parent.parent / "libexec" / "topocoll" / f"{collective}_bench",
                 Path(__file__).resolve().parents[3] / "build" / f"{collective}_bench"):
        if cand.is_file():
            return cand
    raise TopocollError("i/o error", "the benchmark program is not built (run 'make build')")


class TestbedBackend:
    name = "testbed"

    def __init__(self, topology_arg: str, topology: Topology, rate_bps: float, buffer_packets: int = 100,
                 rto_min: str | None = None, mca: dict | None = None, sync_depth: int | None = None,
                 counts: list[int] | None = None, env: dict | None = None, collective: str = "alltoall",
                 host_queue: str = net.DEFAULT_HOST_QUEUE, flow_order: str = net.DEFAULT_FLOW_ORDER):
        net.require_root()
        self.topology = topology
        self.topology_arg = str(Path(topology_arg).resolve()) if Path(topology_arg).exists() else topology_arg
        self.plan_topology_arg: str | None = None   # bench --plan-topology: the ranks plan on this file
        self.mca = dict(mca or {})
        self.sync_depth = sync_depth
        self.counts = counts or [1] * topology.num_machines
        self.env = dict(env or {})
        self.collective = collective
        self.program_args: list[str] = []        # the benchmark program's own options (alltoallv: --pattern)
        self.tuning: str | None = None          # TOPOCOLL_TUNING for the algorithm auto
        self.messages: dict = {}
        self.native_rules: str | None = None    # native:tuned's Open MPI rules file
        record = net.status()
        self.brought_up = False
        if record and record.get("machines") and record["machines"] != topology.machines:
            raise TopocollError("invalid argument", f"a testbed for '{record['name']}' is up; 'topocoll testbed down' "
                                                    "first")
        if record and record.get("up"):
            for key, want in (("host_queue", host_queue), ("flow_order", flow_order), ("buffer_packets", buffer_packets),
                              ("rto_min", rto_min or net.KERNEL_RTO)):
                if record[key] != want:
                    raise TopocollError("invalid argument", f"the testbed that is up has {key}={record[key]}, "
                                                            f"not {want}; 'topocoll testbed down' first")
        if not record or not record.get("up"):
            net.down()
            net.up(topology, self.topology_arg, rate_bps, buffer_packets, rto_min, host_queue=host_queue,
                   flow_order=flow_order)
            self.brought_up = True
        self.record = net.status()
        self.load = [os.getloadavg()[0]]
        self.skews: dict[str, float] = {}       # algorithm: median barrier-exit spread of its timed calls
        self.starts: dict[str, list] = {}       # algorithm: (size, repetition, each rank's start offset) a timed call
        self.steal: dict[str, float] = {}       # algorithm: the share of the cores the hypervisor took in its run

    def settings(self) -> dict:
        return {"rate_bps": self.record["rate_bps"], "buffer_packets": self.record["buffer_packets"],
                "rto_min": self.record["rto_min"], "congestion": self.record["congestion"],
                "host_queue": self.record["host_queue"], "flow_order": self.record["flow_order"],
                "mca": " ".join(f"{k}={v}" for k, v in sorted(self.mca.items())) or "Open MPI defaults",
                "sync_depth": self.sync_depth or "default",
                "pace": self.env.get("TOPOCOLL_PACE", "auto"), "pace_lead": self.env.get("TOPOCOLL_PACE_LEAD", DEFAULT_LEAD),
                "nap": self.env.get("TOPOCOLL_NAP", mpi.TESTBED_NAP),
                "phase_order": self.env.get("TOPOCOLL_PHASE_ORDER", phase_orders()[0]),
                **self.env,
                "ranks_per_machine": "/".join(map(str, sorted(set(self.counts)))),
                "load_average": "/".join(f"{x:.2f}" for x in self.load),
                **({"start_skew": ", ".join(f"{a} {v * 1e3:.2f}ms" for a, v in self.skews.items())}
                   if self.skews else {}),
                **({"host_steal": self.steal_text()} if self.steal else {})}

    def steal_text(self) -> str:
        """each algorithm's steal share, as the CSV settings and the summary give it"""
        return ", ".join(f"{a} {v * 100:.1f}%" for a, v in self.steal.items())

    def summary(self) -> str:
        """what the hypervisor took of this machine's cores while each algorithm ran"""
        if not self.steal:
            return ""
        line = ("the hypervisor took this share of this machine's cores while each algorithm ran (steal, "
                f"/proc/stat): {self.steal_text()}")
        if max(self.steal.values()) > STEAL_NOTE:
            line += (f"\n  above {STEAL_NOTE:.0%}: the emulated network stops with the cores, so these times include "
                     "it; compare runs made at a like share")
        return line

    def peak_bps(self, topology: Topology) -> float:
        return topology.peak_throughput(self.record["rate_bps"]) if self.collective == "alltoall" else 0.0

    def run(self, algorithm: str, sizes: list[int], repetitions: int, warmup: int, on_size=None) -> list[Sample]:
        mca, native_env = native_tuning.settings("openmpi", algorithm, self.native_rules)
        env = {"LD_PRELOAD": str(library_path().parent / "libtopocoll_pmpi.so"),
               "TOPOCOLL_TOPOLOGY": self.plan_topology_arg or self.topology_arg, "TOPOCOLL_STATS": "1", **self.env,
               **collective_env(self.collective, algorithm), **native_env,
               **auto_env(algorithm, self.tuning)}
        mpi.executor_env(self.record, env)
        if self.sync_depth:
            env["TOPOCOLL_SYNC_DEPTH"] = str(self.sync_depth)
        # the ranks share this machine's clock: how far apart they start each call is measurable
        skew_arg = ["--skew"] if self.collective == "alltoall" else []
        argv = [str(program(self.collective)), "--warmup", str(warmup), "--repetitions", str(repetitions)] + \
            skew_arg + self.program_args + [str(s) for s in sizes]
        starts: list = []
        slots = dict(zip(self.topology.machines, self.counts))
        ticks = cpu_ticks()
        with mpi.mpirun_command(self.record, argv, sorted(env), np=sum(self.counts), mca={**self.mca, **mca},
                                slots=slots) as cmd:
            samples = collect(algorithm, cmd, dict(os.environ, **env), repetitions, on_size,
                              collective=self.collective, messages=self.messages, starts=starts)
        share = steal_share(ticks, cpu_ticks())
        if share is not None:
            self.steal[algorithm] = share
        self.starts[algorithm] = starts
        if starts:   # how far apart the ranks left the barrier: each call's latest start
            self.skews[algorithm] = statistics.median(max(offsets) for _, _, offsets in starts)
        self.load.append(os.getloadavg()[0])
        return samples

    def run_program(self, name: str, args: list, env: dict | None = None) -> str:
        """Run another program of ours (the ping-pong) on the testbed's ranks."""
        env = dict(env or {})
        mpi.executor_env(self.record, env)
        slots = dict(zip(self.topology.machines, self.counts))
        with mpi.mpirun_command(self.record, [str(program(name.removesuffix("_bench")))] + [str(a) for a in args],
                                sorted(env), np=sum(self.counts), mca=self.mca, slots=slots) as cmd:
            proc = subprocess.run(cmd, env=dict(os.environ, **env), capture_output=True, text=True)
        if proc.returncode:
            raise TopocollError("i/o error", f"{name} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        return proc.stdout

    def close(self) -> None:
        if self.brought_up:
            net.down()
