"""scripts/packet_validation.py's comparisons on hand-made recordings: the
testbed against itself (agreement), the simulator against several recordings
pooled (compare DIR,DIR), and ONLY's points."""

import csv
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "packet_validation", Path(__file__).resolve().parents[1] / "scripts" / "packet_validation.py")
pv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pv)

POINTS = [("88", 32, "linear", 32768), ("88", 32, "pairwise", 32768)]


def recording(d: Path, seconds: dict, runs: int = 3) -> Path:
    """A recording of `runs` runs of 9 calls a point, each call seconds[point]
    (a list: one value a run)."""
    d.mkdir()
    for run in range(1, runs + 1):
        with open(d / f"tb_88_32_r{run}.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["backend", "topology", "algorithm", "ranks", "msize_bytes", "repetition", "seconds"])
            for (_, _, alg, size), per_run in seconds.items():
                for k in range(pv.REPETITIONS):
                    w.writerow(["testbed", "chain:8,8", alg, 16, size, k, per_run[run - 1]])
    return d


def simulated(d: Path, tag: str, seconds: dict) -> None:
    runs = {f"{topo}|{buf}|r{run}|{alg}|{size}": {"block": size, "times": [per_run[run - 1]] * pv.REPETITIONS}
            for (topo, buf, alg, size), per_run in seconds.items() for run in range(1, len(per_run) + 1)}
    (d / f"sim_{tag}.json").write_text(json.dumps({"flags": [], "in_turn": False, "runs": runs}))


def lines(out: str) -> dict:
    return {(ln.split()[2], ln.split()[3]): ln for ln in out.splitlines() if ln.startswith("   chain:8,8")}


def test_agreement_marks_the_points_apart(tmp_path, capsys):
    first = recording(tmp_path / "a", {POINTS[0]: [0.30] * 3, POINTS[1]: [0.30] * 3})
    second = recording(tmp_path / "b", {POINTS[0]: [0.31] * 3, POINTS[1]: [0.40] * 3})
    pv.agreement([first], [second])
    out = capsys.readouterr().out
    got = lines(out)
    assert "1.03" in got[("linear", "32K")] and "X" not in got[("linear", "32K")]
    assert "1.33" in got[("pairwise", "32K")] and got[("pairwise", "32K")].endswith("X")
    assert "1 of 2 within 10 %" in out
    # recordings on either side pool their runs: pairwise's six first runs put its median between the two
    third = recording(tmp_path / "c", {POINTS[0]: [0.30] * 3, POINTS[1]: [0.36] * 3})
    pv.agreement([first, third], [second])
    out = capsys.readouterr().out
    assert "/a," in out and "/c" in out
    got = lines(out)
    assert re.search(r"first +330\.0 ms +second +400\.0 ms +1\.21 ", got[("pairwise", "32K")]), got


def test_compare_pools_recordings(tmp_path, capsys):
    # each recording alone puts pairwise 20 % off; pooled, their six runs' median is the simulator's
    a = recording(tmp_path / "a", {POINTS[0]: [0.30] * 3, POINTS[1]: [0.25] * 3})
    b = recording(tmp_path / "b", {POINTS[0]: [0.30] * 3, POINTS[1]: [0.36] * 3})
    for d in (a, b):
        simulated(d, "t", {POINTS[0]: [0.30] * 3, POINTS[1]: [0.30] * 3})
    pv.compare([a], ["t"])
    alone = capsys.readouterr().out
    assert lines(alone)[("pairwise", "32K")].endswith("X") and "1 of 2 within 10 %" in alone
    pv.compare([a, b], ["t"])
    both = capsys.readouterr().out
    assert "2 of 2 within 10 %" in both
    assert "testbed   305.0 ms" in lines(both)[("pairwise", "32K")]   # the median of 0.25 x 27, 0.36 x 27


def test_compare_says_where_the_testbed_does_not_reproduce_itself(tmp_path, capsys):
    # linear: the two recordings lie 20 % apart (0.30 and 0.36) and the simulator is
    # out (0.25); pairwise: they agree (0.30, 0.31) and the simulator is out as well
    a = recording(tmp_path / "a", {POINTS[0]: [0.30] * 3, POINTS[1]: [0.30] * 3})
    b = recording(tmp_path / "b", {POINTS[0]: [0.36] * 3, POINTS[1]: [0.31] * 3})
    for d in (a, b):
        simulated(d, "t", {POINTS[0]: [0.25] * 3, POINTS[1]: [0.36] * 3})
    pv.compare([a, b], ["t"])
    out = capsys.readouterr().out
    got = lines(out)
    assert got[("linear", "32K")].endswith("X (testbed's recordings 0.83-1.20 of the rest)"), got
    assert got[("pairwise", "32K")].endswith("X (testbed's recordings 0.97-1.03 of the rest)"), got
    assert "0 of 2 within 10 %" in out
    assert "of the 2 outside, 1 where testbed's own recordings lie more than 10 % from the rest" in out
    assert "at 1 of the 2 in two recordings or more, a recording's median lies more than 10 % from" in out
    # one recording: nothing to set a point against
    pv.compare([a], ["t"])
    out = capsys.readouterr().out
    assert lines(out)[("linear", "32K")].endswith("  X") and "recordings or more" not in out
    assert pv.recording_spread({"0:r1": [1.0], "0:r2": [2.0]}) is None


def test_compare_takes_only_the_points_replayed(tmp_path, capsys):
    a = recording(tmp_path / "a", {POINTS[0]: [0.30] * 3, POINTS[1]: [0.30] * 3})
    simulated(a, "t", {POINTS[1]: [0.30] * 3})
    pv.compare([a], ["t"])
    out = capsys.readouterr().out
    assert list(lines(out)) == [("pairwise", "32K")] and "1 of 1 within 10 %" in out


def test_replay_shares_the_recording_hosts_cores(tmp_path, monkeypatch):
    import pytest
    d = tmp_path / "rec"
    d.mkdir()
    monkeypatch.setattr(pv.os, "cpu_count", lambda: 6)
    assert pv.host_cores(d, []) == ["--host-cores", "6"]   # a recording without the file: this machine's
    (d / pv.CORES).write_text("2\n")
    assert pv.host_cores(d, ["--linux-cubic", "off"]) == ["--host-cores", "2"]
    assert pv.host_cores(d, ["--host-cores", "0"]) == []   # the caller's choice stands
    (d / pv.CORES).write_text("two\n")
    with pytest.raises(SystemExit, match="not a number of cores"):
        pv.host_cores(d, [])


def test_record_stops_with_the_failing_command_named(tmp_path):
    """A topocoll command that fails (here a bench; a testbed already up
    fails the same way) ends the recording with the command named, not a
    traceback, and the testbed it brought up goes down again."""
    log = tmp_path / "calls.txt"
    fake = tmp_path / "bin" / "topocoll"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho \"$*\" >> {log}\n"
                    "case \"$1\" in bench) echo 'topocoll: error: something' >&2; exit 2;; esac\nexit 0\n")
    fake.chmod(0o755)
    proc = subprocess.run([sys.executable, spec.origin, "record", str(tmp_path / "rec"), "--runs", "1"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "packet_validation: 'topocoll bench chain:4,4,4 --backend testbed --buffer 100 --sizes 32K" in proc.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "testbed up chain:4,4,4 --buffer 100 --rate 100000000bit" and calls[-1] == "testbed down", calls
    assert "topocoll: error: something" in (tmp_path / "rec" / "out_444_100_r1.txt").read_text()


def test_compare_reports_the_mean_log_ratio(tmp_path, capsys):
    import math
    a = recording(tmp_path / "a", {POINTS[0]: [0.30] * 3, POINTS[1]: [0.30] * 3})
    simulated(a, "t", {POINTS[0]: [0.33] * 3, POINTS[1]: [0.30 / 1.2] * 3})
    pv.compare([a], ["t"])
    out = capsys.readouterr().out
    want = (math.log(1.1) + math.log(1.2)) / 2
    assert f"mean |log ratio| {want:.4f}" in out, out


def test_compare_names_a_missing_recording_or_replay(tmp_path):
    import pytest
    a = recording(tmp_path / "a", {POINTS[0]: [0.30] * 3})
    with pytest.raises(SystemExit, match=r"sim_nope\.json: no such replay \('replay .* nope' writes it\)"):
        pv.compare([a], ["nope"])
    with pytest.raises(SystemExit, match="no testbed recording there"):
        pv.compare([a, tmp_path / "missing"], ["t"])
    with pytest.raises(SystemExit, match="no testbed recording there"):
        pv.agreement([a], [tmp_path / "missing"])


FAKE_BENCH = '''#!{python}
import sys
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(" ".join(args) + "\\n")
if args[0] == "bench":
    alg, size = args[args.index("--algorithms") + 1], int(args[args.index("--sizes") + 1][:-1]) * 1024
    with open(args[args.index("--record-starts") + 1], "w") as f:
        f.write("# starts\\n" + "".join(f"{{alg}} {{size}} {{k}} " + " ".join(["0.0"] * 16) + "\\n" for k in range(9)))
    with open(args[args.index("--csv") + 1], "w") as f:
        f.write("backend,topology,algorithm,ranks,msize_bytes,repetition,seconds\\n")
        f.write("".join(f"testbed,chain:8,8,{{alg}},16,{{size}},{{k}},0.3\\n" for k in range(9)))
'''


def fake_bench(tmp_path: Path) -> tuple[Path, dict]:
    """FAKE_BENCH as `topocoll` first on PATH: the log of its calls and the
    environment that runs it"""
    log = tmp_path / "calls.txt"
    fake = tmp_path / "bin" / "topocoll"
    fake.parent.mkdir()
    fake.write_text(FAKE_BENCH.format(python=sys.executable, log=str(log)))
    fake.chmod(0o755)
    return log, {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}


def run_record(rec: Path, env: dict, runs: int = 1) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, spec.origin, "record", str(rec), "--runs", str(runs)],
                          capture_output=True, text=True, timeout=60, env=env)


def test_record_only_the_points_named(tmp_path):
    """ONLY names points (prefixes of TOPOLOGY|BUFFER|ALGORITHM|BLOCK): record
    brings up only the testbeds they need and runs only their jobs, --runs
    deep, and a replay of that recording simulates only what it holds."""
    log, env = fake_bench(tmp_path)
    rec = tmp_path / "rec"
    proc = run_record(rec, {**env, "ONLY": "88|32|pairwise|65536"}, runs=2)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines()
    assert [c for c in calls if c.startswith("testbed up")] == ["testbed up chain:8,8 --buffer 32 --rate 100000000bit"] * 2, calls
    benches = [c for c in calls if c.startswith("bench")]
    assert len(benches) == 2 and all("--sizes 64K --algorithms pairwise" in c for c in benches), benches
    assert sorted(p.name for p in rec.glob("st_*.txt")) == ["st_88_32_r1.txt", "st_88_32_r2.txt"]
    # a replay of it: the one point each run holds, though ONLY is not set now
    seen = []

    class Backend:
        def __init__(self, *args, **kw):
            self.quiet = False

        def simulate(self, alg, sizes, reps, untimed, extra):
            seen.append((alg, tuple(sizes)))
            return [{"block": size, "times": [0.3] * reps} for size in sizes]

        def close(self):
            pass
    import topocoll.bench.packet as packet
    orig, packet.PacketBackend = packet.PacketBackend, Backend
    try:
        pv.replay(rec, "t", [])
    finally:
        packet.PacketBackend = orig
    assert seen == [("pairwise", (65536,))] * 2, seen
    assert sorted(json.loads((rec / "sim_t.json").read_text())["runs"]) == \
        ["88|32|r1|pairwise|65536", "88|32|r2|pairwise|65536"]


def test_record_passes_open_mpi_parameters(tmp_path):
    """MCA='KEY=VALUE,...' goes to every testbed job as bench --mca and is
    kept with the recording; a malformed one stops before any testbed comes up."""
    log, env = fake_bench(tmp_path)
    env = {**env, "ONLY": "88|100|pairwise|262144"}
    rec = tmp_path / "rec"
    proc = run_record(rec, {**env, "MCA": "btl_tcp_sndbuf=131072, btl_tcp_rcvbuf=0"})
    assert proc.returncode == 0, proc.stderr
    benches = [c for c in log.read_text().splitlines() if c.startswith("bench")]
    assert len(benches) == 1 and benches[0].endswith("--bandwidth 100000000bit --mca btl_tcp_sndbuf=131072 --mca btl_tcp_rcvbuf=0"), benches
    assert (rec / "mca").read_text() == "btl_tcp_sndbuf=131072\nbtl_tcp_rcvbuf=0\n"
    log.unlink()
    proc = run_record(tmp_path / "bad", {**env, "MCA": "btl_tcp_sndbuf"})
    assert proc.returncode == 1 and "MCA: 'btl_tcp_sndbuf' is not KEY=VALUE" in proc.stderr, proc.stderr
    assert not log.exists()


def test_record_and_replay_at_another_rate(tmp_path, monkeypatch):
    """RATE=50mbit brings every testbed up at that rate, tells each bench so,
    keeps it with the recording, and a replay simulates at the recorded rate
    (a recording without the file: the testbed's default); a malformed or
    implausible RATE, or a rate file that is not one, stops with it named
    before any testbed comes up."""
    import pytest
    log, env = fake_bench(tmp_path)
    env = {**env, "ONLY": "88|100|pairwise|262144"}
    rec = tmp_path / "rec"
    proc = run_record(rec, {**env, "RATE": "50mbit"})
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "testbed up chain:8,8 --buffer 100 --rate 50000000bit", calls
    assert [c for c in calls if c.startswith("bench")][0].endswith("--bandwidth 50000000bit"), calls
    assert (rec / pv.RATE).read_text() == "50000000\n"
    rates = []

    class Backend:
        def __init__(self, spec, topology, bandwidth, latency, **kw):
            rates.append(bandwidth)
            self.quiet = False

        def simulate(self, alg, sizes, reps, untimed, extra):
            return [{"block": size, "times": [0.3] * reps} for size in sizes]

        def close(self):
            pass
    monkeypatch.setattr("topocoll.bench.packet.PacketBackend", Backend)
    pv.replay(rec, "t", [])
    assert rates == [5e7], rates
    (rec / pv.RATE).unlink()
    pv.replay(rec, "t", [])
    assert rates[-1] == pv.default_rate() == 1e8
    for bad in ("fast\n", "1e3\n"):
        (rec / pv.RATE).write_text(bad)
        with pytest.raises(SystemExit, match="rate"):
            pv.replay(rec, "t", [])
    for bad, says in (("quick", "RATE"), ("100kbit", "from 1 Mbit/s to 10 Gbit/s")):
        log.unlink(missing_ok=True)
        proc = run_record(tmp_path / bad, {**env, "RATE": bad})
        assert proc.returncode == 1 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert not log.exists()


def test_record_with_hystart_ack_delta_sets_the_kernels_and_replay_follows(tmp_path, monkeypatch):
    """HYSTART_ACK_DELTA: the kernel's limit is set while the testbed's jobs
    run and restored after, even when a job fails; the recording keeps it and
    its replay gives the simulator the same; a value the simulator refuses
    stops before the kernel's is touched."""
    import pytest
    kernel = tmp_path / "hystart_ack_delta_us"
    kernel.write_text("2000\n")
    monkeypatch.setattr(pv, "KERNEL_HYSTART", kernel)
    seen = []
    _, env = fake_bench(tmp_path)

    def fake(*args, **kw):   # FAKE_BENCH, in this process's view of the kernel's limit
        seen.append((args[0], kernel.read_text().strip()))
        subprocess.run(["topocoll", *args], env=env, check=True)
    monkeypatch.setattr(pv, "topocoll", fake)
    monkeypatch.setenv("ONLY", "88|100|pairwise|262144")
    monkeypatch.setenv("HYSTART_ACK_DELTA", "4000")
    rec = tmp_path / "rec"
    pv.record(rec, 1, False)
    assert [v for cmd, v in seen if cmd == "bench"] == ["4000"] and kernel.read_text() == "2000\n"
    assert (rec / pv.HYSTART).read_text() == "4000\n"
    assert pv.hystart_flags(rec, []) == ["--hystart-ack-delta", "4000"]
    assert pv.hystart_flags(rec, ["--hystart-ack-delta", "3000"]) == []   # the caller's choice stands
    assert pv.hystart_flags(tmp_path, []) == []                           # recorded with the kernel's own

    def failing(*args, **kw):
        if args[0] == "bench":
            sys.exit("packet_validation: 'topocoll bench ...' failed (exit 2)")
    monkeypatch.setattr(pv, "topocoll", failing)
    with pytest.raises(SystemExit, match="failed"):
        pv.record(tmp_path / "rec2", 1, False)
    assert kernel.read_text() == "2000\n"
    monkeypatch.setenv("HYSTART_ACK_DELTA", "0")
    kernel.write_text("1234\n")
    with pytest.raises(SystemExit, match=r"HYSTART_ACK_DELTA: --hystart-ack-delta: '0' is not a whole number in \[1, 1000000\]"):
        pv.record(tmp_path / "rec3", 1, False)
    assert kernel.read_text() == "1234\n" and not (tmp_path / "rec3").exists()


def test_the_testbed_model_is_the_simulators_options():
    """replay's --testbed-model stands for TESTBED_MODEL where it stands, the
    other flags kept around it; the simulator takes every one of those
    options and reports each behaviour it names as running."""
    flags = ["--host-cores", "2", "--testbed-model", "--timer-ticks", "on"]
    assert pv.model_flags(flags) == ["--host-cores", "2", *pv.TESTBED_MODEL, "--timer-ticks", "on"]
    assert pv.model_flags(["--reo-window", "off"]) == ["--reo-window", "off"]
    from topocoll.bench import packet
    try:
        sim = str(packet.program())
    except Exception:   # noqa: BLE001 -- as test_packet.py's needs_sim
        pytest.skip("topocoll-packet not built (libns3-dev)")
    proc = subprocess.run([sim, "--print-settings", *pv.TESTBED_MODEL], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    settings = json.loads(proc.stdout)
    assert settings["tsq_until"] == "receiver", settings
    for key in ("tsq_gso", "gso_clumps", "hystart_rounds", "reo_window", "rack_ties"):
        assert settings[key] is True, (key, settings)
