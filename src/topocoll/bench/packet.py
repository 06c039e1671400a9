"""The packet-level back-end: ``topocoll-packet`` (core/packet), an ns-3
simulation of the switch tree -- point-to-point links at their rates,
DropTail switch ports of ``--buffer`` packets, the machines' egress queues,
one TCP connection (Linux's behaviours, as ``topocoll-packet
--print-settings`` lists them and the results' settings describe them) a
pair of machines -- whose
simulated ranks run the PMPI library's executor itself on each schedule,
with its syncs, pieces and pacing.  ``native`` is Open MPI 4.1's own
MPI_Alltoall as its fixed decision rules pick it.  docs/packet.md says what
is modelled and how it compares with the emulated cluster.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from .._core import (PARAM_FANOUT, PARAM_SEGMENTS, Topology, TopocollError, format_time, library_path, parameters,
                     parse_size, parse_time)
from .harness import Sample

DEFAULT_RTO_MIN = "200ms"
DEFAULT_NAP = "200us"            # the testbed's: a simulated rank naps as a real one there
MAX_QUEUE_PACKETS = 1_000_000
#: the simulator's --skew limit and its --rendezvous and --host-queue values, its
#: default first, for the CLI before any simulator runs (the testbed's short-first is
#: not modelled); tests/test_packet.py holds them to the simulator's --print-settings
MAX_SKEW = 10.0                   # seconds
RENDEZVOUS = ("put", "copy")
HOST_QUEUES = ("sparse-first", "fifo")
#: the PMPI library's variables the simulator takes, as its own options
ENV_OPTIONS = {"TOPOCOLL_PACE": "--pace", "TOPOCOLL_PACE_LEAD": "--pace-lead", "TOPOCOLL_NAP": "--nap",
               "TOPOCOLL_PHASE_ORDER": "--phase-order", "TOPOCOLL_PIECE_SIZE": "--piece-size",
               parameters()[PARAM_SEGMENTS][1]: "--segment-size", parameters()[PARAM_FANOUT][1]: "--fanout",
               "TOPOCOLL_SYNC_DEPTH": "--sync-depth", "TOPOCOLL_PACE_LEAD_SHARE": "--pace-lead-share"}
TIME_OPTIONS = {"--pace-lead", "--nap"}
#: the simulator's --progress lines on stderr (the rest there is an error's text)
PROGRESS = re.compile(r"topocoll-packet: (\d+ B: call|at )")


def program() -> Path:
    for cand in (library_path().parent.parent / "libexec" / "topocoll" / "topocoll-packet",
                 Path(__file__).resolve().parents[3] / "build" / "topocoll-packet"):
        if cand.is_file():
            return cand
    raise TopocollError("i/o error", "the packet simulator is not built (needs Debian's libns3-dev; run 'make build')")


def refusal(options: list[str], prog: Path | None = None) -> str | None:
    """Whether the simulator takes OPTIONS, by its own checks
    (``--print-settings`` with them): None, or why not, its message without
    the program's name and its pointer to --help."""
    proc = subprocess.run([str(prog or program()), "--print-settings", *options], capture_output=True, text=True)
    if not proc.returncode:
        return None
    why = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    return why.removeprefix("topocoll-packet: error: ").removesuffix(" (--help lists the options)")


def describe_model(m: dict) -> str:
    """One line for a result's settings from the simulator's --print-settings."""
    if m["congestion"] != "cubic":
        tcp = f"TCP {m['congestion'].capitalize()} (ns-3's)"
    else:
        tcp = "TCP Cubic as Linux's" if m["linux_cubic"] else "TCP Cubic (ns-3's TcpCubic)"
    parts = [tcp, f"MSS {m['mss']}", f"delayed ACKs {format_time(m['delayed_ack_s'])}"]
    flags = [("loss_probes", "tail loss probes", "no tail loss probe"),
             ("lost_retransmits", "RACK's lost retransmissions", "lost retransmissions left to the timeout"),
             ("rack_recovery", "RACK in fast recovery", "ns-3's fast recovery"),
             ("rack_ties", "RACK's ties in the order sent", None),
             ("reo_window", "RACK's reordering window before a recovery", None),
             ("count_delivered", "the window grown by what an ACK delivers", None),
             ("linux_hystart", "Linux's HyStart", "ns-3's HyStart"),
             ("ack_rtt", "HyStart on each ACK's round trip", "HyStart on ns-3's smoothed RTT"),
             ("hystart_rounds", "HyStart's rounds begun below its low window", None),
             ("linux_rto", "Linux's retransmission timer", "ns-3's retransmission timer"),
             ("linux_tlp", "Linux's loss probe timer", None),
             ("probe_small_queues", "loss probes held back by small queues", None),
             ("linux_prr", "Linux's rate reduction in recovery", "ns-3's rate reduction in recovery"),
             ("sack_compression", "Linux's SACK compression", "an ACK for every out-of-order segment"),
             ("forward_retransmits", "forward retransmissions", "no forward retransmission"),
             ("timeout_keeps_ssthresh", "timeouts keep a recovery's ssthresh", None),
             ("small_queues", "TCP small queues", "no TCP small queues"),
             ("tsq_gso", "checked a GSO packet at a time", None),
             ("gso_clumps", "GSO packets leaving machines whole", None),
             ("linux_receive", "Linux's receive window and stretch ACKs", None),
             ("window_in_packets", "restarts after idle in whole segments", None),
             ("timer_ticks", "TCP's timers run on the kernel's timer-wheel ticks", None)]
    within = {"ack_rtt": "linux_hystart", "hystart_rounds": "linux_hystart", "tsq_gso": "small_queues", "probe_small_queues": "small_queues", "gso_clumps": "tsq_gso"}   # a part of another behaviour: said only where that one runs
    parts += [said for said in (on if m[key] else off for key, on, off in flags
                                if m[within.get(key, key)] or key not in within) if said]
    if m.get("tsq_until") == "receiver":
        parts.append("small queues counting a segment until its receiver takes it")
    if m["linux_cubic"] and m["linux_hystart"] and "hystart_ack_delta_us" in m:
        parts.append(f"HyStart's ACK trains ended by a gap over {format_time(m['hystart_ack_delta_us'] * 1e-6)}")
    parts.append("send buffer autotuned" if m["sndbuf"] == 0 else f"send buffer {m['sndbuf']} bytes")
    parts.append({"eager": "connections opened before the run",
                  "lazy": "connections opened at their first message",
                  "init": "connections opened at their first message but the library's start-up pairs"}[m["connect"]])
    if m["host_cores"]:
        parts.append(f"{m['host_cores']} host cores shared" + ("" if m.get("idle_wakes", True) else ", paced ranks asleep to their deadlines")
                     + ("" if m.get("idle_yield", True) else ", ranks keeping a core their whole turn")
                     + (f", each frozen {m['host_freezes']:g} % of the time" if m.get("host_freezes") else "")
                     + (f", {format_time(m['host_softirq'])} of one a frame taken in" if m.get("host_softirq") else ""))
    return f"ns-3 {m['ns3']} packets: " + ", ".join(parts)


class PacketBackend:
    name = "packet"

    def __init__(self, topology_arg: str, topology: Topology, bandwidth: float, latency: float, buffer: int = 100,
                 rto_min: str | None = None, host_queue: str = HOST_QUEUES[0], sync_depth: int | None = None,
                 counts: list[int] | None = None, env: dict | None = None, collective: str = "alltoall",
                 skew: str | None = None, seed: int = 1, rendezvous: str = RENDEZVOUS[0], starts: str | None = None):
        if collective != "alltoall":
            raise TopocollError("invalid argument", f"--backend packet runs MPI_Alltoall only, not {collective}")
        if counts and any(c != 1 for c in counts):
            raise TopocollError("invalid argument", "--backend packet runs one rank a machine (--ranks-per-machine 1)")
        if not 2 <= buffer <= MAX_QUEUE_PACKETS:
            raise TopocollError("invalid argument", f"--buffer {buffer}: a queue of 2 to {MAX_QUEUE_PACKETS} packets")
        self.rto_min = parse_time(rto_min or DEFAULT_RTO_MIN)
        if not 0 < self.rto_min <= 60:
            raise TopocollError("invalid argument", f"--rto-min {rto_min}: a time in (0, 60 s]")
        self.skew = parse_time(skew) if skew else 0.0
        if not 0 <= self.skew <= MAX_SKEW:
            raise TopocollError("invalid argument", f"--skew {skew}: a time from 0 to {format_time(MAX_SKEW)}")
        if not 0 <= seed < 1 << 53:
            raise TopocollError("invalid argument", f"--seed {seed}: a whole number from 0 to 2^53 - 1")
        if host_queue not in HOST_QUEUES:
            raise TopocollError("invalid argument", f"--host-queue {host_queue}: the packet back-end models "
                                f"{' and '.join(HOST_QUEUES)}")
        if rendezvous not in RENDEZVOUS:
            raise TopocollError("invalid argument", f"--rendezvous {rendezvous}; valid: {', '.join(RENDEZVOUS)}")
        self.seed, self.rendezvous = seed, rendezvous
        if starts and self.skew:
            raise TopocollError("invalid argument", "--skew and --starts: one or the other")
        if starts and not os.path.isfile(starts):
            raise TopocollError("i/o error", f"--starts: no file '{starts}'")
        self.starts = os.path.abspath(starts) if starts else None   # the simulator reads and checks it
        self.program = program()
        self.topology = topology
        self.bandwidth, self.latency, self.buffer, self.host_queue = bandwidth, latency, buffer, host_queue
        self.plan_topology_arg: str | None = None   # bench --plan-topology
        self.env = dict(env or {})
        if sync_depth:
            self.env["TOPOCOLL_SYNC_DEPTH"] = str(sync_depth)
        #: the library's variables no option set, taken from the environment as the
        #: library itself would take them (validate() names them in its refusals)
        self.from_environment = [var for var in ENV_OPTIONS if var not in self.env and os.environ.get(var)]
        self.env.update({var: os.environ[var] for var in self.from_environment})
        self.env.setdefault("TOPOCOLL_NAP", DEFAULT_NAP)
        self.collective = collective
        self.tuning: str | None = None
        self.messages: dict = {}
        self.runs: list[dict] = []                 # the simulator's record of each (algorithm, size)
        self._model: dict | None = None            # model(): the simulator's --print-settings
        self.quiet = False                         # bench --quiet: no progress lines
        self.workdir = Path(tempfile.mkdtemp(prefix="topocoll-packet-"))
        self.topology_file = self.workdir / "topology.yaml"
        self.topology_file.write_text(topology.write("yaml"))

    def model(self) -> dict:
        """The simulator's own account of what it models with these options
        (``--print-settings``): TCP's behaviours, the queues, the MPI."""
        if self._model is None:
            proc = subprocess.run([str(self.program), "--print-settings", *self.model_options()],
                                  capture_output=True, text=True)
            try:
                self._model = json.loads(proc.stdout) if proc.returncode == 0 else None
            except json.JSONDecodeError:
                pass
            if self._model is None:
                raise TopocollError("i/o error", f"the packet simulator could not say its settings (exit "
                                                 f"{proc.returncode}): {proc.stderr.strip()[-2000:]}")
        return self._model

    def validate(self, sizes: list[int], repetitions: int, warmup: int) -> None:
        """Before any run: whether the simulator takes the topology (its
        links' rates and latencies), the sizes and the counts, by its own
        checks (``--print-settings`` with them all)."""
        bounds = sorted({min(sizes), max(sizes)})   # each size runs alone: their range is what counts
        why = refusal(self.command("faraj-yuan", bounds, repetitions, warmup)[1:], self.program)
        if why is not None:
            # the simulator's option by the name the user gave it
            names = {"--block": "--sizes", **{ENV_OPTIONS[var]: f"{var} in the environment"
                                              for var in self.from_environment}}
            flag, colon, rest = why.partition(":")
            if colon and flag in names:
                why = names[flag] + colon + rest
            raise TopocollError("invalid argument", f"--backend packet: {why}")

    def settings(self) -> dict:
        return {"network": describe_model(self.model()),
                "buffer_packets": self.buffer, "host_queue": self.host_queue, "rto_min": format_time(self.rto_min),
                "native": "Open MPI 4.1's fixed decision rules", "rendezvous": self.rendezvous,
                **({"skew": f"{format_time(self.skew)} (seed {self.seed})"} if self.skew else {}),
                **({"starts": f"replayed from {self.starts}"} if self.starts else {}), **self.env}

    def peak_bps(self, topology: Topology) -> float:
        return topology.peak_throughput(self.bandwidth)

    def options(self) -> list[str]:
        """The simulator's options for the variables and settings given."""
        args = []
        for var, flag in ENV_OPTIONS.items():
            value = self.env.get(var)
            if value in (None, ""):
                continue
            try:
                if flag in TIME_OPTIONS:
                    value = f"{parse_time(value):.9g}"
                elif flag in ("--piece-size", "--segment-size"):
                    value = str(parse_size(value))
            except TopocollError as e:
                raise TopocollError(e.status, f"{var}: {e}") from None
            args += [flag, str(value)]
        for var in self.env:
            if var.startswith("TOPOCOLL_") and var not in ENV_OPTIONS and var not in ("TOPOCOLL_STATS",):
                raise TopocollError("invalid argument", f"{var} has no meaning in the packet simulator")
        return args

    def command(self, algorithm: str, sizes: list[int], repetitions: int, warmup: int) -> list[str]:
        """One simulation of ``sizes`` in turn on the same connections, as
        the benchmark program runs them on the testbed."""
        return [str(self.program), "--topology", str(self.topology_file), "--algorithm", algorithm,
                "--block", ",".join(map(str, sizes)), "--warmup", str(warmup), "--repetitions", str(repetitions),
                *self.model_options()]

    def model_options(self) -> list[str]:
        """The simulator's options for the network, TCP and MPI modelled (all
        but what to run and on which topology)."""
        opts = ["--rate", f"{self.bandwidth:.0f}", "--latency", f"{self.latency:.9g}", "--buffer", str(self.buffer),
                "--host-queue", self.host_queue, "--rto-min", f"{self.rto_min:.9g}", "--rendezvous", self.rendezvous]
        if self.skew:
            opts += ["--skew", f"{self.skew:.9g}", "--seed", str(self.seed)]
        if self.starts:
            opts += ["--starts", self.starts]
        if self.plan_topology_arg:
            opts += ["--plan-topology", self.plan_topology_arg]
        return opts + self.options()

    def run(self, algorithm: str, sizes: list[int], repetitions: int, warmup: int, on_size=None) -> list[Sample]:
        """Each size in a simulation of its own, on new connections: what one
        size's calls leave in TCP for the next is not what Linux leaves
        (docs/packet.md), so a size runs as it does first in its job."""
        if algorithm.startswith("native:") or algorithm.startswith("auto"):
            raise TopocollError("invalid argument", f"{algorithm}: the packet simulator runs the registry's "
                                                    "algorithms and native (Open MPI's fixed rules)")
        return [Sample(algorithm, rec["block"], k, t) for size in sizes
                for rec in self.simulate(algorithm, [size], repetitions, warmup, on_size)
                for k, t in enumerate(rec["times"])]

    def simulate(self, algorithm: str, sizes: list[int], repetitions: int, warmup: int, on_size=None,
                 extra: list[str] | None = None) -> list[dict]:
        """One simulation of ``sizes`` in turn (``extra``: more of the
        simulator's options): its record of each size, also kept in
        ``self.runs``."""
        proc = subprocess.Popen(self.command(algorithm, sizes, repetitions, warmup) + ["--progress"] + (extra or []),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        errors: list[str] = []

        def progress() -> None:   # each call's start: progress on long runs
            for line in proc.stderr:
                if not PROGRESS.match(line):
                    errors.append(line)
                elif not self.quiet:
                    print(f"  {algorithm} {line.split(': ', 1)[1].rstrip()}", file=sys.stderr)

        reader = threading.Thread(target=progress, daemon=True)
        reader.start()
        records, done, wrong = [], 0, None
        try:
            for line in proc.stdout:   # a JSON line a size, as each finishes
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    errors.append(f"not a JSON line on its output: {line[:200]!r}\n")
                    continue
                done += 1
                if rec["bad_bytes"]:
                    wrong = wrong or rec
                    continue
                records.append(rec)
                if on_size:
                    on_size(rec["block"])
        except BaseException:   # interrupted or terminated: the simulation goes with us
            proc.kill()
            proc.wait()
            raise
        proc.wait()
        reader.join()
        if wrong:
            raise TopocollError("verification failed", f"{algorithm} at {wrong['block']} bytes: {wrong['bad_bytes']} "
                                                       "bytes arrived wrong in the packet simulation")
        if done < len(sizes) or proc.returncode:
            raise TopocollError("i/o error", f"the packet simulator failed on {algorithm} at {sizes[min(done, len(sizes) - 1)]} "
                                             f"bytes (exit {proc.returncode}): {''.join(errors).strip()[-2000:]}")
        self.runs += records
        return records

    def summary(self) -> str:
        """What each size's calls saw besides the times: drops at switch ports
        (and the port that dropped most), TCP timeouts, simulation wall time."""
        if not self.runs:
            return ""
        lines = ["packet simulation, each (algorithm, size): every call's drops at switch ports, TCP timeouts, "
                 "the simulation's wall time",
                 f"  {'algorithm':<20} {'size':>8} {'drops':>9} {'timeouts':>9}  {'port dropping most':<24} {'wall s':>8}"]
        for rec in self.runs:
            ports = rec.get("drops_by_port") or {}
            worst = max(ports, key=ports.get) if ports else "-"
            worst = f"{worst} ({ports[worst]})" if ports else worst
            lines.append(f"  {rec['algorithm']:<20} {rec['block']:>8} {rec['drops_switch']:>9} {rec['tcp_timeouts']:>9}  "
                         f"{worst:<24} {rec['wall_s']:>8.1f}")
        return "\n".join(lines)

    def close(self) -> None:
        for f in self.workdir.iterdir():
            f.unlink()
        os.rmdir(self.workdir)
