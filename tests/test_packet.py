"""The packet-level simulator (core/packet, bench --backend packet): every
byte of every block carried and checked for every algorithm of the registry
and the MPI's own, the network's knobs changing what they should, Linux's
tail-loss recovery, pacing in simulated time, and bad input refused."""

from __future__ import annotations

import bisect
import csv
import functools
import json
import os
import re
import signal
import statistics as st
import subprocess
import sys
import time
from pathlib import Path

import pytest

from topocoll._core import Topology, algorithms
from topocoll.bench import packet

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import timeline  # noqa: E402  (the one reader of --trace files)

try:
    SIM = str(packet.program())
except Exception:   # noqa: BLE001 -- the tests below say what is missing
    SIM = None
needs_sim = pytest.mark.skipif(SIM is None, reason="topocoll-packet not built (libns3-dev)")
pytestmark = needs_sim


def topo_file(tmp_path, spec: str):
    path = tmp_path / (spec.replace(":", "_").replace(",", "_") + ".yaml")
    path.write_text(Topology.synthetic(spec).write("yaml"))
    return path


def print_settings(*args: str) -> subprocess.CompletedProcess:
    """topocoll-packet --print-settings with these options, as it ran."""
    return subprocess.run([SIM, "--print-settings", *args], capture_output=True, text=True, timeout=60)


def simulate(tmp_path, spec: str, *args, expect: int = 0) -> dict:
    proc = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, spec)), "--rate", "1e8", *args],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == expect, proc.stderr[-3000:]
    return json.loads(proc.stdout)


REGISTRY = [a["name"] for a in algorithms()]
SEGMENTED = {a["name"] for a in algorithms() if "segment_size" in a["parameters"]}


@pytest.mark.parametrize("algorithm", REGISTRY + ["native"])
@pytest.mark.parametrize("block,rendezvous", [(3001, "put"), (70001, "put"), (70001, "copy")])
def test_every_block_delivered(tmp_path, algorithm, block, rendezvous):
    """Each rank's every byte to every rank arrives where it should, over
    TCP packets through two switches, for every algorithm and the MPI's own,
    below the eager limit and above it (either rendezvous; paced schedules
    in pieces), ranks starting apart; and no call beats the links' bound."""
    rec = simulate(tmp_path, "chain:3,3", "--algorithm", algorithm, "--block", str(block), "--warmup", "0",
                   "--repetitions", "2", "--check", "--rendezvous", rendezvous, "--skew", "0.0003")
    assert rec["rendezvous_protocol"] == rendezvous
    assert rec["checked"] and rec["bad_bytes"] == 0
    assert rec["wire_bytes"] >= 2 * 30 * block   # every block crossed the network
    bound = rec["bottleneck_load"] * block * 8 / 1e8
    assert all(t > bound for t in rec["times"]), (rec["times"], bound)
    if block > 65536 and algorithm not in SEGMENTED | {"bruck"}:   # those send pieces, or whole steps
        assert rec["rendezvous"] > 0 or rec["paced"], rec


@pytest.mark.parametrize("algorithm", REGISTRY + ["native"])
def test_every_block_delivered_on_connections_opened_at_first_message(tmp_path, algorithm):
    """--connect lazy: each pair's connection opens at its first message, as
    Open MPI's TCP BTL opens them, its data waiting for both ends' handshake
    messages (the accepting rank answering in its turn on a shared core);
    every byte still arrives, above and below the eager limit."""
    for block in (3001, 70001):
        rec = simulate(tmp_path, "chain:3,3", "--algorithm", algorithm, "--block", str(block), "--warmup", "1",
                       "--repetitions", "1", "--check", "--connect", "lazy", "--host-cores", "2",
                       "--skew", "0.0003")
        assert rec["connect"] == "lazy" and rec["checked"] and rec["bad_bytes"] == 0, rec
        assert rec["connections_before"] == 0 and rec["connections_at_first_message"] > 0, rec


@pytest.mark.parametrize("spec,before,pairs", [("chain:3,3", 12, 15), ("chain:4,4", 12, 28), ("chain:4,4,4", 36, 66)])
def test_connect_modes_open_the_pairs_they_say(tmp_path, spec, before, pairs):
    """eager opens every pair before the run; lazy none; init the pairs the
    PMPI library's start-up allgathers connect under Open MPI (Bruck's, ranks
    2^k apart around the ring, on 6 and 12 ranks: 12 and 36 pairs; recursive
    doubling, r and r xor 2^k, on 8: 12 pairs; the testbed's traces show
    36 of 3 x 4 and 32 of 2 x 8), the rest at their first message; the
    bytes right each way."""
    for mode, want in (("eager", pairs), ("lazy", 0), ("init", before)):
        rec = simulate(tmp_path, spec, "--algorithm", "linear", "--block", "2000", "--warmup", "1",
                       "--repetitions", "1", "--check", "--connect", mode, "--host-cores", "2")
        assert rec["bad_bytes"] == 0 and rec["connect"] == mode, rec
        assert (rec["connections_before"], rec["connections_at_first_message"]) == (want, pairs - want), (mode, rec)
        assert (rec["connect_s"] > 0) == (want > 0), rec
    bad = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, spec)), "--connect", "never"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--connect: 'never'; valid: eager, lazy, init" in bad.stderr, bad.stderr


def test_a_wrong_byte_is_seen(tmp_path):
    """The check can fail: one byte of one message flipped on its way
    (--corrupt-message, for this test) is one bad byte, and the exit is 1."""
    rec = simulate(tmp_path, "chain:2,2", "--algorithm", "faraj-yuan", "--block", "1000", "--warmup", "0",
                   "--repetitions", "1", "--check", "--corrupt-message", "5", expect=1)
    assert rec["bad_bytes"] == 1


def test_the_help_gives_the_exit_statuses_runs_give(tmp_path):
    """--help's exit statuses are what runs give: 0 a clean run, 1 a wrong
    byte, 2 a refused option; each status the help names has its meaning."""
    helped = subprocess.run([SIM, "--help"], capture_output=True, text=True, timeout=60)
    statuses = re.search(r"exit status: (.*)", helped.stdout, re.S)
    assert helped.returncode == 0 and statuses, helped.stdout[-600:]
    named = dict(re.findall(r"(?:^|; )([0-3]) ([a-z][^;]*)", " ".join(statuses.group(1).split())))
    assert sorted(named) == ["0", "1", "2", "3"], named
    assert "byte" in named["1"] and "refused" in named["2"] and "stood still" in named["3"], named
    base = ["--topology", str(topo_file(tmp_path, "chain:2,2")), "--block", "1000", "--warmup", "0",
            "--repetitions", "1", "--check"]
    for extra, status in (([], 0), (["--corrupt-message", "5"], 1), (["--rate", "1"], 2)):
        run = subprocess.run([SIM, *base, *extra], capture_output=True, text=True, timeout=120)
        assert run.returncode == status, (extra, run.returncode, run.stderr)


def test_native_is_open_mpis_choice(tmp_path):
    """Open MPI 4.1's fixed rules: 12 ranks below 256 KB blocks take
    linear_sync, 16 ranks at 300 KB linear, 6 ranks at 600 KB pairwise, 16
    ranks below 512 bytes modified Bruck (run as the IR's bruck)."""
    for spec, block, want in (("chain:4,4,4", 131072, "linear_sync"), ("chain:8,8", 300000, "linear"),
                              ("chain:3,3", 600000, "pairwise"), ("chain:8,8", 256, "modified_bruck")):
        rec = simulate(tmp_path, spec, "--algorithm", "native", "--block", str(block), "--warmup", "0",
                       "--repetitions", "1", "--no-check")
        assert rec["native_choice"] == want, (spec, block, rec)
        assert rec["schedule"] == ("bruck" if want == "modified_bruck" else want)


def test_contention_free_schedule_runs_at_the_links_pace(tmp_path):
    """Faraj & Yuan on 3 x 4 machines at 128 KB: 32 phases at TCP's goodput
    of 100 Mbit/s, as on the emulated cluster (366-370 ms there); every call
    alike (pacing sleeps in simulated time), no queue ever full."""
    rec = simulate(tmp_path, "chain:4,4,4", "--algorithm", "faraj-yuan", "--block", "131072", "--warmup", "1",
                   "--repetitions", "3", "--buffer", "32", "--no-check")
    bound = 32 * 131072 * 8 / 1e8
    assert all(0.88 < bound / t < 0.95 for t in rec["times"]), rec["times"]
    assert max(rec["times"]) <= 1.01 * min(rec["times"])
    assert rec["paced"] and rec["drops_switch"] == 0 and rec["tcp_timeouts"] == 0


def test_lead_is_a_share_of_the_message_where_ranks_wake_on_time(tmp_path):
    """At 1 Gbit/s a 64 KB message crosses a link in 0.57 ms: the default
    lead (0.5 ms, measured on the emulated cluster whose ranks wake late)
    would start each next sender almost a whole message early, and on links
    handed over in every phase the overlaps add up to drops; capped at 8 %
    of the message (the default where no lead is given) faraj-yuan runs at
    its links' pace with spinning ranks; uncapped it does not."""
    args = ["--rate", "1e9", "--algorithm", "faraj-yuan", "--block", "65536", "--warmup", "1", "--repetitions", "2",
            "--buffer", "32", "--nap", "0", "--no-check"]   # the later --rate is the one taken
    runs = {share: simulate(tmp_path, "chain:4,4,4", *args, "--pace-lead-share", share) for share in ("8", "0")}
    bound = 32 * 65536 * 8 / 1e9
    assert runs["8"]["drops_switch"] == 0 and all(bound / t > 0.85 for t in runs["8"]["times"]), runs["8"]
    assert runs["0"]["drops_switch"] > 0 and max(runs["0"]["times"]) > 1.5 * max(runs["8"]["times"]), runs["0"]


def test_switch_buffers_and_loss_recovery(tmp_path):
    """All-to-all at once into shallow ports drops packets; with deep ports
    nothing drops and it is faster; Linux's tail-loss probes recover drops
    that otherwise wait for the 200 ms retransmission timeout."""
    args = ["--algorithm", "linear", "--block", "32768", "--warmup", "1", "--repetitions", "3", "--no-check"]
    shallow = simulate(tmp_path, "chain:4,4,4", *args, "--buffer", "32")
    deep = simulate(tmp_path, "chain:4,4,4", *args, "--buffer", "1000")
    assert shallow["drops_switch"] > 0 and deep["drops_switch"] == 0
    # the drops are put down to the ports that made them, named after the tree's switches
    tree = Topology.synthetic("chain:4,4,4")
    nodes = set(tree.switches) | set(tree.machines)
    ports = shallow["drops_by_port"]
    assert ports and shallow["ports_dropping"] >= len(ports) and deep["drops_by_port"] == {}
    assert sum(ports.values()) + shallow["drops_unplaced"] <= shallow["drops_switch"]
    assert sum(ports.values()) >= shallow["drops_switch"] // 2, shallow
    for port in ports:
        a, b = port.split("->")
        assert a != b and {a, b} <= nodes and a in tree.switches, port
    assert max(deep["times"]) < min(shallow["times"])
    without = simulate(tmp_path, "chain:4,4,4", *args, "--buffer", "100", "--loss-probes", "off")
    with_probes = simulate(tmp_path, "chain:4,4,4", *args, "--buffer", "100")
    assert with_probes["tcp_loss_probes"] > 0 and without["tcp_loss_probes"] == 0
    assert with_probes["tcp_timeouts"] < without["tcp_timeouts"] / 2, (with_probes, without)
    assert sum(with_probes["times"]) < sum(without["times"])


@pytest.mark.parametrize("algorithm", ["linear", "faraj-yuan"])
def test_socket_lookup_by_hash_finds_the_sockets_ns3_would(tmp_path, algorithm):
    """The simulator's TCP finds a packet's socket by a hash (ns-3 walks
    every socket of the node): the same run, drops and recoveries included,
    gives the same times and counters either way."""
    args = ["--algorithm", algorithm, "--block", "32768", "--buffer", "32", "--warmup", "1", "--repetitions", "2",
            "--check"]
    runs = [simulate(tmp_path, "chain:4,4,4", *args, "--socket-lookup", way) for way in ("hash", "walk")]
    keys = ("times", "warmup_times", "drops_switch", "tcp_timeouts", "tcp_recoveries", "tcp_loss_probes",
            "wire_bytes", "connect_s", "bad_bytes", "drops_by_port")
    by_hash, by_walk = ({k: r[k] for k in keys} for r in runs)
    assert by_hash == by_walk
    assert runs[0]["bad_bytes"] == 0
    if algorithm == "linear":
        assert runs[0]["drops_switch"] > 0 and runs[0]["tcp_recoveries"] > 0   # the recovery paths were exercised


def test_handshakes_of_256_machines_drop_nothing(tmp_path):
    """The connections come up before the first call without a lost packet,
    also on 16 leaves of 16 machines (every machine opening at once, 100 us
    apart, overflowed the uplinks: SYNs retried for 9 simulated seconds and
    connections started with a window of one segment); --give-up stops the
    call early and says how far it got."""
    rec = simulate(tmp_path, "tree:16,16", "--algorithm", "linear", "--block", "65536", "--warmup", "0",
                   "--repetitions", "1", "--no-check", "--give-up", "0.001")
    assert rec["connect_drops"] == 0 and rec["connect_s"] < 1, rec
    assert rec["times"] == [] and rec["gave_up"]["call"] == 1 and rec["gave_up"]["ranks_done"] < 256, rec


def test_bench_backend(tmp_path):
    """`topocoll bench --backend packet`: samples per call, the settings."""
    out = tmp_path / "b.csv"
    proc = subprocess.run([sys.executable, "-m", "topocoll.cli", "bench", "chain:3,3", "--backend", "packet",
                           "--sizes", "16K,24K", "--algorithms", "faraj-yuan,native", "--repetitions", "2", "--csv",
                           str(out), "--quiet", "--buffer", "32"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = list(csv.DictReader(out.open()))
    assert {r["backend"] for r in rows} == {"packet"} and len(rows) == 8
    assert {r["algorithm"] for r in rows} == {"faraj-yuan", "native"}
    assert "ns-3" in rows[0]["settings"] and "buffer_packets=32" in rows[0]["settings"]
    assert "rendezvous=put" in rows[0]["settings"]
    # the TCP described is the simulator's own account of its defaults
    proc_settings = print_settings("--buffer", "32")
    assert proc_settings.returncode == 0, proc_settings.stderr
    own = json.loads(proc_settings.stdout)
    assert f"network={packet.describe_model(own)}" in rows[0]["settings"], rows[0]["settings"]
    # what the simulations saw: a line each with drops, timeouts, the worst port and the wall time
    block = proc.stdout.split("packet simulation")[1].split("\n\n")[0]
    seen = [l.split() for l in block.splitlines()[2:]]
    assert [(w[0], w[1]) for w in seen] == [("faraj-yuan", "16384"), ("faraj-yuan", "24576"), ("native", "16384"),
                                            ("native", "24576")], proc.stdout
    assert all(w[2].isdigit() and w[3].isdigit() and float(w[-1]) >= 0 for w in seen), seen


def test_print_settings_follow_the_options():
    """--print-settings says what the options given model, with no
    topology: the defaults are Linux's behaviours; an option turned off is
    off; an option that needs Linux's cubic is off without it; a bad value
    is refused as in a run.  A result's settings line is built from it."""
    def settings(*args, expect=0):
        proc = print_settings(*args)
        assert proc.returncode == expect, proc.stderr
        return json.loads(proc.stdout) if expect == 0 else proc.stderr
    own = settings()
    assert own["linux_cubic"] and own["count_delivered"] and own["rack_recovery"] and own["small_queues"], own
    assert own["linux_hystart"] and "Linux's HyStart" in packet.describe_model(own), own
    assert own["sack_compression"] and "Linux's SACK compression" in packet.describe_model(own), own
    assert "an ACK for every out-of-order segment" in packet.describe_model(settings("--sack-compression", "off"))
    assert not own["rack_ties"] and "RACK's ties" not in packet.describe_model(own), own
    assert not own["hystart_rounds"] and "HyStart's rounds" not in packet.describe_model(own), own
    assert "HyStart's rounds begun below its low window" in packet.describe_model(settings("--hystart-rounds", "on"))
    assert not settings("--linux-hystart", "off", "--hystart-rounds", "on")["hystart_rounds"]
    assert "RACK's ties in the order sent" in packet.describe_model(settings("--rack-ties", "on"))
    assert not own["reo_window"] and "reordering window" not in packet.describe_model(own), own
    assert "RACK's reordering window before a recovery" in packet.describe_model(settings("--reo-window", "on"))
    assert not own["timer_ticks"] and "timer-wheel" not in packet.describe_model(own), own
    assert "TCP's timers run on the kernel's timer-wheel ticks" in packet.describe_model(settings("--timer-ticks", "on"))
    assert own["linux_prr"] and "Linux's rate reduction in recovery" in packet.describe_model(own), own
    assert "ns-3's rate reduction in recovery" in packet.describe_model(settings("--linux-prr", "off"))
    assert "--linux-prr" in settings("--linux-prr", "maybe", expect=2)
    assert "ns-3's HyStart" in packet.describe_model(settings("--linux-hystart", "off"))
    assert own["ack_rtt"] and "HyStart on each ACK's round trip" in packet.describe_model(own), own
    assert "HyStart on ns-3's smoothed RTT" in packet.describe_model(settings("--ack-rtt", "off"))
    assert not settings("--linux-hystart", "off", "--ack-rtt", "on")["ack_rtt"]
    # tcp_cubic's hystart_ack_delta_us: Linux's default, a value given, said only where Linux's HyStart runs
    assert own["hystart_ack_delta_us"] == 2000 and "ended by a gap over 2ms" in packet.describe_model(own), own
    wide = settings("--hystart-ack-delta", "4000")
    assert wide["hystart_ack_delta_us"] == 4000 and "ended by a gap over 4ms" in packet.describe_model(wide), wide
    assert "ACK trains" not in packet.describe_model(settings("--linux-hystart", "off", "--hystart-ack-delta", "4000"))
    assert "--hystart-ack-delta" in settings("--hystart-ack-delta", "0", expect=2)
    assert not own["tsq_gso"] and not own["window_in_packets"], own
    assert "GSO" not in packet.describe_model(own) and "whole segments" not in packet.describe_model(own)
    assert "restarts after idle in whole segments" in packet.describe_model(settings("--window-in-packets", "on"))
    assert "checked a GSO packet at a time" in packet.describe_model(settings("--tsq-gso", "on"))
    assert "--tsq-gso" in settings("--tsq-gso", "1", expect=2)
    assert not settings("--small-queues", "off", "--tsq-gso", "on")["tsq_gso"]
    assert own["probe_small_queues"] and "loss probes held back by small queues" in packet.describe_model(own), own
    assert not settings("--small-queues", "off")["probe_small_queues"]
    assert not settings("--loss-probes", "off")["probe_small_queues"]
    assert "loss probes held" not in packet.describe_model(settings("--probe-small-queues", "off"))
    assert own["tsq_until"] == "host" and "receiver takes it" not in packet.describe_model(own), own
    held = settings("--tsq-until", "receiver")
    assert held["tsq_until"] == "receiver" and "until its receiver takes it" in packet.describe_model(held), held
    assert settings("--small-queues", "off", "--tsq-until", "receiver")["tsq_until"] == "none"
    assert not own["gso_clumps"] and not settings("--gso-clumps", "on")["gso_clumps"]   # needs --tsq-gso
    clumps = settings("--tsq-gso", "on", "--gso-clumps", "on")
    assert clumps["gso_clumps"] and "GSO packets leaving machines whole" in packet.describe_model(clumps), clumps
    assert not own["linux_receive"] and "receive window" not in packet.describe_model(own), own
    rx = settings("--linux-receive", "on")
    assert rx["linux_receive"] and "Linux's receive window and stretch ACKs" in packet.describe_model(rx), rx
    assert "--linux-receive" in settings("--linux-receive", "yes", expect=2)
    assert own["idle_wakes"] and not settings("--idle-wakes", "off")["idle_wakes"], own
    asleep = packet.describe_model(settings("--host-cores", "2", "--idle-wakes", "off"))
    assert "paced ranks asleep" in asleep and "paced ranks asleep" not in packet.describe_model(settings("--host-cores", "2"))
    assert "--idle-wakes" in settings("--idle-wakes", "sometimes", expect=2)
    assert "barrier_spins" in own and "--barrier-spins" in settings("--barrier-spins", "2", expect=2)
    assert own["idle_yield"] and settings("--yield-poll", "5e-6")["yield_poll"] == 5e-6, own
    keeping = packet.describe_model(settings("--host-cores", "2", "--idle-yield", "off"))
    assert "keeping a core" in keeping and "keeping a core" not in packet.describe_model(settings("--host-cores", "2"))
    assert "--yield-poll" in settings("--yield-poll", "0.1", expect=2)   # longer than a turn
    assert "--idle-yield" in settings("--idle-yield", "maybe", expect=2)
    assert own["host_freezes"] == 0 and "frozen" not in packet.describe_model(settings("--host-cores", "2"))
    assert "each frozen 15.6 % of the time" in packet.describe_model(settings("--host-cores", "2", "--host-freezes", "15.6"))
    assert "--host-freezes" in settings("--host-freezes", "10", expect=2)   # no cores to freeze
    assert "--host-freezes" in settings("--host-cores", "2", "--host-freezes", "95", expect=2)
    assert own["host_softirq"] == 0 and "a frame taken in" not in packet.describe_model(settings("--host-cores", "2"))
    assert "12us of one a frame taken in" in packet.describe_model(settings("--host-cores", "2", "--host-softirq", "12e-6"))
    assert not own["forward_retransmits"] and own["sndbuf"] == 0 and own["rto_min_s"] == 0.2, own
    assert "TCP Cubic as Linux's" in packet.describe_model(own) and "send buffer autotuned" in packet.describe_model(own)
    ns3 = settings("--linux-cubic", "off", "--count-delivered", "on", "--small-queues", "off", "--sndbuf", "65536")
    assert not ns3["linux_cubic"] and not ns3["count_delivered"] and not ns3["small_queues"], ns3
    assert not settings("--linux-cubic", "off", "--linux-hystart", "on")["linux_hystart"], ns3
    line = packet.describe_model(ns3)
    assert "ns-3's TcpCubic" in line and "no TCP small queues" in line and "send buffer 65536 bytes" in line, line
    assert not settings("--congestion", "newreno")["linux_cubic"]
    assert "--rto-min" in settings("--rto-min", "0", expect=2)


def test_bench_option_copies_match_the_simulator():
    """The bench's CLI lists the simulator's --rendezvous and --host-queue
    values and its --skew limit (argparse needs them before any simulator
    runs); the simulator takes each listed value, reports it, and refuses
    the next one out."""
    settings = print_settings
    for option, values, outside in (("--rendezvous", packet.RENDEZVOUS, "eager"),
                                    ("--host-queue", packet.HOST_QUEUES, "short-first")):
        for v in values:
            proc = settings(option, v)
            assert proc.returncode == 0 and json.loads(proc.stdout)[option[2:].replace("-", "_")] == v, proc.stderr
        assert settings(option, outside).returncode == 2
    defaults = json.loads(settings().stdout)   # the first listed is the simulator's default
    assert defaults["rendezvous"] == packet.RENDEZVOUS[0] and defaults["host_queue"] == packet.HOST_QUEUES[0], defaults
    assert settings("--skew", str(packet.MAX_SKEW)).returncode == 0
    assert settings("--skew", str(packet.MAX_SKEW * 1.001)).returncode == 2


def test_sizes_run_in_turn_on_the_same_connections(tmp_path):
    """--block A,B runs A's calls, then B's, in one simulation (as the
    benchmark program runs its sizes): a JSON line a size, in order, each
    with every byte checked and its own counters; the first size runs as it
    does alone, and the connections are made once."""
    def run(blocks):
        proc = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, "chain:2,2")), "--rate", "1e8",
                               "--algorithm", "pairwise", "--block", blocks, "--warmup", "1", "--repetitions", "2",
                               "--buffer", "8", "--check"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return [json.loads(line) for line in proc.stdout.splitlines()]
    both, first, second = run("20000,150000"), run("20000")[0], run("150000")[0]
    assert [r["block"] for r in both] == [20000, 150000]
    assert all(r["checked"] and r["bad_bytes"] == 0 for r in both), both
    assert both[0]["times"] == first["times"] and both[0]["messages"] == first["messages"]
    # each size counts its own calls: the second's messages are those of a lone run of it
    assert both[1]["messages"] == second["messages"] and both[1]["wire_bytes"] >= 3 * 12 * 150000
    assert both[1]["connect_s"] == both[0]["connect_s"] == first["connect_s"]


def exchange_ms(tmp_path, *args) -> float:
    rec = simulate(tmp_path, "2", "--algorithm", "native", "--block", "131072", "--warmup", "1",
                   "--repetitions", "3", "--check", *args)
    assert rec["bad_bytes"] == 0 and rec["drops_switch"] == 0 and rec["rendezvous"] == 8, rec
    return 1e3 * max(rec["times"])


def test_put_rendezvous_serialises_an_exchange_when_one_side_starts_first(tmp_path):
    """Open MPI's put rendezvous (its TCP BTL's default), as measured on the
    emulated cluster (two machines swapping 128 KB: 20.3 ms with put, 11.0
    without): the rank that starts first gets the other's put request before
    it has matched the other's header, so its own request waits behind its
    whole put and the two messages cross one after the other; started
    together, both requests go before either put and the messages cross at
    once; the copy rendezvous overlaps them either way."""
    one_way = 131072 * 8 / 1e8 * 1e3 * 1514 / 1448   # one message at the link's frame rate
    apart = exchange_ms(tmp_path, "--skew", "0.0005", "--seed", "3")
    together = exchange_ms(tmp_path)
    copied = exchange_ms(tmp_path, "--skew", "0.0005", "--seed", "3", "--rendezvous", "copy")
    assert 1.9 * one_way < apart < 2.2 * one_way, (apart, one_way)
    assert one_way < together < 1.1 * one_way, (together, one_way)
    assert one_way < copied < 1.1 * one_way, (copied, one_way)


@pytest.mark.parametrize("algorithm", ["faraj-yuan", "linear", "native"])
def test_host_cores_take_turns_and_deliver_every_block(tmp_path, algorithm):
    """--host-cores: every rank's every byte still arrives when the ranks
    take turns on a host of two cores (and on one), and the same seed gives
    the same run."""
    def run(*args):
        return simulate(tmp_path, "chain:3,3", "--algorithm", algorithm, "--block", "70001", "--warmup", "0",
                        "--repetitions", "2", "--check", "--skew", "0.0003", *args)
    two, again, one = run("--host-cores", "2"), run("--host-cores", "2"), run("--host-cores", "1")
    for rec in (two, one):
        assert rec["checked"] and rec["bad_bytes"] == 0 and rec["host_cores"] in (1, 2), rec
    assert two["times"] == again["times"]


def test_a_busy_rank_answers_in_its_turn(tmp_path):
    """Two machines swap 128 KB (the put rendezvous) while both spin in
    MPI_Waitall: on one shared core the receiver answers a header only in its
    turn, so the longer the turns the longer the swap; with a core each, or
    with ranks yielding their core when idle (--idle-yield), the turn's
    length changes nothing."""
    def ms(*args):
        rec = simulate(tmp_path, "2", "--algorithm", "native", "--block", "131072", "--warmup", "1",
                       "--repetitions", "3", "--check", *args)
        assert rec["bad_bytes"] == 0
        return 1e3 * max(rec["times"])
    short = ms("--host-cores", "1", "--cpu-slice", "0.0001", "--idle-yield", "off")
    long_ = ms("--host-cores", "1", "--cpu-slice", "0.01", "--idle-yield", "off")
    own = ms("--cpu-slice", "0.01")
    assert long_ > short + 4, (short, long_)
    assert own == ms(), own
    yielding = ms("--host-cores", "1", "--cpu-slice", "0.01")
    assert yielding == ms("--host-cores", "1", "--cpu-slice", "0.0001") < short, (yielding, short)


def test_skew_draws_are_seeded(tmp_path):
    """--skew starts each rank late by a draw of (seed, call, rank): the same
    seed gives the same run, another seed another, no skew the default run."""
    def run(*args):
        return simulate(tmp_path, "chain:2,2", "--algorithm", "linear", "--block", "20000", "--warmup", "0",
                        "--repetitions", "4", *args)
    base, zero = run(), run("--skew", "0")
    a, again, other = run("--skew", "0.002"), run("--skew", "0.002", "--seed", "1"), run("--skew", "0.002", "--seed", "9")
    assert base["times"] == zero["times"] and base["skew"] == 0
    assert a["times"] == again["times"] and a["skew"] == 0.002 and a["seed"] == 1
    assert a["times"] != other["times"] and a["times"] != base["times"]


def test_starts_are_replayed(tmp_path):
    """--starts replays recorded starts: timed call k of the algorithm and
    size takes their k-th line (cycled), warm-ups the last ones; lines of
    other algorithms and sizes are passed over; every byte still arrives.
    A rank held back 30 ms holds the call back as long (eager blocks: nobody
    waits for it before), and the same file gives the same run."""
    starts = tmp_path / "starts.txt"
    starts.write_text("# recorded\n"
                      "linear 20000 0 0 0 0 0\n"
                      "pairwise 20000 0 0.5 0.5 0.5 0.5\n"
                      "linear 20000 1 0 0.03 0 0\n"
                      "linear 30000 0 0.7 0 0 0\n")
    def run():
        return simulate(tmp_path, "chain:2,2", "--algorithm", "linear", "--block", "20000", "--warmup", "1",
                        "--repetitions", "4", "--check", "--starts", str(starts))
    rec, again = run(), run()
    assert rec["bad_bytes"] == 0 and rec["times"] == again["times"]
    fast, late = rec["times"][0::2], rec["times"][1::2]
    assert all(t < 0.01 for t in fast) and all(0.03 < t < 0.04 for t in late), rec["times"]
    assert rec["warmup_times"][0] > 0.03, rec["warmup_times"]   # the warm-up took the last line


@pytest.mark.parametrize("text,word", [
    ("linear 20000 0 0 0 0\n", "starts.txt:1: 6 fields, not 7 (ALGORITHM BLOCK REPETITION, then an offset for "
                                "each of the 4 machines)"),
    ("linear 20000\n", "starts.txt:1: 2 fields, not 7"),
    ("# c\n\nlinear 20000 0 0 0 0 x\n", "starts.txt:3: 'x' is not an offset"),
    ("linear 20000 0 0 0 0 11\n", "'11' is not an offset in [0, 10] seconds"),
    ("linear 20000 0 0 0 0 -0.1\n", "'-0.1' is not an offset"),
    ("linear 20000 0 0 0 0 nan\n", "'nan' is not an offset"),
    ("linear 2e4 0 0 0 0 0\n", "'2e4 0' is not a block size"),
    ("linear 20000 -1 0 0 0 0\n", "'20000 -1' is not a block size"),
    ("pairwise 20000 0 0 0 0 0\n", "no line for linear with 20000-byte blocks"),
    ("", "no line for linear"),
    ("linear 20000 0 0 0 0 0\x00\n", "starts.txt:1: a NUL byte"),
    ("linear 20000 0 " + "0 " * 40000 + "\n", "a line longer than 65535 bytes"),
])
def test_simulator_refuses_bad_starts(tmp_path, text, word):
    path = tmp_path / "starts.txt"
    path.write_bytes(text.encode())
    proc = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, "chain:2,2")), "--algorithm", "linear",
                           "--block", "20000", "--starts", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and word in proc.stderr, proc.stderr


@pytest.mark.parametrize("args,word", [
    (["--algorithm", "nonesuch"], "unknown algorithm 'nonesuch'"),
    (["--skew", "0.1", "--starts", "x"], "--skew and --starts: one or the other"),
    (["--starts", "/nonexistent/s.txt"], "cannot open starts '/nonexistent/s.txt'"),
    (["--rendezvous", "get"], "--rendezvous: 'get'"),
    (["--skew", "-0.1"], "--skew"),
    (["--skew", "11"], "--skew: must be in [0, 10]"),
    (["--seed", "1.5"], "--seed"),
    (["--buffer", "0"], "--buffer"),
    (["--nap", "-1"], "--nap"),
    (["--block", "-5"], "--block"),
    (["--block", "1000,,2000"], "--block: '1000,,2000' has an empty size"),
    (["--block", "1000,x"], "--block: 'x' is not a non-negative number"),
    (["--block", ",".join(["1000"] * 65)], "--block: 65 sizes; at most 64"),
    (["--host-queue", "red"], "--host-queue"),
    (["--loss-probes", "maybe"], "--loss-probes"),
    (["--lost-retransmits", "sometimes"], "--lost-retransmits"),
    (["--small-queues", "some"], "--small-queues: 'some'; valid: on, off"),
    (["--forward-retransmits", "1"], "--forward-retransmits: '1'; valid: on, off"),
    (["--timeout-keeps-ssthresh", "yes"], "--timeout-keeps-ssthresh: 'yes'; valid: on, off"),
    (["--rack-recovery", "1"], "--rack-recovery: '1'; valid: on, off"),
    (["--rack-ties", "yes"], "--rack-ties: 'yes'; valid: on, off"),
    (["--probe-small-queues", "held"], "--probe-small-queues: 'held'; valid: on, off"),
    (["--hystart-rounds", "6.14"], "--hystart-rounds: '6.14'; valid: on, off"),
    (["--tsq-until", "switch"], "--tsq-until: 'switch'; valid: host, receiver"),
    (["--reo-window", "2"], "--reo-window: '2'; valid: on, off"),
    (["--timer-ticks", "jiffies"], "--timer-ticks: 'jiffies'; valid: on, off"),
    (["--count-delivered", "yes"], "--count-delivered: 'yes'; valid: on, off"),
    (["--linux-cubic", "true"], "--linux-cubic: 'true'; valid: on, off"),
    (["--host-cores", "-1"], "--host-cores"),
    (["--host-cores", "1.5"], "--host-cores"),
    (["--cpu-slice", "0"], "--cpu-slice: a time from 1e-06 to 1 s"),
    (["--host-cores", "2", "--host-freezes", "91"], "--host-freezes: a percentage from 0 to 90"),
    (["--host-cores", "2", "--host-freezes", "nan"], "--host-freezes"),
    (["--host-freezes", "5"], "--host-freezes stops the host's cores: give --host-cores N too"),
    (["--host-softirq", "12e-6"], "--host-softirq takes the host's cores: give --host-cores N too"),
    (["--host-cores", "2", "--host-softirq", "0.002"], "--host-softirq: a time from 0 to 0.001 s a frame"),
    (["--host-cores", "2", "--host-softirq", "-1e-6"], "--host-softirq"),
    (["--host-cores", "2", "--host-softirq", "1e-5", "--host-freezes", "5"], "--host-softirq and --host-freezes: one or the other"),
    (["--sndbuf", "big"], "--sndbuf"),
    (["--sndbuf", "100"], "--sndbuf"),
    (["--socket-lookup", "list"], "--socket-lookup"),
    (["--pace-lead-share", "150"], "--pace-lead-share"),
    (["--give-up", "-1"], "--give-up"),
    (["--delayed-ack", "1e10"], "--delayed-ack: must be in [0, 1] seconds"),   # past ns-3's clock
    (["--rate", "1e5"], "link n0 - s0 (the rate for links without one): 100kbit is below the packet simulator's least"),
    (["--rate", "0"], "--rate: 0 bit/s; a link's rate is from 1e6 to 1e12 bit/s"),
    (["--rate", "2e12"], "2Tbit is above the packet simulator's greatest link rate, 1Tbit"),
    (["--latency", "1.5"], "link n0 - s0: a latency of 1.5s is over the packet simulator's limit of 1s a link"),
    (["--warmup", "1001"], "--warmup: '1001' is not a whole number in [0, 1000]"),
    (["--hystart-ack-delta", "2ms"], "--hystart-ack-delta: '2ms' is not a non-negative number"),
    (["--hystart-ack-delta", "1000001"], "--hystart-ack-delta: '1000001' is not a whole number in [1, 1000000]"),
    (["--frobnicate", "1"], "unknown option --frobnicate"),
    (["--rto-min"], "needs a value"),
])
def test_simulator_refuses_bad_options(tmp_path, args, word):
    proc = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, "chain:2,2")), *args], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and word in proc.stderr, proc.stderr


def test_print_settings_checks_a_topology_and_the_runs_options(tmp_path):
    """--print-settings with --topology checks what a run would (the bench
    asks it before its first simulation): a link of the file's own too slow
    or too long for TCP is named by its ends; the run's options too."""
    good = topo_file(tmp_path, "chain:2,2")
    assert print_settings("--topology", str(good), "--block", "1024,65536").returncode == 0
    own = tmp_path / "own.yaml"
    own.write_text('topocoll: 1\nswitches:\n  - name: "s0"\n    machines: "a[0-1]"\n    switches: "s1"\n'
                   '  - name: "s1"\n    machines: "a[2-3]"\n    uplink: {bandwidth: 50kbit}\n'
                   'machines:\n  a2: {latency: 3s}\n')
    proc = print_settings("--topology", str(own))
    assert proc.returncode == 2 and "link s1 - s0: 50kbit is below the packet simulator's least link rate" \
        in proc.stderr, proc.stderr
    own.write_text(own.read_text().replace("50kbit", "1Gbit"))
    proc = print_settings("--topology", str(own))
    assert proc.returncode == 2 and "link a2 - s1: a latency of 3s is over" in proc.stderr, proc.stderr
    proc = print_settings("--topology", str(good), "--rate", "5e5")
    assert proc.returncode == 2 and "500kbit is below the packet simulator's least link rate, 1Mbit" in proc.stderr
    proc = print_settings("--topology", str(good), "--block", "0")
    assert proc.returncode == 2 and "--block: '0'" in proc.stderr, proc.stderr


def test_simulator_refuses_connections_past_the_memory(tmp_path):
    """4,096 machines of linear need every pair connected, 8,386,560
    connections, far past this machine's memory: refused before opening
    one, naming the count."""
    proc = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, "tree:64,64")), "--algorithm", "linear",
                           "--block", "1024", "--repetitions", "1", "--warmup", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "4096 machines need 8386560 TCP connections, about 184 GiB" in proc.stderr, \
        proc.stderr[-2000:]


def test_simulator_refuses_bad_topologies(tmp_path):
    missing = subprocess.run([SIM, "--topology", str(tmp_path / "none.yaml")], capture_output=True, text=True)
    assert missing.returncode == 2 and "none.yaml" in missing.stderr
    slots = tmp_path / "slots.conf"
    slots.write_text("SwitchName=s0 Nodes=a,b\n")
    (tmp_path / "slots.yaml").write_text(
        'topocoll: 1\nswitches:\n  - name: "s0"\n    machines: "a[0-1]"\nmachines:\n  - name: "a0"\n    slots: 2\n')
    two = subprocess.run([SIM, "--topology", str(tmp_path / "slots.yaml")], capture_output=True, text=True)
    assert two.returncode == 2 and ("slots" in two.stderr or "topology" in two.stderr), two.stderr
    other = topo_file(tmp_path, "chain:3,3")
    diff = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, "chain:2,2")), "--plan-topology", str(other)],
                          capture_output=True, text=True)
    assert diff.returncode == 2 and "--plan-topology has 6 machines" in diff.stderr


@pytest.mark.parametrize("args,word", [
    (["--buffer", "1"], "--buffer 1"),
    (["--rto-min", "0s"], "--rto-min"),
    (["--algorithms", "native:pairwise"], "native:pairwise"),
    (["--collective", "bcast"], "MPI_Alltoall only"),
    (["--ranks-per-machine", "2"], "one rank a machine"),
    (["--skew", "20s"], "--skew 20s"),
    (["--skew", "soon"], "soon"),
    (["--seed", "-1"], "--seed -1"),
    (["--starts", "/nonexistent/s.txt"], "no file '/nonexistent/s.txt'"),
    (["--record-starts", "s.txt"], "--record-starts: the testbed's"),
    (["--host-queue", "short-first"], "--host-queue short-first: the packet back-end models"),
    (["--flow-order", "any"], "--flow-order any: the emulated cluster's (--backend testbed)"),
    (["--bandwidth", "100kbit"], "--backend packet: link n0 - s0 (the rate for links without one): 100kbit is below"),
    (["--latency", "2s"], "--backend packet: link n0 - s0: a latency of 2s is over the packet simulator's limit"),
    (["--sizes", "0"], "--backend packet: --sizes: '0' is not a whole number in [1, 1073741824]"),
    (["--sizes", "1K,2G"], "--backend packet: --sizes: '2147483648'"),
    (["--warmup", "5000"], "--backend packet: --warmup: '5000'"),
])
def test_bench_refusals(args, word):
    cmd = [sys.executable, "-m", "topocoll.cli", "bench", "chain:2,2", "--backend", "packet", "--sizes", "1K"]
    if "--algorithms" not in args:
        cmd += ["--algorithms", "native" if "--collective" in args else "linear"]
    proc = subprocess.run(cmd + args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and word in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "bench: 1/" not in proc.stderr   # refused before any simulation


def test_demo_shows_a_scaled_case(capsys, monkeypatch, tmp_path):
    """`topocoll demo` runs its packet-level case (here on 4 machines, to be
    quick): the bench table of faraj-yuan, Open MPI's own and pairwise."""
    from topocoll.cli import main
    from topocoll.commands import demo
    monkeypatch.setattr(demo, "PACKET_TOPOLOGY", "tree:2,2")
    monkeypatch.setattr(demo, "PACKET_SIZES", "4K")
    assert main(["demo", "--no-testbed", "--no-simgrid", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "packet-level simulation" in out
    for alg in ("faraj-yuan", "native", "pairwise"):
        assert re.search(rf"{alg}\s+[\d.]+\s+[\d.]+\s+[\d.]+%", out), out
    assert (tmp_path / "packet-tree-2-2.csv").stat().st_size > 0


@pytest.mark.parametrize("backend", ["simgrid", "testbed"])
def test_skew_and_rendezvous_belong_to_the_packet_backend(backend):
    for extra in (["--skew", "1ms"], ["--rendezvous", "copy"], ["--starts", __file__]):
        proc = subprocess.run([sys.executable, "-m", "topocoll.cli", "bench", "chain:2,2", "--backend", backend,
                               "--sizes", "1K", "--algorithms", "linear", *extra], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and "packet back-end" in proc.stderr and "Traceback" not in proc.stderr, \
            proc.stderr


def test_bench_passes_skew_seed_and_rendezvous(tmp_path):
    """bench --skew/--seed/--rendezvous reach the simulator and its settings."""
    out = tmp_path / "s.csv"
    proc = subprocess.run([sys.executable, "-m", "topocoll.cli", "bench", "chain:2,2", "--backend", "packet",
                           "--sizes", "70000", "--algorithms", "linear", "--repetitions", "2", "--csv", str(out),
                           "--quiet", "--skew", "300us", "--seed", "4", "--rendezvous", "copy"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    settings = next(csv.DictReader(out.open()))["settings"]
    assert "rendezvous=copy" in settings and "skew=300us (seed 4)" in settings, settings


def test_bench_replays_recorded_starts(tmp_path):
    """bench --starts hands the file to the simulator for each algorithm and
    size; a size the file has no line for is an error naming it; with --skew
    it is refused."""
    starts = tmp_path / "st.txt"
    starts.write_text("linear 70000 0 0 0.02 0 0\nnative 70000 0 0 0 0 0\n")
    def bench(*extra):
        return subprocess.run([sys.executable, "-m", "topocoll.cli", "bench", "chain:2,2", "--backend", "packet",
                               "--repetitions", "2", "--quiet", *extra], capture_output=True, text=True, timeout=300)
    out = tmp_path / "s.csv"
    proc = bench("--sizes", "70000", "--algorithms", "linear,native", "--csv", str(out), "--starts", str(starts))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = list(csv.DictReader(out.open()))
    assert f"starts=replayed from {starts}" in rows[0]["settings"], rows[0]["settings"]
    held, free = [float(r["seconds"]) for r in rows if r["algorithm"] == "linear"], \
        [float(r["seconds"]) for r in rows if r["algorithm"] == "native"]
    assert min(held) > max(free) + 0.015, (held, free)   # one rank 20 ms late, the other calls together
    missing = bench("--sizes", "1K", "--algorithms", "linear", "--starts", str(starts))
    assert missing.returncode != 0 and "no line for linear with 1024-byte blocks" in missing.stderr, missing.stderr
    both = bench("--sizes", "1K", "--algorithms", "linear", "--starts", str(starts), "--skew", "1ms")
    assert both.returncode == 2 and "one or the other" in both.stderr


def test_lost_retransmissions_are_found_without_a_timeout(tmp_path):
    """Linux's RACK finds a lost retransmission once data sent after it is
    acknowledged; ns-3 alone waits for the timeout (--lost-retransmits off).
    Open MPI's pairwise through 8-frame ports, 256 KB: fewer timeouts with
    it, every byte still right."""
    def run(flag):
        return simulate(tmp_path, "chain:4,4", "--algorithm", "pairwise", "--block", "262144", "--buffer", "8",
                        "--warmup", "0", "--repetitions", "3", "--skew", "0.001", "--check",
                        "--lost-retransmits", flag)
    on, off = run("on"), run("off")
    assert on["bad_bytes"] == off["bad_bytes"] == 0
    assert on["tcp_lost_retransmits"] > 0 and off["tcp_lost_retransmits"] == 0, (on, off)
    assert on["tcp_timeouts"] < off["tcp_timeouts"], (on["tcp_timeouts"], off["tcp_timeouts"])


def test_rack_resends_a_lost_tail_at_once(tmp_path):
    """In a fast recovery, RACK (Linux's, the default) marks every segment
    sent before one since acknowledged or SACKed lost, so a message's lost
    tail goes again at once; ns-3 alone (--rack-recovery off) marks only
    segments below a SACKed one and resends the tail a partial ACK at a
    time, each held by the receiver's 40 ms delayed ACK, or waits for the
    timeout.  linear on one switch of 4 machines, 64 KB through 4-frame
    ports: less time in recoveries, fewer timeouts, faster calls (with
    ns-3's count of delivered segments, ns-3's HyStart, ns-3's ACK for
    every out-of-order segment and ns-3's rate reduction, the settings this
    was measured with, so that RACK alone differs: at 4-frame ports a call
    turns on whether one retransmission is lost, and any change of timing
    moves that)."""
    on, off = tcp_behaviour_on_and_off(tmp_path, "--rack-recovery", "4", "linear", "--block", "65536",
                                       "--buffer", "4", "--repetitions", "4", "--count-delivered", "off",
                                       "--linux-hystart", "off", "--sack-compression", "off", "--linux-prr", "off")
    assert on["tcp_rack_lost"] > 0 and off["tcp_rack_lost"] == 0, (on, off)
    assert off["tcp_recoveries"] > 10 and 2 * on["tcp_recovery_s"] < off["tcp_recovery_s"], (on, off)
    assert on["tcp_timeouts"] < off["tcp_timeouts"], (on["tcp_timeouts"], off["tcp_timeouts"])
    assert sum(on["times"]) < sum(off["times"]), (on["times"], off["times"])


def test_rack_orders_segments_sent_at_one_instant(tmp_path):
    """RACK as Linux's (tcp_skb_sent_after, --rack-ties on) orders segments
    sent at one instant (by sequence in Linux's transmit loop, by the order
    they went here), so a lost retransmission sent with a later segment that
    arrived is found lost and goes again;
    taken by time alone (the default) it is not, and waits for the timeout.
    pairwise on 4 + 4 machines through 8-frame ports, 256 KB: some lost
    segments found only by the order with it, none without, more lost
    retransmissions found, every byte right either way."""
    on, off = tcp_behaviour_on_and_off(tmp_path, "--rack-ties", "chain:4,4", "pairwise", "--buffer", "8",
                                       "--repetitions", "3", "--skew", "0.001")
    assert on["tcp_rack_ties"] > 0 and off["tcp_rack_ties"] == 0, (on, off)
    assert on["tcp_lost_retransmits"] > off["tcp_lost_retransmits"] > 0, (on, off)


def test_rack_ties_follow_the_order_of_sending(tmp_path):
    """RACK's ties (--rack-ties on) are the order the segments went, not
    their sequence: with the reordering window (duplicate-ACK threshold 3),
    a duplicate ACK sends new data and the next ACK of the same instant
    starts the recovery with a resend of a lower segment; taken by sequence,
    that resend counted as sent before the data and was found lost as soon
    as the data was SACKed, and went again while on its way (90 of 477
    resends in this run; 5 of 381 in order).  A resend of a segment whose last
    copy was neither dropped nor given up by a timeout is one the tree's
    in-order paths did not call for; every byte right."""
    trace = tmp_path / "trace.txt"
    rec = simulate(tmp_path, "chain:4,4,4", "--algorithm", "pairwise", "--block", "65536", "--warmup", "0",
                   "--repetitions", "2", "--check", "--buffer", "100", "--skew", "0.001", "--reo-window", "on",
                   "--rack-ties", "on", "--trace", str(trace), "--trace-tcp")
    assert rec["bad_bytes"] == 0 and rec["tcp_lost_retransmits"] > 0, rec
    # nor does Linux's inference find reordering: every hole acknowledged late was resent
    assert rec["tcp_sack_reorder"] == 0, rec
    _, conns = timeline.read_tcp(trace)
    resends = sum(1 for evs in conns.values() for ev in evs if ev[1] == "resend")
    needless = sum(timeline.needless_resends(evs, lambda t: 0) for evs in conns.values())
    assert 10 * needless < resends, (needless, resends)


PROBE_STARTS = Path(__file__).resolve().parent / "data" / "packet-starts-3x4-pairwise-64k.txt"


def test_loss_probes_send_new_data_from_the_highest_sequence(tmp_path):
    """A loss probe with new data to send sends it from the highest sequence
    sent (Linux's tcp_send_head), not from ns-3's next sequence, which a
    fast recovery's resend leaves inside the window.  Sent from there, on
    this testbed job's recorded starts (pairwise 64 KB, 3 x 4, 100-frame
    ports), a probe joined a SACKed segment and one not SACKed into one
    segment; ns-3's count of SACKed bytes fell 64 behind, the connection's
    timeout found less than a segment of window, sent nothing and armed no
    timer, and the run stood still until the simulator gave up.  The
    scoreboard is checked after every ACK and send (it stopped that run at
    0.90 s); every byte right."""
    rec = simulate(tmp_path, "chain:4,4,4", "--algorithm", "pairwise", "--block", "65536", "--warmup", "2",
                   "--repetitions", "1", "--buffer", "100", "--starts", str(PROBE_STARTS), "--host-cores", "2",
                   "--rack-ties", "on", "--tsq-gso", "on", "--check", "--check-scoreboard")
    assert rec["bad_bytes"] == 0 and rec["tcp_loss_probes"] > 0 and rec["tcp_timeouts"] > 0, rec
    assert max(rec["warmup_times"] + rec["times"]) < 1, rec


@pytest.mark.parametrize("flags", [
    [],
    ["--rack-ties", "on", "--tsq-gso", "on"],
    ["--reo-window", "on", "--rack-ties", "on", "--tsq-gso", "on", "--gso-clumps", "on"],
    ["--forward-retransmits", "on", "--rack-recovery", "off"],
    ["--linux-prr", "off", "--lost-retransmits", "off", "--linux-rto", "off"],
    ["--linux-receive", "on", "--sack-compression", "off"],
])
def test_the_tcp_scoreboard_stays_in_step(tmp_path, flags):
    """ns-3's counts of each connection's SACKed, lost and resent bytes
    agree with its segments after every ACK and every send
    (--check-scoreboard; ns-3 checks them only in debug builds), whichever
    of Linux's behaviours the sockets run: 32-frame ports, ranks apart,
    recoveries, timeouts and probes; every byte right."""
    rec = simulate(tmp_path, "chain:4,4,4", "--algorithm", "pairwise", "--block", "65536", "--warmup", "0",
                   "--repetitions", "3", "--buffer", "32", "--skew", "0.002", "--check", "--check-scoreboard",
                   *flags)
    assert rec["bad_bytes"] == 0 and rec["drops_switch"] > 0 and rec["tcp_recoveries"] > 0, rec


def test_rack_waits_its_reordering_window_before_a_recovery(tmp_path):
    """Before a recovery, Linux's RACK (--reo-window on) takes a hole below
    the first segments SACKed for lost at once only if it was sent a quarter
    of the least RTT before the latest of them; one sent in the same instant
    (with RACK's ties, as one transmit loop stamps the kernel's
    segments) waits for the third segment SACKed or for the reordering
    timer.  pairwise on three switches of 4 machines, 64 KB through
    100-frame ports, GSO packets as the kernel's: recoveries the timer
    started with it, none without (the first SACK starts them), every byte
    right either way."""
    on, off = tcp_behaviour_on_and_off(tmp_path, "--reo-window", "chain:4,4,4", "pairwise", "--block", "65536",
                                       "--buffer", "100", "--skew", "0.001", "--rack-ties", "on",
                                       "--tsq-gso", "on", "--gso-clumps", "on")
    assert on["tcp_reo_timeouts"] > 0 and off["tcp_reo_timeouts"] == 0, (on, off)


def test_a_recovery_the_reordering_timer_starts_resends_one_segment(tmp_path):
    """A recovery that RACK's reordering timer starts (--reo-window on: no
    ACK at that instant) sizes its window as Linux's tcp_rack_reo_timeout
    does, as if one segment had been delivered (tcp_cwnd_reduction(sk, 1,
    ...)), so it resends one segment then; sized from nothing, the window
    stayed as it was and every hole went at once, a burst into the port
    that had dropped them.  pairwise on three switches of 4 machines, 64 KB
    through 32-frame ports; every byte right."""
    trace = tmp_path / "trace.txt"
    rec = simulate(tmp_path, "chain:4,4,4", "--algorithm", "pairwise", "--block", "65536", "--warmup", "0",
                   "--repetitions", "3", "--check", "--buffer", "32", "--skew", "0.002", "--reo-window", "on",
                   "--rack-ties", "on", "--trace", str(trace), "--trace-tcp")
    assert rec["bad_bytes"] == 0 and rec["tcp_reo_timeouts"] > 0, rec
    _, conns = timeline.read_tcp(trace)
    first_sends = []
    for evs in conns.values():
        state, last_ack = "open", None
        for ev in evs:
            if ev[1] == "ack":
                last_ack = ev[0]
            elif ev[1] == "state":
                if ev[2] == "recovery" and state != "recovery" and (last_ack is None or ev[0] - last_ack > 50e-6):
                    first_sends.append(sum(-(-e[3] // 1448) for e in evs
                                           if e[1] == "resend" and len(e) == 4 and e[0] == ev[0]))
                state = ev[2]
    assert len(first_sends) >= rec["tcp_reo_timeouts"] and set(first_sends) == {1}, first_sends


def test_tcp_timers_run_on_the_timer_wheels_ticks(tmp_path):
    """With --timer-ticks on, TCP's timers run when Linux's timer wheel runs
    them, on a 4 ms tick: every timeout and every loss probe that sends its
    last segment again (a resend in order, with no ACK or state change at
    that instant) lies on a tick; off, they run at their own times, and
    some miss the ticks.  pairwise on three switches of 4 machines, 64 KB
    through 32-frame ports, RACK's reordering window on (its timer runs on
    a tick either way); every byte right either way."""
    def timer_events(flag):
        trace = tmp_path / f"trace-{flag}.txt"
        rec = simulate(tmp_path, "chain:4,4,4", "--algorithm", "pairwise", "--block", "65536", "--warmup", "0",
                       "--repetitions", "3", "--check", "--buffer", "32", "--skew", "0.002", "--reo-window", "on",
                       "--rack-ties", "on", "--timer-ticks", flag, "--trace", str(trace), "--trace-tcp")
        assert rec["bad_bytes"] == 0 and rec["timer_ticks"] == (flag == "on") and rec["tcp_timeouts"] > 0, rec
        _, conns = timeline.read_tcp(trace)
        ticks = {"timeout": [], "probe": []}
        for evs in conns.values():
            by_time = {}
            for ev in evs:
                by_time.setdefault(ev[0], []).append(ev)
            state = "open"
            for ev in evs:
                alike = by_time[ev[0]]
                on_tick = round(ev[0] * 1e9) % 4_000_000 == 0
                if ev[1] == "state":
                    if ev[2] == "loss" and state != "loss":
                        ticks["timeout"].append(on_tick)
                    state = ev[2]
                elif ev[1] == "resend" and state == "open" and not any(e[1] in ("ack", "state") for e in alike):
                    ticks["probe"].append(on_tick)
        return ticks
    on, off = timer_events("on"), timer_events("off")
    assert all(on[k] and all(on[k]) for k in on), on
    assert off["timeout"] and not all(off["timeout"]) and off["probe"] and not all(off["probe"]), off


def test_sacks_are_compressed_as_linux_does(tmp_path):
    """Linux's receiver (the default) answers the first three out-of-order
    segments at one point of the stream at once and holds the ACKs of the
    rest for min(1 ms, srtt / 20); ns-3 alone (--sack-compression off)
    answers each at once.  pairwise on 4 + 4 machines through 8-frame ports,
    256 KB: ACKs held with it, none without, every byte right either way."""
    on, off = tcp_behaviour_on_and_off(tmp_path, "--sack-compression", "chain:4,4", "pairwise", "--buffer", "8",
                                       "--repetitions", "3", "--skew", "0.001")
    assert on["tcp_acks_compressed"] > 0 and off["tcp_acks_compressed"] == 0, (on, off)
    assert on["tcp_recoveries"] > 0 and off["tcp_recoveries"] > 0, (on, off)


def test_delivered_segments_are_counted_once(tmp_path):
    """Linux's cubic grows the window by what an ACK newly delivers; a
    segment SACKed before, then acknowledged, was counted when SACKed and is
    not counted again (--count-delivered on, the default), where ns-3 counts
    it again.  linear on one switch of 4 machines, 64 KB through 4-frame
    ports: such segments are met and not counted with the option on, none
    are left out with it off, and with ns-3's cubic (which takes no count)
    the option is off."""
    on, off = tcp_behaviour_on_and_off(tmp_path, "--count-delivered", "4", "linear", "--block", "65536",
                                       "--buffer", "4", "--repetitions", "4")
    assert on["tcp_counted_before"] > 0 and off["tcp_counted_before"] == 0, (on, off)
    rec = simulate(tmp_path, "4", "--algorithm", "linear", "--block", "65536", "--buffer", "4", "--warmup", "0",
                   "--repetitions", "2", "--check", "--linux-cubic", "off")
    assert rec["bad_bytes"] == 0 and not rec["count_delivered"] and rec["tcp_counted_before"] == 0, rec


def test_linux_hystart_ends_slow_starts(tmp_path):
    """Linux's HyStart (--linux-hystart on, the default, with Linux's cubic;
    ns-3's with off) ends a slow start from a window of 16 segments once a round's ACKs come
    in a train; the run counts the slow starts it ended.  pairwise on one
    switch of 4 machines, 256 KB through 100-frame ports: each connection's
    first slow start ends so, every byte right; with ns-3's HyStart
    (off) none is counted, and without Linux's cubic the option is off."""
    on, off = tcp_behaviour_on_and_off(tmp_path, "--linux-hystart", "4", "pairwise", "--buffer", "100")
    assert on["tcp_hystart_exits"] >= 12 and off["tcp_hystart_exits"] == 0, (on, off)
    rec = simulate(tmp_path, "4", "--algorithm", "pairwise", "--block", "262144", "--buffer", "100", "--warmup", "0",
                   "--repetitions", "1", "--check", "--linux-cubic", "off", "--linux-hystart", "on")
    assert rec["bad_bytes"] == 0 and not rec["linux_hystart"] and rec["tcp_hystart_exits"] == 0, rec


def test_hystart_rounds_begin_below_the_low_window(tmp_path):
    """Linux's HyStart (6.14 on, and the stable kernels) begins its rounds
    below its low window of 16 segments too (--hystart-rounds on), so an ACK
    train already long when the window reaches 16 ends the slow start
    there, as the testbed's 6.18 ends most of them.  Begun only at 16 (off,
    the default, as Linux 5.8-6.13), a round's train needs a further ACK,
    and no slow start ends below 17.  pairwise on one switch of 4 machines,
    256 KB through 100-frame ports: on, some connection's first threshold,
    set without a loss, is exactly 16; off, none is below 17; every byte
    right either way."""
    def first_thresholds(*flags):
        trace = tmp_path / "hy.trace"
        rec = simulate(tmp_path, "4", "--algorithm", "pairwise", "--block", "262144", "--buffer", "100",
                       "--warmup", "0", "--repetitions", "1", "--check", *flags, "--trace", str(trace), "--trace-tcp")
        assert rec["bad_bytes"] == 0 and rec["tcp_hystart_exits"] >= 12, rec
        first, changed = {}, set()
        for line in trace.read_text().splitlines():
            f = line.split()
            if len(f) >= 5 and f[1] == "tcp" and f[3] == "state":
                changed.add(f[2])
            elif len(f) >= 7 and f[1] == "tcp" and f[3] == "ack" and f[6] != "inf" and f[2] not in first:
                first[f[2]] = None if f[2] in changed else int(f[6])
        hystart = [w for w in first.values() if w is not None]
        assert len(hystart) >= 12, first
        return hystart
    on, off = first_thresholds("--hystart-rounds", "on"), first_thresholds()
    assert min(on) == 16 and min(off) >= 17, (on, off)


def test_small_queues_count_frames_until_received(tmp_path):
    """--tsq-until receiver: a connection's segments count against TCP
    small queues' limit until the machine they are for takes them, as on
    the testbed, whose veths and bridges keep each frame charged to its
    socket; host (the default): until they leave their machine, as a NIC
    frees them.  One connection, 1 MB over 1 ms links: counted to the
    receiver, the limit (about a millisecond of the pacing rate) holds the
    flight under the path's, and the exchange takes over 3 times as long
    with a segment checked at a time (--tsq-gso off; 0.41 against 0.10 s),
    longer by a part with a GSO packet at a time (0.13 s); every byte right.
    The connection held back is sent again as its frames leave the limit
    (tcp_tsq_releases), more often counted to the receiver.  Without small
    queues there is nothing to count (tsq_until "none") and nothing held."""
    def run(*flags):
        rec = simulate(tmp_path, "2", "--algorithm", "native", "--block", "1048576", "--latency", "0.001",
                       "--warmup", "0", "--repetitions", "1", "--check", *flags)
        assert rec["bad_bytes"] == 0 and rec["drops_switch"] == 0, rec
        return rec
    host, held, held_gso = run(), run("--tsq-until", "receiver"), run("--tsq-until", "receiver", "--tsq-gso", "on")
    assert host["tsq_until"] == "host" and held["tsq_until"] == "receiver", (host, held)
    assert held["times"][0] > 3 * host["times"][0], (host["times"], held["times"])
    assert 1.15 * host["times"][0] < held_gso["times"][0] < held["times"][0] / 2, (host["times"], held_gso["times"])
    assert 0 < host["tcp_tsq_releases"] < held["tcp_tsq_releases"], (host["tcp_tsq_releases"], held["tcp_tsq_releases"])
    unheld = run("--tsq-until", "receiver", "--small-queues", "off")
    assert unheld["tsq_until"] == "none" and unheld["tcp_tsq_releases"] == 0, unheld


def test_small_queues_hold_a_probes_new_data(tmp_path):
    """--probe-small-queues (on by default): Linux sends a tail loss
    probe's new data through tcp_write_xmit, whose small-queue check holds
    it back like any new data, so a connection over its share of the queue
    sends no probe and its RTO stays.  Counted to the receiver, GSO packets
    at a time, linear 64 KB on 2 x 4 / 32 with ranks starting apart: some
    probes are held (tcp_loss_probes_held), none without the check, every
    byte right either way.  Each timeout also counts the retransmissions it
    finds still out as lost again (tcp_timeout_lost_retransmits, the rest
    of Linux's TCPLostRetransmit)."""
    def run(flag):
        rec = simulate(tmp_path, "chain:4,4", "--algorithm", "linear", "--block", "65536", "--warmup", "1",
                       "--repetitions", "2", "--buffer", "32", "--check", "--skew", "0.004", "--tsq-until", "receiver",
                       "--tsq-gso", "on", "--gso-clumps", "on", "--probe-small-queues", flag)
        assert rec["bad_bytes"] == 0 and rec["probe_small_queues"] == (flag == "on"), rec
        assert rec["tcp_timeouts"] > 0 and rec["tcp_timeout_lost_retransmits"] > 0, rec
        return rec
    on, off = run("on"), run("off")
    assert on["tcp_loss_probes_held"] > 0 and off["tcp_loss_probes_held"] == 0, (on, off)


def test_hystart_takes_each_acks_round_trip(tmp_path):
    """Linux's HyStart takes each ACK's own round-trip sample (--ack-rtt on,
    the default): its least RTT is a segment's, and a round's ACK train must
    last half of it.  ns-3 hands the congestion control its smoothed RTT
    (off) at every call, several for one ACK, and the train ended slow
    starts early.
    pairwise on one switch of 4 machines, 256 KB through 100-frame ports:
    each connection's first slow start ends by the train, off at 16-20
    segments, on at twice that on average; the exits are counted as the
    kernel counts them (TCPHystartTrainDetect, TCPHystartTrainCwnd)."""
    on, off = tcp_behaviour_on_and_off(tmp_path, "--ack-rtt", "4", "pairwise", "--buffer", "100")
    for rec in (on, off):
        assert rec["tcp_hystart_exits"] >= 12, rec
        assert rec["tcp_hystart_train"] + rec["tcp_hystart_delay"] >= rec["tcp_hystart_exits"], rec
    assert off["tcp_hystart_train_cwnd"] <= 20 * off["tcp_hystart_train"], off
    assert on["tcp_hystart_train_cwnd"] + on["tcp_hystart_delay_cwnd"] >= \
        32 * (on["tcp_hystart_train"] + on["tcp_hystart_delay"]), on


def test_send_buffer_grows_with_the_window(tmp_path):
    """--sndbuf auto (the default) grows a socket's send buffer with its
    window as Linux does, so it never holds the window back: a 1 MB exchange
    over 1 ms links runs as fast as with a 4 MB buffer, where a fixed 4 KB
    buffer (two segments in flight) takes several times as long."""
    def ms(*extra):
        rec = simulate(tmp_path, "2", "--algorithm", "native", "--block", "1048576", "--latency", "0.001",
                       "--warmup", "0", "--repetitions", "1", "--check", *extra)
        assert rec["bad_bytes"] == 0, rec
        return 1e3 * rec["times"][0]
    auto, big, small = ms(), ms("--sndbuf", "4194304"), ms("--sndbuf", "4096")
    assert auto < 1.1 * big and small > 3 * auto, (auto, big, small)


def tcp_behaviour_on_and_off(tmp_path, option: str, spec: str, algorithm: str, *args: str) -> tuple[dict, dict]:
    """One of the sockets' Linux behaviours on, then off (two checked calls,
    256 KB each unless args say otherwise): every byte right either way, the
    JSON naming the setting; the two records."""
    key = option.removeprefix("--").replace("-", "_")
    recs = []
    for flag in ("on", "off"):
        rec = simulate(tmp_path, spec, "--algorithm", algorithm, "--block", "262144", "--warmup", "0",
                       "--repetitions", "2", "--check", *args, option, flag)
        assert rec["bad_bytes"] == 0 and rec[key] == (flag == "on"), rec
        recs.append(rec)
    return recs[0], recs[1]


def test_small_queues_keep_windows_in_the_socket(tmp_path):
    """With TCP small queues (the default, as Linux's) a connection keeps
    only about a millisecond of its rate in its machine's egress queue, so
    seven connections out of one machine hold a few packets each there; with
    --small-queues off their whole windows wait in it.  One switch, 8
    machines."""
    on, off = tcp_behaviour_on_and_off(tmp_path, "--small-queues", "8", "linear")
    assert on["host_queue_peak"] <= 7 * 12, on["host_queue_peak"]
    assert 3 * on["host_queue_peak"] < off["host_queue_peak"], (on["host_queue_peak"], off["host_queue_peak"])


def window_peaks(path: Path) -> tuple[list[int], int, int]:
    """From a --trace-tcp trace's timed calls (read as timeline.py reads
    it): each connection's largest window (segments), and of the
    (connection, call) pairs with a slow-start threshold set, how many there
    are and in how many the window grew past it (congestion avoidance's
    growth)."""
    calls, conns = timeline.read_tcp(path)
    peak, grew = {}, {}
    for conn, events in conns.items():
        for t, kind, *ack in events:
            if kind != "ack" or t < calls[0]:
                continue
            _, cwnd, ssthresh = ack
            peak[conn] = max(peak.get(conn, 0), cwnd)
            if ssthresh is not None:
                key = (conn, bisect.bisect_right(calls, t))
                grew[key] = grew.get(key, False) or cwnd > ssthresh
    return sorted(peak.values()), len(grew), sum(grew.values())


def test_full_windows_and_gso_packets_let_windows_grow(tmp_path):
    """pairwise on one switch of 8, 512 KB, each connection restarting
    after idling a call:
    - a window is full when no full segment fits in it, whether it is
      counted to the byte (the default) or in packets (--window-in-packets
      on), so most windows grow past their threshold in congestion
      avoidance, also those cut by a fraction (3/4 after idle);
    - --tsq-gso on besides: small queues checked a GSO packet at a time,
      so a connection fills its window and every window grows, peaking a
      fifth higher or more than checked a segment at a time (Linux's, off
      by default: docs/packet.md)."""
    runs = {}
    for name, flags in (("bytes", ["--window-in-packets", "off"]), ("packets", ["--window-in-packets", "on"]),
                        ("gso", ["--window-in-packets", "on", "--tsq-gso", "on"])):
        trace = tmp_path / f"{name}.trace"
        rec = simulate(tmp_path, "8", "--algorithm", "pairwise", "--block", "524288", "--buffer", "100",
                       "--warmup", "1", "--repetitions", "3", "--check", *flags, "--trace", str(trace), "--trace-tcp")
        assert rec["bad_bytes"] == 0 and rec["window_in_packets"] == (name != "bytes"), rec
        assert rec["tsq_gso"] == (name == "gso"), rec
        peaks, pairs, grew = window_peaks(trace)
        assert len(peaks) == 56 and pairs >= 56 * 3 - 8, (name, len(peaks), pairs)
        runs[name] = (peaks[len(peaks) // 2], pairs, grew)
    for name in ("bytes", "packets"):
        assert runs[name][2] > runs[name][1] / 2, runs
    assert runs["gso"][2] == runs["gso"][1] and runs["gso"][0] >= 1.2 * runs["packets"][0], runs


def test_gso_clumps_leave_machines_whole(tmp_path):
    """--gso-clumps on (with --tsq-gso on): GSO packets as the testbed's
    kernel builds and sends them: a packet smaller than a third of the
    window waits for an ACK due within 1 ms (TSO deferral), so packets grow
    (the kernel's averaged 8.6 segments at faraj-yuan on 3 x 4 / 32 at
    128 KB); machines' queues send a packet's segments together over a fast
    device, shaped to the link's rate (htb over a veth), and switch ports
    shape with a bucket (tbf over a veth).  faraj-yuan stays at its bound
    without a drop, as on the testbed, every byte right; with GSO packets
    but a segment at a time (--tsq-gso alone) packets are smaller; without
    either, a packet is a segment."""
    runs = {}
    for name, flags in (("segments", []), ("gso", ["--tsq-gso", "on"]),
                        ("clumps", ["--tsq-gso", "on", "--gso-clumps", "on"])):
        rec = simulate(tmp_path, "chain:4,4,4", "--algorithm", "faraj-yuan", "--block", "65536", "--buffer", "32",
                       "--warmup", "1", "--repetitions", "2", "--check", *flags)
        assert rec["bad_bytes"] == 0 and rec["gso_clumps"] == (name == "clumps"), rec
        assert rec["drops_switch"] == 0 and rec["drops_host"] == 0, (name, rec["drops_by_port"])
        runs[name] = (rec["host_segments"] / rec["host_gso_packets"], st.median(rec["times"]))
        sizes = rec["host_gso_sizes"]   # the packets by their segments: 1, 2, 3-4, 5-8, 9-16, 17+
        assert list(sizes) == ["1", "2", "3-4", "5-8", "9-16", "17+"], sizes
        assert sum(sizes.values()) == rec["host_gso_packets"], (sizes, rec["host_gso_packets"])
        least = [1, 2, 3, 5, 9, 17]
        most = [1, 2, 4, 8, 16, rec["host_segments"]]
        assert sum(n * k for n, k in zip(sizes.values(), least)) <= rec["host_segments"] \
            <= sum(n * k for n, k in zip(sizes.values(), most)), (sizes, rec["host_segments"])
        if name == "segments":
            assert sizes["1"] == rec["host_gso_packets"], sizes
        else:
            assert sum(sizes[b] for b in ("5-8", "9-16", "17+")) > 0, (name, sizes)
    assert runs["segments"][0] == 1.0, runs
    assert 2 < runs["gso"][0] < runs["clumps"][0], runs
    assert abs(runs["clumps"][1] / runs["segments"][1] - 1) < 0.03, runs


def test_gso_clumps_are_held_to_the_lines_bucket(tmp_path):
    """--gso-clumps on: a machine's line is the testbed's tbf over its htb.
    A GSO packet leaves whole when the line's bucket (1 ms at the rate, 8
    full frames at 100 Mbit/s) holds its bytes, its segments back to back
    over the veth; a longer one is split as the tbf takes it.  So a flow's
    clumps (its frames leaving within 20 us of each other) run up to the
    bucket and no further, as the testbed's did at a switch (1 to 8 frames,
    pairwise 64 KB on 3 x 4 / 100): past a peer class's two frames (a GSO
    packet's rest once followed only within the instant its first segment
    left, so clumps stopped at 3-5 frames), never a whole 17-segment
    packet; without the option nothing is counted; every byte right."""
    args = ("chain:4,4,4", "--algorithm", "pairwise", "--block", "65536", "--buffer", "100", "--warmup", "0",
            "--repetitions", "3", "--skew", "0.001", "--check", "--tsq-gso", "on")
    rec = simulate(tmp_path, *args, "--gso-clumps", "on")
    clumps = rec["host_clumps"]
    assert rec["bad_bytes"] == 0 and sum(clumps.values()) > 1000, rec
    assert 5 < rec["host_clump_max"] <= 16 and clumps["17+"] == 0, clumps
    assert clumps["5-8"] > 50 * clumps["9-16"], clumps   # 9 only with a short last segment
    assert rec["host_gso_sizes"]["9-16"] + rec["host_gso_sizes"]["17+"] > 0, rec["host_gso_sizes"]
    off = simulate(tmp_path, *args)
    assert sum(off["host_clumps"].values()) == 0 and off["host_clump_max"] == 0, off


def each_way(tmp_path, option: str, spec: str, *args) -> dict:
    """A run with an on|off option on and off ({"on": JSON, "off": JSON}),
    every byte checked, the JSON naming the option's state."""
    key = option[2:].replace("-", "_")
    recs = {}
    for mode in ("on", "off"):
        recs[mode] = simulate(tmp_path, spec, *args, "--check", option, mode)
        assert recs[mode]["bad_bytes"] == 0 and recs[mode][key] == (mode == "on"), recs[mode]
    return recs


def test_linux_receive_acks_at_the_applications_read(tmp_path):
    """--linux-receive on: the receiver's window and ACKs as Linux's.  Its
    buffer starts at tcp_rmem's 128 KiB; past a full segment it ACKs at once
    only while the window it would advertise does not shrink, else the
    application's read sends the ACK.  On the testbed's shared cores (16
    ranks on 2) the ranks read late and some ACKs go at their reads; ns-3's
    receiver never waits for a read.  pairwise on 2 x 8 at 256 KB also fills
    the peers' windows with SACKed data in flight, where ns-3 would send an
    empty segment and crash (probing_tcp.cc: nothing_in_receive_window);
    every byte right either way."""
    recs = each_way(tmp_path, "--linux-receive", "chain:8,8", "--algorithm", "pairwise", "--block", "262144",
                    "--buffer", "100", "--host-cores", "2", "--warmup", "0", "--repetitions", "1")
    assert recs["off"]["tcp_acks_at_read"] == 0, recs["off"]["tcp_acks_at_read"]
    assert recs["on"]["tcp_acks_at_read"] > 100, recs["on"]["tcp_acks_at_read"]


def test_paced_ranks_wake_to_read(tmp_path):
    """With the host's cores, a paced rank waiting for its link clock wakes
    every millisecond to drive progress (--idle-wakes, as the testbed's
    executor naps and probes), so what arrives meanwhile is read within a
    millisecond.  Off, it sleeps to its deadline and reads nothing: with
    Linux's receiver (whose ACKs wait for the read once its window is
    full) the senders stall and then burst, and faraj-yuan on 32-packet
    ports drops and falls off its bound; with the wakes it drops nothing.
    Every byte right either way."""
    recs = each_way(tmp_path, "--idle-wakes", "chain:4,4,4", "--algorithm", "faraj-yuan", "--block", "131072",
                    "--buffer", "32", "--host-cores", "2", "--skew", "0.001", "--warmup", "1", "--repetitions", "2",
                    "--linux-receive", "on")
    assert recs["on"]["drops_switch"] == 0, recs["on"]["drops_by_port"]
    assert recs["off"]["drops_switch"] > 0, recs["off"]
    assert max(recs["on"]["times"]) < max(recs["off"]["times"]), (recs["on"]["times"], recs["off"]["times"])
    # reads of bytes that waited a millisecond or more for their rank to run
    assert 2 * recs["on"]["reads_late"] < recs["off"]["reads_late"], (recs["on"]["reads_late"], recs["off"]["reads_late"])


def test_late_ranks_spin_in_the_barrier(tmp_path):
    """With the host's cores, a rank leaving the barrier late (--skew,
    --starts) spins in it with --barrier-spins, wanting a core and reading
    what arrives in its turns, as a rank in Open MPI's barrier does; off, it
    sleeps off its core and the bytes its early peers send wait in its
    sockets until it leaves: more reads come a millisecond or more late.
    Every byte right either way."""
    recs = each_way(tmp_path, "--barrier-spins", "chain:4,4,4", "--algorithm", "pairwise", "--block", "32768",
                    "--buffer", "100", "--host-cores", "2", "--skew", "0.005", "--warmup", "1", "--repetitions", "2")
    assert min(rec["reads_waited"] for rec in recs.values()) > 1000, recs
    assert 2 * recs["on"]["reads_late"] < recs["off"]["reads_late"], (recs["on"]["reads_late"], recs["off"]["reads_late"])
    alone = simulate(tmp_path, "chain:4,4,4", "--algorithm", "pairwise", "--block", "32768", "--buffer", "100",
                     "--skew", "0.005", "--warmup", "0", "--repetitions", "1")
    assert alone["reads_waited"] == 0 and alone["reads_late"] == 0, alone   # a core a rank: read at once


def test_idle_ranks_yield_their_core(tmp_path):
    """With the host's cores and --idle-yield (Open MPI's
    mpi_yield_when_idle, as the testbed runs), a rank whose progress poll
    finds nothing gives its core to a rank with something to do, so no
    bytes wait a millisecond for their rank; without it the rank on a core
    keeps it for its turn and Open MPI's own all-to-all (put rendezvous,
    every answer a rank's) reads thousands of times that late.  Every byte
    right either way."""
    recs = each_way(tmp_path, "--idle-yield", "chain:4,4,4", "--algorithm", "native", "--block", "131072",
                    "--buffer", "32", "--host-cores", "2", "--skew", "0.001", "--warmup", "0", "--repetitions", "2")
    assert min(rec["reads_waited"] for rec in recs.values()) > 1000, recs
    assert recs["off"]["reads_late"] > 1000, recs["off"]
    assert 100 * recs["on"]["reads_late"] < recs["off"]["reads_late"], (recs["on"]["reads_late"], recs["off"]["reads_late"])


def on_two_host_cores(tmp_path, algorithm: str, *args) -> dict:
    """two calls of 70,001-byte blocks on two switches of 4, 32-packet
    ports, the ranks sharing a host of 2 cores; every byte checked right"""
    rec = simulate(tmp_path, "chain:4,4", "--algorithm", algorithm, "--block", "70001", "--buffer", "32",
                   "--host-cores", "2", "--warmup", "0", "--repetitions", "2", "--check", *args)
    assert rec["checked"] and rec["bad_bytes"] == 0, rec
    return rec


@pytest.mark.parametrize("algorithm", ["faraj-yuan", "pairwise", "native"])
def test_frozen_cores_hold_ranks_and_their_machines(tmp_path, algorithm):
    """--host-freezes: the host stops each core a share of the time (as the
    hypervisor stopped the testbed's vCPUs), its rank and its machines'
    network processing with it.  Every byte still arrives; the same seed
    gives the same run; with the cores frozen most of the time reads wait
    a millisecond or more for their ranks where without freezes none does,
    and machines take in packets and send from their queues only after a
    thaw (the time may go either way: pairwise was faster frozen)."""
    run = functools.partial(on_two_host_cores, tmp_path, algorithm)
    never, often, again = run(), run("--host-freezes", "60"), run("--host-freezes", "60")
    assert never["host_freezes"] == 0 and often["host_freezes"] == 60, often
    assert often["times"] == again["times"], (often["times"], again["times"])
    assert never["reads_late"] == 0 and often["reads_late"] > 10, (never["reads_late"], often["reads_late"])
    assert never["host_freeze_count"] == never["host_freeze_held_in"] == never["host_freeze_held_out"] == 0, never
    assert often["host_freeze_count"] > 20 and often["host_freeze_held_in"] > 100 and often["host_freeze_held_out"] > 10, often


@pytest.mark.parametrize("algorithm", ["faraj-yuan", "linear", "native"])
def test_host_softirq_costs_cores(tmp_path, algorithm):
    """--host-softirq: each frame a machine takes in holds a core of the
    host that long before its socket sees it, the rank on that core
    stopped.  Every frame is so processed and every byte still arrives;
    the same seed gives the same run; at 500 us a frame two cores take in
    at most 4,000 frames a second, a thirtieth of what eight 100 Mbit/s
    machines send, so every call is slower than without."""
    run = functools.partial(on_two_host_cores, tmp_path, algorithm)
    free, costly, again = run(), run("--host-softirq", "5e-4"), run("--host-softirq", "5e-4")
    assert free["host_softirq_frames"] == 0 and costly["host_softirq"] == 5e-4, costly
    assert costly["times"] == again["times"], (costly["times"], again["times"])
    payload_frames = 8 * 7 * 70001 // 1448 * 3   # data segments alone, three calls (the untimed one too)
    assert costly["host_softirq_frames"] > payload_frames, (costly["host_softirq_frames"], payload_frames)
    assert min(costly["times"]) > max(free["times"]), (free["times"], costly["times"])


def test_host_queue_serves_each_peer_in_turn(tmp_path):
    """sparse-first (the testbed's htb, a class per peer) keeps a FIFO per
    peer machine and serves them round-robin: linear's seven connections out
    of a machine on one switch of 8 have bulk queued for several peers at
    once, at most seven; fifo keeps one FIFO and no peer's.  Every byte right
    either way."""
    per_peer, one = (simulate(tmp_path, "8", "--algorithm", "linear", "--block", "262144", "--warmup", "0",
                              "--repetitions", "1", "--check", "--host-queue", hq) for hq in ("sparse-first", "fifo"))
    assert per_peer["bad_bytes"] == 0 and one["bad_bytes"] == 0
    assert 2 <= per_peer["host_queue_peers_peak"] <= 7, per_peer["host_queue_peers_peak"]
    assert one["host_queue_peers_peak"] == 0, one["host_queue_peers_peak"]


def test_no_forward_retransmissions(tmp_path):
    """In a fast recovery at a message's tail, with nothing known lost left
    to resend, a connection waits (as Linux's does, the default) instead of
    resending the segments still in flight (RFC 6675's rule 3, ns-3's,
    --forward-retransmits on): RACK's clock then took the originals' SACKs
    for the resends' and found many retransmissions lost that were not.
    Pairwise on 3 x 4 machines, 100-packet ports."""
    on, off = tcp_behaviour_on_and_off(tmp_path, "--forward-retransmits", "chain:4,4,4", "pairwise")
    assert off["drops_switch"] > 100 and on["drops_switch"] > 100, (off, on)
    assert 3 * off["tcp_lost_retransmits"] < on["tcp_lost_retransmits"], (off, on)


def test_timeout_in_recovery_keeps_ssthresh(tmp_path):
    """A timeout that ends a failed fast recovery keeps the slow-start
    threshold the recovery set, as Linux's tcp_enter_loss does (the default);
    ns-3 sets it again from the window the recovery had shrunk to the
    segments in flight, and most such timeouts left it at its floor of 2
    segments (--timeout-keeps-ssthresh off).  linear on 3 x 4 machines,
    32-packet ports, 128 KB: windows of a few segments, timeouts mostly out
    of recoveries."""
    on, off = tcp_behaviour_on_and_off(tmp_path, "--timeout-keeps-ssthresh", "chain:4,4,4", "linear",
                                       "--block", "131072", "--buffer", "32")
    for rec in (on, off):
        assert 0 < rec["tcp_recovery_timeouts"] <= rec["tcp_timeouts"], rec
    assert 2 * on["tcp_floor_timeouts"] < off["tcp_floor_timeouts"], (on, off)


def test_linux_cubic_regrows_windows_as_reno_would(tmp_path):
    """--linux-cubic on (the default) runs cubic as Linux's: after a loss at
    a window of a few segments it grows the window at least as fast as Reno
    would (a round trip here is milliseconds), where ns-3's TcpCubic (off)
    holds it for about a second, so the same exchange through 32-packet
    ports drops far more with it on (about twice, as the testbed's kernel
    drops twice what ns-3's cubic does).  linear on 3 x 4
    machines, 256 KB, with ns-3's HyStart on both sides (Linux's ends slow
    starts earlier and would be measured with it), so that the window's
    growth alone differs."""
    on, off = tcp_behaviour_on_and_off(tmp_path, "--linux-cubic", "chain:4,4,4", "linear", "--buffer", "32",
                                       "--linux-hystart", "off")
    assert off["drops_switch"] > 1000, off
    assert on["drops_switch"] > 1.4 * off["drops_switch"], (on["drops_switch"], off["drops_switch"])


def test_every_drop_is_a_named_ports(tmp_path):
    """A switch port is a byte-counted FIFO (a packet goes in if it fits, as
    an ACK does behind full frames): every drop is that queue's, none is the
    traffic-control layer's for a stopped device, and each is put down to
    its port (the ten ports of chain:4,4 are all listed)."""
    rec = simulate(tmp_path, "chain:4,4", "--algorithm", "linear", "--block", "200000", "--buffer", "8",
                   "--warmup", "0", "--repetitions", "2", "--check")
    assert rec["drops_switch"] > 100 and rec["drops_unplaced"] == 0, rec
    assert sum(rec["drops_by_port"].values()) == rec["drops_switch"], rec


def test_trace_has_a_line_for_each_call_timeout_and_drop(tmp_path):
    """--trace writes each call's start (index, block, timed or not), each
    executor event (every rank's sends to every other rank in every call,
    each started, then done), each timeout (first, or repeat: the connection
    had not recovered from its last) and each drop, as many as the JSON
    counts; the run itself is the same as without it.  A trace that cannot
    be written is an error."""
    args = ["--algorithm", "linear", "--block", "32768,16384", "--warmup", "1", "--repetitions", "2", "--buffer", "8",
            "--no-check"]
    path = tmp_path / "events.trace"
    proc = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, "chain:4,4")), "--rate", "1e8", *args,
                           "--trace", str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    plain = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, "chain:4,4")), "--rate", "1e8", *args],
                           capture_output=True, text=True, timeout=300)
    assert [r["times"] for r in results] == [json.loads(l)["times"] for l in plain.stdout.splitlines()]
    lines = [l.split() for l in path.read_text().splitlines()]
    times = [float(w[0]) for w in lines]
    assert times == sorted(times) and times[0] >= 0
    calls = [w[2:] for w in lines if w[1] == "call"]
    assert calls == [["0", "32768", "untimed"], ["1", "32768", "timed"], ["2", "32768", "timed"],
                     ["3", "16384", "untimed"], ["4", "16384", "timed"], ["5", "16384", "timed"]]
    timeouts = [w for w in lines if w[1] == "timeout"]
    drops = [w for w in lines if w[1] == "drop"]
    assert sum(r["tcp_timeouts"] + r["tcp_repeat_timeouts"] for r in results) == len(timeouts) > 0
    assert sum(r["tcp_repeat_timeouts"] for r in results) == sum(w[3] == "repeat" for w in timeouts)
    assert all(re.fullmatch(r"[\d.]+:\d+->[\d.]+:\d+", w[2]) and w[3] in ("first", "repeat") for w in timeouts)
    assert sum(r["drops_switch"] + r["drops_host"] for r in results) == len(drops) > 0
    sends = {}   # (rank, call, op) -> {event: (time, peer)}
    for w in lines:
        if w[1] == "exec":
            assert len(w) == 7 and w[5] in ("start", "done", "notify"), w
            sends.setdefault((int(w[2]), int(w[3]), int(w[4])), {})[w[5]] = (float(w[0]), int(w[6]))
    for rank in range(8):
        for call in range(6):
            ops = [ev for (r, c, _), ev in sends.items() if r == rank and c == call]
            assert sorted(ev["start"][1] for ev in ops) == [p for p in range(8) if p != rank], (rank, call)
            assert all(ev["start"][0] <= ev["done"][0] and ev["start"][1] == ev["done"][1] for ev in ops)
    ports = {w[2] for w in drops}
    assert ports <= set(results[0]["drops_by_port"]) | set(results[1]["drops_by_port"]) | {"host"}, ports
    bad = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, "chain:2,2")), "--rate", "1e8",
                          "--trace", str(tmp_path / "no" / "such" / "dir" / "t")], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "cannot write the trace" in bad.stderr and bad.stdout == "", bad.stderr


def test_trace_tcp_adds_each_connections_acks_resends_and_states(tmp_path):
    """--trace-tcp adds, per connection, each ACK without data as it reaches
    the sender (first unacknowledged byte, window and threshold in segments),
    each resend and each change of congestion state, in the format
    timeline.py's record --tcp gives the kernel's; a timeout that is not a
    repeat is the connection entering loss, so the two counts agree.  The
    run is the same as without it, and it needs --trace."""
    args = ["--topology", str(topo_file(tmp_path, "chain:4,4")), "--rate", "1e8", "--algorithm", "linear",
            "--block", "65536", "--warmup", "1", "--repetitions", "2", "--buffer", "8", "--no-check"]
    path, plain_path = tmp_path / "tcp.trace", tmp_path / "plain.trace"
    proc = subprocess.run([SIM, *args, "--trace", str(path), "--trace-tcp"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plain = subprocess.run([SIM, *args, "--trace", str(plain_path)], capture_output=True, text=True, timeout=300)
    assert json.loads(proc.stdout)["times"] == json.loads(plain.stdout)["times"]
    lines = [l.split() for l in path.read_text().splitlines()]
    assert [w for w in lines if w[1] != "tcp"] == [l.split() for l in plain_path.read_text().splitlines()]
    tcp = [w for w in lines if w[1] == "tcp"]
    states, kinds = {}, set()
    for w in tcp:
        assert re.fullmatch(r"[\d.]+:\d+->[\d.]+:\d+", w[2]), w
        kinds.add(w[3])
        if w[3] == "ack":
            assert len(w) == 7 and int(w[4]) >= 0 and int(w[5]) >= 1 and (w[6] == "inf" or int(w[6]) >= 1), w
        elif w[3] == "resend":   # SEQ BYTES
            assert len(w) == 6 and 0 <= int(w[4]) < 1 << 32 and 0 < int(w[5]) <= 1448, w
        elif w[3] == "lost":     # WHERE SEQ BYTES: an ACK has none
            assert len(w) == 7 and (w[4] == "host" or re.fullmatch(r"s\d+->[sn]\d+", w[4])), w
            assert 0 <= int(w[5]) < 1 << 32 and 0 <= int(w[6]) <= 1448, w
        else:
            assert w[3] == "state" and len(w) == 5 and w[4] in ("open", "disorder", "cwr", "recovery", "loss"), w
            assert states.get(w[2], "open") != w[4], w   # a change each
            states[w[2]] = w[4]
    assert kinds == {"ack", "resend", "state", "lost"}
    # a lost line beside each drop line (a TCP run drops only TCP segments), and each data segment lost
    # is resent: a later resend covers its first byte
    drops = [(w[0], w[2]) for w in lines if w[1] == "drop"]
    lost = [w for w in tcp if w[3] == "lost"]
    assert [(w[0], w[4]) for w in lost] == drops
    for w in (w for w in lost if int(w[6]) > 0):
        assert any(r[2] == w[2] and r[3] == "resend" and float(r[0]) >= float(w[0]) and
                   (int(w[5]) - int(r[4])) % (1 << 32) < int(r[5]) for r in tcp), w
    first = [w for w in lines if w[1] == "timeout" and w[3] == "first"]
    entering = [w for w in tcp if w[3] == "state" and w[4] == "loss"]
    assert len(first) == len(entering) > 0
    assert [(w[0], w[2]) for w in first] == [(w[0], w[2]) for w in entering]
    assert sum(w[3] == "resend" for w in tcp) >= len(first)
    out = subprocess.run([sys.executable, str(Path(__file__).resolve().parent.parent / "scripts" / "timeline.py"),
                          "tcp", str(path), str(path)], capture_output=True, text=True)
    assert out.returncode == 0 and "timeouts (a connection entering loss)" in out.stdout, out.stderr
    again = next(l for l in out.stdout.splitlines() if "resent and lost again" in l).split()
    assert again[-1] == again[-3] == "%" and float(again[-2]) == float(again[-4]) >= 0, again
    bad = subprocess.run([SIM, *args, "--trace-tcp"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--trace-tcp adds to a trace: give --trace FILE too" in bad.stderr, bad.stderr


def test_linux_rto_times_out_later_in_a_call(tmp_path):
    """--linux-rto (on by default): Linux's RTO, srtt + max(4 x rttvar, the
    minimum) in 4 ms ticks and restarted when a fast recovery resends the
    first segment, fires later in a call than ns-3's max(minimum, srtt +
    4 x rttvar) restarted only by ACKs: all at once into shallow ports on
    2 x 4 machines, the median first timeout of a call comes at least 4 ms
    later, every byte right either way (with ns-3's HyStart, the setting
    this was measured with, so that the timer alone differs)."""
    def first_timeouts(flag):
        path = tmp_path / f"rto-{flag}.trace"
        rec = simulate(tmp_path, "chain:4,4", "--algorithm", "linear", "--block", "32768", "--warmup", "1",
                       "--repetitions", "4", "--buffer", "16", "--check", "--linux-rto", flag, "--trace", str(path),
                       "--linux-hystart", "off")
        assert rec["bad_bytes"] == 0 and rec["linux_rto"] == (flag == "on"), rec
        start, after = None, []
        for line in path.read_text().splitlines():
            w = line.split()
            if w[1] == "call":
                start = float(w[0])
            elif w[1] == "timeout" and w[3] == "first":
                after.append(float(w[0]) - start)
        assert len(after) >= 10, (flag, after)
        return sorted(after)[len(after) // 2]
    on, off = first_timeouts("on"), first_timeouts("off")
    assert on >= off + 0.004, (on, off)
    assert off >= 0.2   # ns-3's floor: no timeout earlier than the minimum after a call's start


def test_timeouts_back_off_while_the_connection_acks_its_peers_data(tmp_path):
    """32 machines on one switch at 1 Mbit/s into 2-packet ports: connections
    carrying data both ways lose most segments.  With Linux's RTO (the
    default) a connection's timeouts without a round-trip sample come twice
    as far apart each time, though it keeps ACKing its peer's data, and the
    call ends with every byte right; ns-3's own timer is set again by every
    ACK the socket sends, times out every 0.4 s, and TCP gives up on a
    connection after 15 timeouts in a row: an error naming the machines."""
    args = ("--algorithm", "linear", "--block", "32768", "--warmup", "0", "--repetitions", "1", "--buffer", "2",
            "--check")
    path = tmp_path / "backoff.trace"
    proc = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, "star:32")), "--rate", "1e6", *args,
                           "--trace", str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rec = json.loads(proc.stdout)
    assert rec["bad_bytes"] == 0 and rec["tcp_repeat_timeouts"] > 100, rec
    times: dict[str, list[float]] = {}
    for line in path.read_text().splitlines():
        w = line.split()
        if w[1] == "timeout":
            times.setdefault(w[2], []).append(float(w[0]))
    gaps = [b - a for t in times.values() for a, b in zip(t, t[1:])]
    assert max(gaps) >= 3.2, max(gaps)   # 0.2 s doubled four times
    off = subprocess.run([SIM, "--topology", str(topo_file(tmp_path, "star:32")), "--rate", "1e6", *args,
                          "--linux-rto", "off"], capture_output=True, text=True, timeout=300)
    assert off.returncode == 2 and "error: TCP gave up on the connection of machines" in off.stderr, off.stderr[-2000:]
    assert "internal error" not in off.stderr


@pytest.mark.parametrize("spec,block", [("chain:2,2,2", 32768), ("chain:4,4", 16384)])
def test_linux_tlp_probes_in_the_timeouts_place(tmp_path, spec, block):
    """--linux-tlp (on by default): where the RTO would fire before the tail
    loss probe, Linux sends the probe at the RTO's time instead, and its
    SACK starts a fast recovery; without it the connection times out and
    starts again from one segment.  All at once into 16-packet ports, the
    probe takes the place of timeouts: fewer of them, every byte right."""
    def run(flag):
        rec = simulate(tmp_path, spec, "--algorithm", "linear", "--block", str(block), "--warmup", "1",
                       "--repetitions", "12", "--buffer", "16", "--check", "--linux-tlp", flag)
        assert rec["bad_bytes"] == 0 and rec["linux_tlp"] == (flag == "on"), rec
        return rec["tcp_timeouts"]
    on, off = run("on"), run("off")
    assert on < off, (on, off)


def test_linux_prr_sizes_the_recovery_window(tmp_path):
    """--linux-prr (on by default): a fast recovery's window as Linux's
    proportional rate reduction sizes it, after the ACK's losses are
    marked; off, ns-3's.  Both deliver every byte through 16-packet ports
    that drop, the JSON says which ran, and the choice changes the run (the
    recovery is really the one named)."""
    def run(flag):
        rec = simulate(tmp_path, "chain:4,4", "--algorithm", "pairwise", "--block", "32768", "--warmup", "1",
                       "--repetitions", "3", "--buffer", "16", "--check", "--linux-prr", flag)
        assert rec["bad_bytes"] == 0 and rec["linux_prr"] == (flag == "on"), rec
        assert rec["drops_switch"] > 0 and rec["tcp_recoveries"] > 0, rec
        return rec["tcp_recoveries"], rec["tcp_timeouts"], rec["times"]
    assert run("on") != run("off")


def _bench_packet(extra_env: dict, args: list[str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOPOCOLL_")} | extra_env
    return subprocess.run([sys.executable, "-m", "topocoll.cli", "bench", "chain:2,2", "--backend", "packet",
                           "--sizes", "1K", "--algorithms", "linear", "--repetitions", "1"] + args,
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("env, args, shown", [
    ({}, [], "TOPOCOLL_NAP=200us"),                                  # the back-end's default
    ({"TOPOCOLL_NAP": "0"}, [], "TOPOCOLL_NAP=0"),                   # the user's environment over it
    ({"TOPOCOLL_NAP": "0"}, ["--nap", "1ms"], "TOPOCOLL_NAP=1ms"),   # an option over the environment
    ({"TOPOCOLL_PACE": "off"}, [], "TOPOCOLL_PACE=off"),
    ({"TOPOCOLL_SYNC_DEPTH": "2"}, [], "TOPOCOLL_SYNC_DEPTH=2"),      # no bench option of its own read it
    ({"TOPOCOLL_SYNC_DEPTH": "2"}, ["--sync-depth", "3"], "TOPOCOLL_SYNC_DEPTH=3"),
    ({"TOPOCOLL_PIECE_SIZE": "32K"}, [], "TOPOCOLL_PIECE_SIZE=32K"),
])
def test_bench_takes_the_executors_variables_from_the_environment(env, args, shown):
    proc = _bench_packet(env, args)
    assert proc.returncode == 0, proc.stderr
    assert shown in proc.stderr, proc.stderr


@pytest.mark.parametrize("env, word", [
    ({"TOPOCOLL_NAP": "soon"}, "TOPOCOLL_NAP in the environment: time 'soon'"),
    ({"TOPOCOLL_PACE": "sometimes"}, "TOPOCOLL_PACE='sometimes' in the environment: valid: auto, off"),
    ({"TOPOCOLL_FANOUT": "four"}, "TOPOCOLL_FANOUT='four' in the environment: expected a whole number"),
    ({"TOPOCOLL_PLAN": "rank"}, "TOPOCOLL_PLAN has no meaning in the packet simulator"),
    ({"TOPOCOLL_SYNC_DEPTH": "0"}, "TOPOCOLL_SYNC_DEPTH in the environment: '0' is not a whole number in [1, "),
    ({"TOPOCOLL_PIECE_SIZE": "abc"}, "TOPOCOLL_PIECE_SIZE: size 'abc'"),
])
def test_bench_refuses_a_bad_variable_in_the_environment(env, word):
    proc = _bench_packet(env, [])
    assert proc.returncode == 2 and word in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("sig,code,said", [(signal.SIGTERM, 143, "topocoll: terminated"),
                                           (signal.SIGINT, 130, "topocoll: interrupted")])
def test_a_stopped_bench_leaves_no_simulation_or_files(tmp_path, sig, code, said):
    """SIGTERM (a batch system's limit) or Ctrl-C to bench alone, mid-run:
    it says so, its simulator stops with it and its files go."""
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "topocoll.cli", "bench", "chain:8,8", "--backend", "packet",
                             "--sizes", "1M", "--algorithms", "linear", "--repetitions", "3"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("topocoll-packet-*/topology.yaml")) or not simulators(tmp_path):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    time.sleep(1)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code and said in err and "Traceback" not in err, err[-2000:]
    time.sleep(0.5)
    assert not simulators(tmp_path) and not list(tmp_path.glob("topocoll-packet-*"))


def simulators(tmp_path) -> list[str]:
    """The simulator processes running on a topology under tmp_path."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if words and words[0].endswith(b"topocoll-packet") and any(str(tmp_path).encode() in w for w in words):
            found.append(cmdline.parent.name)
    return found
