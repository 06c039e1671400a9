"""The packet-level back-end (bench --backend packet: SimGrid's SMPI over
ns-3): a small run in seconds, every byte of every block checked by the
benchmark program, and the knobs reaching ns-3."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys

import pytest

from topocoll.bench.packet import ns3_attributes

pytestmark = pytest.mark.skipif(not shutil.which("smpirun"), reason="SimGrid (libsimgrid-dev) not installed")


def bench(tmp_path, *args) -> dict:
    """Median seconds by algorithm of `topocoll bench --backend packet`."""
    out = tmp_path / "b.csv"
    proc = subprocess.run([sys.executable, "-m", "topocoll.cli", "bench", *args, "--backend", "packet", "--csv", str(out),
                           "--quiet"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = list(csv.DictReader(out.open()))
    assert {r["backend"] for r in rows} == {"packet"}
    times: dict = {}
    for r in rows:
        times.setdefault(r["algorithm"], []).append(float(r["seconds"]))
    return {a: sorted(v)[len(v) // 2] for a, v in times.items()}, rows


def test_every_block_delivered_over_packets(tmp_path):
    """Faraj & Yuan's schedule, the linear and pairwise exchanges and SMPI's
    own (Open MPI's decision rules) on two switches: the benchmark checks
    every byte of every block before it times (a wrong byte fails the
    bench), and the phases take longer than the bound says the links allow."""
    med, rows = bench(tmp_path, "chain:3,3", "--sizes", "16K", "--algorithms", "faraj-yuan,linear,pairwise,native",
                      "--repetitions", "2")
    assert set(med) == {"faraj-yuan", "linear", "pairwise", "native"}
    peak = float(rows[0]["peak_bps"])
    bound = 6 * 5 * 16384 * 8 / peak
    assert all(t > bound for t in med.values()), (med, bound)
    assert "ns-3" in rows[0]["settings"] and "buffer_packets=100" in rows[0]["settings"]


def test_switch_queues_reach_ns3(tmp_path):
    """All-to-all at once into 4-packet ports drops and recovers; into
    1000-packet ports it queues: the simulated times differ."""
    small, _ = bench(tmp_path, "chain:4,4", "--sizes", "32K", "--algorithms", "linear", "--repetitions", "1",
                     "--buffer", "4")
    large, _ = bench(tmp_path, "chain:4,4", "--sizes", "32K", "--algorithms", "linear", "--repetitions", "1",
                     "--buffer", "1000")
    assert abs(small["linear"] - large["linear"]) > 0.05 * large["linear"], (small, large)


def test_attributes_and_refusals(tmp_path):
    text = ns3_attributes(32, 0.2)
    assert "ns3::DropTailQueue<Packet>::MaxSize=32p" in text and "MinRto=+200000us" in text
    assert "SndBufSize=4194304" in text
    for args, word in ((["--buffer", "0"], "--buffer 0"), (["--rto-min", "0s"], "--rto-min")):
        proc = subprocess.run([sys.executable, "-m", "topocoll.cli", "bench", "chain:2,2", "--backend", "packet",
                               "--sizes", "1K", "--algorithms", "linear", *args], capture_output=True, text=True)
        assert proc.returncode == 2 and word in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_paced_calls_do_not_drift(tmp_path):
    """The executor paces over packets (as on a real cluster) by sleeping in
    simulated time: the same call takes the same time every time (a loop of
    MPI_Iprobe paid SMPI's growing back-off, and each call took longer than
    the one before), and the phases stay near the links' pace."""
    out = tmp_path / "p.csv"
    proc = subprocess.run([sys.executable, "-m", "topocoll.cli", "bench", "3", "--backend", "packet", "--sizes", "128K",
                           "--algorithms", "faraj-yuan", "--repetitions", "4", "--csv", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = list(csv.DictReader(out.open()))
    times = [float(r["seconds"]) for r in rows]
    assert "TOPOCOLL_PACE=on" in rows[0]["settings"]
    assert max(times) <= 1.01 * min(times), times
    # two phases of 128 KB at 100 Mbit/s: 21 ms at the raw rate
    assert 0.021 < times[0] < 0.021 / 0.85, times
