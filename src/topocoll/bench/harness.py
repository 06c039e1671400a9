"""The benchmark harness: algorithms side by side on one back-end, against the
physical limit.

A back-end knows how to run the benchmark program (core/bench/alltoall_bench.c)
for one algorithm over a list of block sizes and report the slowest rank's
time of each timed call; the harness does everything else: progress, the table
per size, the CSV of docs/interfaces.md and the figure.
"""

from __future__ import annotations

import csv
import statistics
import subprocess
import sys
from dataclasses import dataclass, field

from .._core import Topology, TopocollError, format_rate
from ..common import save_figure

CSV_COLUMNS = ["backend", "topology", "algorithm", "ranks", "msize_bytes", "repetition", "seconds"]


@dataclass
class Sample:
    algorithm: str
    msize: int
    repetition: int
    seconds: float


@dataclass
class Result:
    backend: str
    topology: Topology
    ranks: int
    peak_bps: float                 # peak aggregate throughput bound, bit/s
    settings: dict
    samples: list[Sample] = field(default_factory=list)
    collective: str = "alltoall"
    messages: dict = field(default_factory=dict)   # algorithm -> messages a call by level
    pattern: str = ""                               # alltoallv: the blocks' pattern
    bounds: dict = field(default_factory=dict)     # alltoallv: mean block -> link-load bound, seconds

    def median(self, algorithm: str, msize: int) -> float | None:
        xs = [s.seconds for s in self.samples if s.algorithm == algorithm and s.msize == msize]
        return statistics.median(xs) if xs else None

    def throughput(self, msize: int, seconds: float) -> float:
        """Aggregate throughput in bit/s: |M|(|M|-1) blocks of msize bytes."""
        m = self.ranks
        return m * (m - 1) * msize * 8 / seconds


def collective_env(collective: str, algorithm: str) -> dict:
    """The PMPI library's variables selecting `algorithm` for `collective`;
    ``two-level:L`` is the two-level tree clustered at level L."""
    name, _, level = algorithm.partition(":")
    env = {f"TOPOCOLL_{collective.upper()}": name}
    if level and name == "two-level":
        env["TOPOCOLL_TWO_LEVEL_AT"] = level
    return env


def auto_env(algorithm: str, tuning: str | None) -> dict:
    """TOPOCOLL_TUNING for `auto` (the tuned choice); `auto:untuned` is auto
    without a tuning file, as a user gets it out of the box."""
    return {"TOPOCOLL_TUNING": tuning} if algorithm == "auto" and tuning else {}


def collect(algorithm: str, cmd: list[str], env: dict, repetitions: int, on_size=None, cwd=None,
            collective: str = "alltoall", messages: dict | None = None,
            starts: list | None = None) -> list[Sample]:
    """Run the benchmark program (any launcher) and read its lines: every
    byte checked once per size, one sample per timed call; then make sure
    TOPOCOLL_STATS names the algorithm, so what ran is what was asked.  For
    the rooted collectives, messages[algorithm] gets the messages a call sent
    across each level (the library's counts over all calls); starts gets the
    program's `starts` lines (alltoall_bench --skew): (size, repetition, each
    rank's start after the earliest's in seconds) a timed call."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    samples = []
    for line in proc.stdout:
        parts = line.split()
        if parts[:1] == ["check"] and parts[2] != "ok":
            proc.kill()
            raise TopocollError("verification failed",
                                f"{algorithm}: {parts[3]} wrong bytes with {parts[1]}-byte blocks")
        if parts[:1] == ["starts"] and starts is not None:
            starts.append((int(parts[1]), int(parts[2]), [float(x) for x in parts[3:]]))
        if parts[:1] == ["result"]:
            samples.append(Sample(algorithm, int(parts[1]), int(parts[2]), float(parts[3])))
            if int(parts[2]) == repetitions - 1 and on_size:
                on_size(int(parts[1]))
    err = proc.stderr.read()
    if proc.wait() != 0:
        raise TopocollError("i/o error", f"the benchmark failed for {algorithm} (exit {proc.returncode}):\n{err[-2000:]}")
    name = algorithm.partition(":")[0]
    ran = [l for l in err.splitlines() if l.startswith(f"topocoll: {collective} ")]
    calls = [l for l in ran if l.startswith(f"topocoll: {collective} {name} calls=") or
             (name == "auto" and " calls=" in l)]     # auto: whatever it chose ran
    if not calls:
        refused = [l for l in err.splitlines() if l.startswith("topocoll: error: ")]
        if refused:   # the PMPI library refused its settings (a variable in the environment)
            raise TopocollError("invalid argument", f"{algorithm} did not run: the PMPI library: "
                                                    f"{refused[0].removeprefix('topocoll: error: ')}")
        tail = "\n".join(err.splitlines()[-8:])
        raise TopocollError("verification failed", f"{algorithm} did not run: {ran or tail}")
    learning = [l for l in err.splitlines() if l.startswith("topocoll: alltoallv learning")]
    if messages is not None and learning:   # alltoallv: what learning the counts cost rank 0
        messages[f"{algorithm} learning"] = learning[0].split(": ", 2)[2]
    counts = [l for l in ran if l.startswith(f"topocoll: {collective} {name} messages ")]
    if messages is not None and counts:
        n = int(calls[0].rsplit("=", 1)[1])
        messages[algorithm] = [int(x.split("=")[1]) / n for x in counts[0].split()[4:]]
    return samples


#: how a person reads each setting a back-end records (the CSV keeps the raw key=value)
SETTING_WORDS = {
    "rate_bps": lambda v: f"{format_rate(float(v))} links",
    "buffer_packets": lambda v: f"{v}-packet switch ports",
    "host_queue": lambda v: f"{v} host queues",
    "flow_order": lambda v: f"flow order {v}",
    "congestion": lambda v: f"TCP {v}",
    "rto_min": lambda v: f"RTO min {v}",
    "mca": lambda v: str(v),
    "sync_depth": lambda v: f"sync depth {v}",
    "pace": lambda v: f"pacing {v}",
    "pace_lead": lambda v: f"lead {v}",
    "nap": lambda v: f"nap {v}",
    "phase_order": lambda v: f"{v} phases",
    "ranks_per_machine": lambda v: f"{v} rank(s) a machine",
    "load_average": lambda v: f"load average {v}",
    "model": lambda v: f"model {v}",
    "native": lambda v: f"native = {v}",
    "rendezvous": lambda v: f"Open MPI's {v} rendezvous",
    "skew": lambda v: f"ranks start up to {v} apart",
    "starts": lambda v: f"ranks' starts {v}",
    "start_skew": lambda v: f"ranks left the barrier {v} apart",
    "host_steal": lambda v: f"the hypervisor took {v} of the cores",
}


def describe_settings(settings: dict) -> str:
    """The settings as a line a person reads ("100Mbit links, 100-packet
    switch ports, ..."); variables and unknown keys as NAME=value."""
    parts = []
    for k, v in settings.items():
        if k in ("cfg", "shared_malloc"):
            continue
        parts.append(SETTING_WORDS[k](v) if k in SETTING_WORDS else f"{k}={v}")
    return ", ".join(parts)


def format_size(n: int) -> str:
    for unit, mult in (("M", 1024 ** 2), ("K", 1024)):
        if n >= mult and n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


class Progress:
    """A one-line progress bar on stderr (quiet when stderr is not a terminal
    and `plain` lines are printed instead)."""

    def __init__(self, total: int, quiet: bool = False):
        self.total, self.done, self.quiet = max(total, 1), 0, quiet
        self.tty = sys.stderr.isatty()

    def step(self, label: str, n: int = 1) -> None:
        self.done += n
        if self.quiet:
            return
        frac = self.done / self.total
        if self.tty:
            bar = "#" * int(30 * frac)
            sys.stderr.write(f"\r[{bar:<30}] {self.done}/{self.total} {label:<40}")
            if self.done >= self.total:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(f"bench: {self.done}/{self.total} {label}\n")
        sys.stderr.flush()


def run(backend, topology: Topology, algorithms: list[str], sizes: list[int], repetitions: int,
        warmup: int = 1, quiet: bool = False) -> Result:
    """Run every algorithm over every size on the back-end."""
    result = Result(backend.name, topology, topology.num_machines, backend.peak_bps(topology), backend.settings(),
                    collective=getattr(backend, "collective", "alltoall"))
    backend.messages = result.messages
    progress = Progress(len(algorithms) * len(sizes), quiet)
    for alg in algorithms:
        for sample in backend.run(alg, sizes, repetitions, warmup,
                                  lambda size: progress.step(f"{alg} {format_size(size)}")):
            result.samples.append(sample)
    return result


#: medians this close to the fastest count as a tie in `tune`'s decisions (the
#: run-to-run spread of one algorithm on the emulated cluster: 1-3 % at
#: 32K-1M blocks)
TIE = 0.02


def winners(result: Result, algorithms: list[str], sizes: list[int], tie: float = 0.0,
            prefer: str | None = None) -> dict[int, str]:
    """The fastest algorithm (median) at each size; where `prefer`, else the
    previous size's choice, is within `tie` of the fastest, it stays (no
    change that is not measurably better, fewer switches between
    algorithms that measure alike)."""
    best, previous = {}, None
    for m in sizes:
        times = {a: result.median(a, m) for a in algorithms if result.median(a, m)}
        if not times:
            raise TopocollError("verification failed", f"no algorithm ran at {m}-byte blocks")
        best[m] = min(times, key=times.get)
        for keep in (prefer, previous):
            if keep in times and times[keep] <= times[best[m]] * (1 + tie):
                best[m] = keep
                break
        previous = best[m]
    return best


def collective_table(result: Result, algorithms: list[str], sizes: list[int]) -> str:
    """Rooted collectives: median time per size, speed-up over the first
    algorithm, and the messages a call sends across each level."""
    w = max([14] + [len(a) for a in algorithms])
    base = algorithms[0]
    lines = [f"\n{result.topology.name}, {result.ranks} ranks, MPI_{result.collective.capitalize()} "
             f"[{result.backend}]: median ms of one timed pass (speed-up over {base})"]
    head = f"  {'algorithm':<{w}} " + " ".join(f"{format_size(m):>16}" for m in sizes) + "   messages a call by level"
    lines += [head, "  " + "-" * (len(head) - 2)]
    for alg in algorithms:
        cells = []
        for m in sizes:
            t, b = result.median(alg, m), result.median(base, m)
            cells.append(f"{t * 1e3:>8.1f} ({b / t:.2f}x)" if t and b else f"{'-':>16}")
        msgs = result.messages.get(alg)
        lines.append(f"  {alg:<{w}} " + " ".join(f"{c:>16}" for c in cells) + "   " +
                     (" ".join(f"L{i}={x:g}" for i, x in enumerate(msgs)) if msgs else "-"))
    return "\n".join(lines)


def alltoallv_table(result: Result, algorithms: list[str], sizes: list[int]) -> str:
    """Unequal blocks: one table per mean block: median time, % of the
    link-load bound (bound / time), speed-up over native."""
    lines = []
    w = max([14] + [len(a) for a in algorithms])
    for m in sizes:
        bound = result.bounds.get(m, 0.0)
        lines.append(f"\n{result.topology.name}, {result.ranks} ranks, MPI_Alltoallv, {result.pattern} blocks of "
                     f"{format_size(m)} mean [{result.backend}]: link-load bound {bound * 1e3:.1f} ms")
        head = f"  {'algorithm':<{w}} {'median ms':>10} {'% bound':>8} {'vs native':>9}"
        lines += [head, "  " + "-" * (len(head) - 2)]
        native = result.median("native", m)
        for alg in algorithms:
            t = result.median(alg, m)
            if t is None:
                continue
            pct = f"{100 * bound / t:.1f}%" if bound and t > 0 else "-"
            speed = f"{native / t:.2f}x" if native and t > 0 else "-"
            lines.append(f"  {alg:<{w}} {t * 1e3:>10.2f} {pct:>8} {speed:>9}")
    notes = [f"  {a}: {result.messages[a + ' learning']}" for a in algorithms if a + " learning" in result.messages]
    if notes:
        lines += ["\nlearning the counts (rank 0, all sizes and calls of the run):"] + notes
    return "\n".join(lines)


def table(result: Result, algorithms: list[str], sizes: list[int]) -> str:
    """One table per size: median time, aggregate throughput, % of the peak,
    speed-up over native."""
    if result.collective == "alltoallv":
        return alltoallv_table(result, algorithms, sizes)
    if result.collective != "alltoall":
        return collective_table(result, algorithms, sizes)
    lines = []
    peak_mbps = result.peak_bps / 1e6
    w = max([14] + [len(a) for a in algorithms])
    for m in sizes:
        bound = result.ranks * (result.ranks - 1) * m * 8 / result.peak_bps if result.peak_bps else 0
        lines.append(f"\n{result.topology.name}, {result.ranks} ranks, {format_size(m)} blocks "
                     f"[{result.backend}]: peak bound {peak_mbps:.1f} Mbit/s = {bound * 1e3:.1f} ms")
        head = f"  {'algorithm':<{w}} {'median ms':>10} {'Mbit/s':>9} {'% peak':>7} {'vs native':>9}"
        lines.append(head)
        lines.append("  " + "-" * (len(head) - 2))
        native = result.median("native", m)
        for alg in algorithms:
            t = result.median(alg, m)
            if t is None:
                continue
            tp = result.throughput(m, t) if t > 0 else 0.0
            pct = 100 * tp / result.peak_bps if result.peak_bps else 0.0
            speed = f"{native / t:.2f}x" if native and t > 0 else "-"
            lines.append(f"  {alg:<{w}} {t * 1e3:>10.2f} {tp / 1e6:>9.1f} {pct:>6.1f}% {speed:>9}")
    return "\n".join(lines)


def write_csv(result: Result, path: str) -> None:
    """The CSV of docs/interfaces.md, plus the peak bound and the settings."""
    settings = ";".join(f"{k}={v}" for k, v in sorted(result.settings.items()))
    try:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(CSV_COLUMNS + ["peak_bps", "settings"])
            for s in result.samples:
                w.writerow([result.backend, result.topology.name, s.algorithm, result.ranks, s.msize, s.repetition,
                            f"{s.seconds:.9f}", f"{result.peak_bps:.0f}", settings])
    except OSError as e:
        raise TopocollError("i/o error", f"cannot write '{path}': {e.strerror}") from None


def plot(result: Result, algorithms: list[str], sizes: list[int], path: str) -> None:
    """Completion time and aggregate throughput against message size, one
    line per algorithm, the peak bound dashed (like Faraj & Yuan's Figure 7)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_b) = plt.subplots(1, 2, figsize=(12, 4.8))
    xs = [m / 1024 for m in sizes]
    markers = "osD^vP*Xh<>"
    for i, alg in enumerate(algorithms):
        pts = [(m, result.median(alg, m)) for m in sizes]
        pts = [(m, t) for m, t in pts if t]
        if not pts:
            continue
        style = dict(marker=markers[i % len(markers)], markersize=7 if alg == "faraj-yuan" else 5,
                     linewidth=2.6 if alg == "faraj-yuan" else 1.3, alpha=0.9)
        ax_t.plot([m / 1024 for m, _ in pts], [t * 1e3 for _, t in pts], label=alg, **style)
        if result.collective == "alltoall":
            ax_b.plot([m / 1024 for m, _ in pts], [result.throughput(m, t) / 1e6 for m, t in pts], label=alg,
                      **style)
        else:   # a pass of n broadcasts: time per broadcast (Karonis et al.'s Figure 8)
            ax_b.plot([m / 1024 for m, _ in pts], [t * 1e3 / result.ranks for _, t in pts], label=alg, **style)
    if result.collective == "alltoall":
        ax_b.axhline(result.peak_bps / 1e6, color="black", linestyle="--", linewidth=1.2, label="peak bound")
        bound = [result.ranks * (result.ranks - 1) * m * 8 / result.peak_bps * 1e3 for m in sizes]
        ax_t.plot(xs, bound, color="black", linestyle="--", linewidth=1.2, label="peak bound")
    for ax in (ax_t, ax_b):
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.set_xticklabels([format_size(m) for m in sizes])
        ax.set_xlabel("message size (bytes per block)")
        ax.grid(True, alpha=0.3)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("completion time (ms, median)")
    if result.collective == "alltoall":
        ax_b.set_ylabel("aggregate throughput (Mbit/s)")
    else:
        ax_t.set_ylabel("one pass: every rank the root once (ms, median)")
        ax_b.set_ylabel("per broadcast, with its acknowledgement barrier (ms)")
    ax_b.set_ylim(bottom=0)
    ax_t.legend(fontsize=8)
    fig.suptitle(f"MPI_{result.collective.capitalize()} on {result.topology.name} ({result.ranks} ranks), "
                 f"{result.backend}", fontsize=11)
    fig.tight_layout()
    save_figure(fig, path)
