#!/usr/bin/env python3
"""The packet simulator's validation grid against the emulated cluster (issue 21).

  packet_validation.py record DIR [--runs 3] [--in-turn]
        testbed: 3 x 4 and 2 x 8 machines, 100- and 32-packet ports, 32-256 KB,
        four algorithms, 9 timed calls a run, each run's starts recorded; each
        (algorithm, size) in a job of its own, or with --in-turn an algorithm's
        sizes in one job, smallest first (as `topocoll bench` runs them);
        ONLY=... (as for replay) records only those points, e.g. one point
        20 runs deep: ONLY='444|32|pairwise|65536' ... record DIR --runs 20;
        MCA='KEY=VALUE,...' passes Open MPI parameters to every job (bench
        --mca; kept in DIR/mca), e.g. MCA=btl_tcp_sndbuf=131072 with a
        replay given the same buffer (--sndbuf); RATE=50mbit records with
        every link at that rate (kept in DIR/rate, which replay reads;
        default the testbed's, 100 Mbit/s); HYSTART_ACK_DELTA=4000 sets the
        kernel's tcp_cubic hystart_ack_delta_us for the recording (restored
        after; kept in DIR/hystart_ack_delta, which replay passes to the
        simulator as --hystart-ack-delta)
  packet_validation.py replay DIR TAG [FLAGS...]
        simulate every recorded run with its starts, the way it was recorded
        (apart, or in turn on the same connections), its ranks sharing the
        recording host's cores (--host-cores N, N from DIR/cores, else this
        machine's); FLAGS go to topocoll-packet after those, e.g. --linux-cubic
        off, --host-cores 0 (a core a rank); --testbed-model stands for the
        emulated cluster's own model (TESTBED_MODEL: frames charged until
        received, its GSO packets and shapers, Linux 6.18's HyStart rounds,
        RACK's reordering window), the one validated at every point;
        ONLY=88|32|linear|32768,444|100 (prefixes of
        TOPOLOGY|BUFFER|ALGORITHM|BLOCK) replays only those points
  packet_validation.py compare DIR[,DIR...] TAG...
        pooled simulated median / pooled testbed median at each point, with a
        90 % bootstrap interval; several recordings (each replayed as TAG) pool
        their runs, and a point outside 10 % that two or more of them hold
        says how far the testbed's own recordings lie apart there (each
        recording's median over the rest's pooled median, least-greatest)
  packet_validation.py agreement DIR1[,DIR...] DIR2[,DIR...]
        the testbed against itself: the second recordings' pooled median / the
        first's at each point, the same interval and count, to set the
        simulator's beside

Run `record` on an idle machine (about 35 minutes; 25 with --in-turn); `replay`
takes 10-15 minutes with two jobs (JOBS=n to change) and its results do not
depend on the load.  Reports under docs/results/ quote its output.
"""
from __future__ import annotations

import concurrent.futures as cf
import csv
import glob
import json
import math
import os
import random
import statistics as st
import subprocess
import sys
from pathlib import Path

TOPOLOGIES = {"444": "chain:4,4,4", "88": "chain:8,8"}
BUFFERS = (100, 32)
ALGORITHMS = ("faraj-yuan", "linear", "pairwise", "native")
SIZES = (32768, 65536, 131072, 262144)
REPETITIONS = 9
#: untimed calls at each size on the testbed: the bench's warm-up, then the
#: benchmark program's checked call (core/bench/alltoall_bench.c)
UNTIMED = 2
#: the emulated cluster as the simulator models it (docs/packet.md, validation): a frame charged to its
#: socket until the receiving machine takes it, small queues a GSO packet at a time and GSO packets
#: through the machines' shapers, HyStart's rounds as its Linux 6.18 runs them, RACK's reordering window
#: before a recovery and its ties in the order sent
TESTBED_MODEL = ("--tsq-until", "receiver", "--tsq-gso", "on", "--gso-clumps", "on", "--hystart-rounds", "on",
                 "--reo-window", "on", "--rack-ties", "on")


def model_flags(flags: list[str]) -> list[str]:
    """The simulator's FLAGS, --testbed-model spelled out (TESTBED_MODEL)"""
    return [f for flag in flags for f in (TESTBED_MODEL if flag == "--testbed-model" else (flag,))]


#: DIR/ORDER says how the recording ran its sizes ("apart" or "in-turn");
#: recordings without it (before 2026-11-28) ran them in turn
ORDER = "order"
#: DIR/CORES: the recording host's cores, which the testbed's ranks shared
CORES = "cores"
#: DIR/MCA: the Open MPI parameters the recording passed (MCA=...), a line each
MCA = "mca"
#: DIR/RATE: the links' rate the recording ran at (RATE=...), bits/s;
#: recordings without it ran at the testbed's default (default_rate)
RATE = "rate"
#: the links' rates a recording may run at, bits/s
RATES = (1e6, 1e10)
#: DIR/HYSTART: the kernel's HyStart ACK-train limit the recording ran with
#: (HYSTART_ACK_DELTA=...), microseconds; recordings without it ran with the
#: kernel's own (Linux's 2,000, the simulator's default)
HYSTART = "hystart_ack_delta"
#: where the kernel keeps it (global: every connection on the machine)
KERNEL_HYSTART = Path("/sys/module/tcp_cubic/parameters/hystart_ack_delta_us")


def topocoll(*args: str, **kw) -> subprocess.CompletedProcess:
    """topocoll ARGS; a failure ends the script, naming the command (its
    own message is above it, or in the run's out_*.txt)"""
    proc = subprocess.run(["topocoll", *args], **kw)
    if proc.returncode:
        sys.exit(f"packet_validation: 'topocoll {' '.join(args)}' failed (exit {proc.returncode})")
    return proc


def only() -> list[str]:
    """ONLY's points: prefixes of TOPOLOGY|BUFFER|ALGORITHM|BLOCK (none: all)"""
    return [o for o in os.environ.get("ONLY", "").split(",") if o]


def wanted(points: list[str], topo: str, buf: int, alg: str, sizes) -> bool:
    """a job (an algorithm's sizes on a topology and port buffer) runs if ONLY
    is empty or names any of its points; an in-turn job runs whole"""
    return not points or any(f"{topo}|{buf}|{alg}|{size}".startswith(o) for o in points for size in sizes)


def mca() -> list[str]:
    """MCA's Open MPI parameters, KEY=VALUE each (none: Open MPI's
    defaults), checked as the testbed checks --mca"""
    from topocoll._core import TopocollError
    from topocoll.testbed.mpi import mca_params
    pairs = [kv.strip() for kv in os.environ.get("MCA", "").split(",") if kv.strip()]
    for kv in pairs:
        try:
            mca_params([kv])
        except TopocollError:
            sys.exit(f"packet_validation: MCA: '{kv}' is not KEY=VALUE")
    return pairs


def default_rate() -> float:
    """the testbed's links' rate when none is given, bits/s (the core's)"""
    from topocoll._core import default
    return default("bandwidth")


def plausible(bps: float, where: str) -> float:
    if not RATES[0] <= bps <= RATES[1]:
        sys.exit(f"packet_validation: {where}: {bps:g} bits/s is not a links' rate from 1 Mbit/s to 10 Gbit/s")
    return bps


def rate() -> float:
    """RATE's links' rate in bits/s (none: the testbed's default)"""
    from topocoll._core import TopocollError, parse_rate
    text = os.environ.get("RATE", "").strip()
    if not text:
        return default_rate()
    try:
        return plausible(parse_rate(text), f"RATE={text}")
    except TopocollError as e:
        sys.exit(f"packet_validation: RATE: {e}")


def recorded_rate(d: Path) -> float:
    """the rate DIR was recorded at, bits/s"""
    f = d / RATE
    if not f.exists():
        return default_rate()
    try:
        bps = float(f.read_text())
    except ValueError:
        sys.exit(f"packet_validation: {f}: '{f.read_text().strip()}' is not a rate in bits/s")
    return plausible(bps, str(f))


def hystart_ack_delta() -> str | None:
    """HYSTART_ACK_DELTA's microseconds (none: leave the kernel's), checked
    by the simulator, which takes the same range (--hystart-ack-delta)"""
    from topocoll._core import TopocollError
    from topocoll.bench.packet import refusal
    text = os.environ.get("HYSTART_ACK_DELTA", "").strip()
    if not text:
        return None
    try:
        why = refusal(["--hystart-ack-delta", text])
    except TopocollError as e:
        why = str(e)
    if why is not None:
        sys.exit(f"packet_validation: HYSTART_ACK_DELTA: {why}")
    return text


def record(d: Path, runs: int, in_turn: bool) -> None:
    delta = hystart_ack_delta()
    if delta is None:
        return record_runs(d, runs, in_turn)
    try:
        kept = KERNEL_HYSTART.read_text()
        KERNEL_HYSTART.write_text(f"{delta}\n")
    except OSError as e:
        sys.exit(f"packet_validation: HYSTART_ACK_DELTA: {KERNEL_HYSTART}: {e.strerror} (tcp_cubic loaded? root?)")
    try:
        d.mkdir(parents=True, exist_ok=True)
        (d / HYSTART).write_text(f"{delta}\n")
        record_runs(d, runs, in_turn)
    finally:
        KERNEL_HYSTART.write_text(kept)


def record_runs(d: Path, runs: int, in_turn: bool) -> None:
    points = only()
    params = mca()
    bps = rate()
    d.mkdir(parents=True, exist_ok=True)
    (d / RATE).write_text(f"{bps:.0f}\n")
    (d / ORDER).write_text("in-turn\n" if in_turn else "apart\n")
    (d / CORES).write_text(f"{os.cpu_count()}\n")
    if params:
        (d / MCA).write_text("".join(f"{kv}\n" for kv in params))
    mca_args = [a for kv in params for a in ("--mca", kv)]
    parts = d / "parts"
    parts.mkdir(exist_ok=True)
    for run in range(1, runs + 1):
        for topo, spec in TOPOLOGIES.items():
            for buf in BUFFERS:
                tag = f"{topo}_{buf}_r{run}"
                jobs = [(alg, SIZES) for alg in ALGORITHMS] if in_turn else \
                    [(alg, (size,)) for alg in ALGORITHMS for size in SIZES]
                jobs = [(alg, sizes) for alg, sizes in jobs if wanted(points, topo, buf, alg, sizes)]
                if not jobs:
                    continue
                print(f"record {tag}: load {os.getloadavg()[0]:.2f}", flush=True)
                topocoll("testbed", "up", spec, "--buffer", str(buf), "--rate", f"{bps:.0f}bit",
                         stdout=subprocess.DEVNULL)
                try:
                    with open(d / f"out_{tag}.txt", "w") as out:
                        for k, (alg, sizes) in enumerate(jobs):
                            topocoll("bench", spec, "--backend", "testbed", "--buffer", str(buf),
                                     "--sizes", ",".join(f"{s // 1024}K" for s in sizes), "--algorithms", alg,
                                     "--repetitions", str(REPETITIONS), "--record-starts", str(parts / f"st_{tag}_{k}.txt"),
                                     "--csv", str(parts / f"tb_{tag}_{k}.csv"), "--bandwidth", f"{bps:.0f}bit", *mca_args,
                                     stdout=out, stderr=subprocess.STDOUT)
                finally:
                    topocoll("testbed", "down", stdout=subprocess.DEVNULL)
                merge([parts / f"st_{tag}_{k}.txt" for k in range(len(jobs))], d / f"st_{tag}.txt")
                merge([parts / f"tb_{tag}_{k}.csv" for k in range(len(jobs))], d / f"tb_{tag}.csv")


def merge(files: list[Path], into: Path) -> None:
    """The jobs' files as one: the first one's header line, then every file's body."""
    lines = []
    for k, f in enumerate(files):
        text = f.read_text().splitlines(keepends=True)
        lines += text if k == 0 else text[1:]
    into.write_text("".join(lines))


def recorded_option(f: Path, option: str, flags: list[str], unit: str, default: str | None = None) -> list[str]:
    """OPTION for the simulator with the whole number the recording kept in
    F (without F: DEFAULT, or none), unless FLAGS give OPTION; the number's
    range is the simulator's to check"""
    if option in flags:
        return []
    value = f.read_text().strip() if f.exists() else default
    if value is None:
        return []
    if not value.isdigit():
        sys.exit(f"packet_validation: {f}: '{value}' is not a number of {unit}")
    return [option, value]


def host_cores(d: Path, flags: list[str]) -> list[str]:
    """The testbed runs every machine's rank on one host, so the replay
    shares that host's cores among the ranks as the testbed did: the
    recording's DIR/CORES (recordings before it: this machine's), unless
    FLAGS say otherwise."""
    return recorded_option(d / CORES, "--host-cores", flags, "cores", str(os.cpu_count()))


def hystart_flags(d: Path, flags: list[str]) -> list[str]:
    """The kernel's HyStart ACK-train limit the recording ran with (DIR/HYSTART)
    for the simulator, unless FLAGS set it"""
    return recorded_option(d / HYSTART, "--hystart-ack-delta", flags, "microseconds")


def replay(d: Path, tag: str, flags: list[str]) -> None:
    """The simulator's command as `topocoll bench --backend packet --latency 0
    --starts` builds it (its defaults: port buffer, host queue, minimum RTO,
    rendezvous, nap), and FLAGS after it: each size after the testbed's
    untimed calls, in a simulation of its own or, as the recording ran them,
    an algorithm's sizes in turn in one."""
    from topocoll._core import Topology, TopocollError
    from topocoll.bench.packet import PacketBackend
    flags = host_cores(d, flags) + hystart_flags(d, flags) + flags
    points = only()
    bps = recorded_rate(d)
    in_turn = not (d / ORDER).exists() or (d / ORDER).read_text().split() == ["in-turn"]
    jobs, backends = [], []
    for starts in sorted(glob.glob(str(d / "st_*_r*.txt"))):
        topo, buf, run = Path(starts).stem.split("_")[1:4]
        spec = TOPOLOGIES[topo]
        backend = PacketBackend(spec, Topology.synthetic(spec), bps, 0.0, buffer=int(buf), starts=starts)
        backend.quiet = True
        backends.append(backend)
        recorded = {tuple(line.split()[:2]) for line in Path(starts).read_text().splitlines()
                    if line.strip() and not line.startswith("#")}
        for alg in ALGORITHMS:
            for sizes in [list(SIZES)] if in_turn else [[size] for size in SIZES]:
                if not wanted(points, topo, int(buf), alg, sizes) or \
                        not any((alg, str(size)) in recorded for size in sizes):   # a recording of some points
                    continue
                jobs.append((f"{topo}|{buf}|{run}|{alg}", backend, alg, sizes))

    def go(job):
        key, backend, alg, sizes = job
        try:
            return key, backend.simulate(alg, sizes, REPETITIONS, UNTIMED, extra=flags)
        except TopocollError as e:
            sys.exit(f"packet_validation: {key} {sizes}: {e}")

    out = {}
    with cf.ThreadPoolExecutor(int(os.environ.get("JOBS", "2"))) as ex:
        for k, (key, recs) in enumerate(ex.map(go, jobs), 1):
            for rec in recs:
                out[f"{key}|{rec['block']}"] = rec
            if k % 8 == 0:
                print(f"replay {tag}: {k} of {len(jobs)}", flush=True)
    for backend in backends:
        backend.close()
    (d / f"sim_{tag}.json").write_text(json.dumps({"flags": flags, "in_turn": in_turn, "runs": out}))


def testbed_runs(dirs: list[Path]) -> dict:
    """(topology, buffer, algorithm, block) -> run -> its timed calls' seconds"""
    runs: dict = {}
    for k, d in enumerate(dirs):
        files = glob.glob(str(d / "tb_*_r*.csv"))
        if not files:
            sys.exit(f"packet_validation: {d}: no testbed recording there ('record {d}' makes one)")
        for f in files:
            topo, buf, run = Path(f).stem.split("_")[1:4]
            for row in csv.DictReader(open(f)):
                key = (topo, int(buf), row["algorithm"], int(row["msize_bytes"]))
                runs.setdefault(key, {}).setdefault(f"{k}:{run}", []).append(float(row["seconds"]))
    return runs


def simulated_runs(dirs: list[Path], tag: str) -> dict:
    runs: dict = {}
    for k, d in enumerate(dirs):
        f = d / f"sim_{tag}.json"
        if not f.is_file():
            sys.exit(f"packet_validation: {f}: no such replay ('replay {d} {tag}' writes it)")
        for key, rec in json.loads(f.read_text())["runs"].items():
            topo, buf, run, alg, size = key.split("|")
            runs.setdefault((topo, int(buf), alg, int(size)), {})[f"{k}:{run}"] = rec["times"]
    return runs


def pooled(runs: dict) -> float:
    return st.median([t for calls in runs.values() for t in calls])


def resampled(runs: dict, rng: random.Random) -> float:
    """The runs drawn with replacement, then each run's calls."""
    picks = [rng.choice(list(runs.values())) for _ in runs]
    return st.median([rng.choice(calls) for calls in picks for _ in calls])


def recording_spread(runs: dict) -> tuple[float, float] | None:
    """The testbed against itself at one point: each recording's median over
    the pooled median of the other recordings' runs, the least and the
    greatest; None below two recordings.  (Run keys are RECORDING:RUN.)"""
    by: dict = {}
    for key, calls in runs.items():
        by.setdefault(key.split(":")[0], {})[key] = calls
    if len(by) < 2:
        return None
    r = [pooled(mine) / pooled({key: calls for other, theirs in by.items() if other != rec for key, calls in theirs.items()})
         for rec, mine in by.items()]
    return min(r), max(r)


def apart(spread: tuple[float, float] | None) -> bool:
    return spread is not None and (spread[0] < 0.90 or spread[1] > 1.10)


def ratios(tag: str, names: tuple[str, str], base: dict, other: dict) -> None:
    """other's pooled median / base's at each point both have, its 90 %
    bootstrap interval, and how many are within 10 %; a point outside,
    where base pools two recordings or more, says how far base's own
    recordings lie from each other (recording_spread)"""
    rng, within, meets, logs, unsettled = random.Random(1), 0, 0, [], 0
    keys = sorted(k for k in base if k in other)
    print(f"== {tag}")
    for key in keys:
        t, s = pooled(base[key]), pooled(other[key])
        q = sorted(resampled(other[key], rng) / resampled(base[key], rng) for _ in range(2000))
        lo, hi = q[100], q[1899]
        ok = abs(s / t - 1) <= 0.10
        within += ok
        logs.append(abs(math.log(s / t)))
        meets += lo <= 1.10 and hi >= 0.90
        note = ""
        if not ok:
            spread = recording_spread(base[key])
            unsettled += apart(spread)
            note = "  X" if spread is None else \
                f"  X ({names[0]}'s recordings {spread[0]:.2f}-{spread[1]:.2f} of the rest)"
        print(f"{TOPOLOGIES[key[0]]:>12} {key[1]:>3} {key[2]:<11} {key[3] // 1024:>4}K  {names[0]} {t * 1e3:7.1f} ms"
              f"  {names[1]} {s * 1e3:7.1f} ms  {s / t:5.2f} [{lo:4.2f}, {hi:4.2f}]{note}")
    print(f"{tag}: {within} of {len(keys)} within 10 %; the ratio's 90 % interval meets [0.90, 1.10] at {meets}; "
          f"mean |log ratio| {st.fmean(logs) if logs else float('nan'):.4f}"
          + (f"; of the {len(keys) - within} outside, {unsettled} where {names[0]}'s own recordings lie more than "
             f"10 % from the rest" if within < len(keys) else ""))


def compare(dirs: list[Path], tags: list[str]) -> None:
    tb = testbed_runs(dirs)
    runs_apart = sum(max(map(st.median, r.values())) / min(map(st.median, r.values())) > 1.10 for r in tb.values())
    spreads = [recording_spread(r) for r in tb.values()]
    held = sum(s is not None for s in spreads)
    print(f"testbed: {len(tb)} points; at {runs_apart} its runs' medians lie more than 10 % apart"
          + (f"; at {sum(map(apart, spreads))} of the {held} in two recordings or more, a recording's median lies "
             f"more than 10 % from the rest's" if held else ""))
    for tag in tags:
        ratios(tag, ("testbed", "simulated"), tb, simulated_runs(dirs, tag))


def agreement(first: list[Path], second: list[Path]) -> None:
    names = [",".join(map(str, dirs)) for dirs in (first, second)]
    ratios(f"{names[1]} / {names[0]}", ("first", "second"), testbed_runs(first), testbed_runs(second))


def recordings(arg: str) -> list[Path]:
    """DIR[,DIR...]: recordings to pool"""
    return [Path(x) for x in arg.split(",")]


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] not in ("record", "replay", "compare", "agreement") or argv[0] == "-h":
        sys.exit(__doc__)
    d = Path(argv[1])
    if argv[0] == "record":
        rest = argv[2:]
        runs = int(rest[rest.index("--runs") + 1]) if "--runs" in rest else 3
        record(d, runs, "--in-turn" in rest)
    elif argv[0] == "replay":
        if len(argv) < 3:
            sys.exit(__doc__)
        replay(d, argv[2], model_flags(argv[3:]))
    elif argv[0] == "agreement":
        if len(argv) != 3:
            sys.exit(__doc__)
        agreement(recordings(argv[1]), recordings(argv[2]))
    else:
        compare(recordings(argv[1]), argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
