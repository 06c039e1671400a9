"""scripts/timeline.py: a kernel trace read as the simulator's --trace
format, and two traces compared call by call."""
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))
import timeline  # noqa: E402


def tracefs_line(t: float, comm: str, event: str, rest: str) -> str:
    return f"  {comm}-1373    [000] ..s2. {t:.6f}: {event}: {rest}"


def state(t, conn, s):
    (sa, sp), (da, dp) = conn
    return tracefs_line(t, "alltoall_bench", "tcp_cong_state_set",
                        f"family=AF_INET sport={sp} dport={dp} saddr={sa} daddr={da} "
                        f"saddrv6=::ffff:{sa} daddrv6=::ffff:{da} cong_state={s}")


def send(t, left):
    return tracefs_line(t, "alltoall_bench", "tcp_sendmsg_locked",
                        f"skb_addr 0000000000000000 skb_len 0 msg_left {left} size_goal 31856")


def drop(t):
    return tracefs_line(t, "ksoftirqd/0", "kfree_skb",
                        "skbaddr=00000000a protocol=2048 location=dev_qdisc_enqueue+0x4a reason: QDISC_DROP")


def test_kernel_trace_reads_as_calls_timeouts_and_drops():
    a = (("10.123.0.6", 60815), ("10.123.0.13", 1024))
    b = (("10.123.0.4", 55783), ("10.123.0.15", 1024))
    text = "\n".join([
        "# tracer: nop",
        send(10.000, 32768), send(10.001, 32768),          # call 0 (untimed): one burst
        state(10.040, a, 3), state(10.253, a, 4),           # a recovers, then times out: first
        drop(10.020),
        send(10.400, 200),                                   # a barrier's small send: not a call
        send(11.000, 32768),                                 # call 1 (timed)
        state(11.681, a, 4),                                 # a still in loss: repeat
        state(11.682, a, 0), state(11.700, b, 4),            # a recovered; b's first
        tracefs_line(11.71, "x", "kfree_skb", "skbaddr=0 protocol=2048 location=0 reason: NO_SOCKET"),
        send(12.000, 16384),                                 # call 2 (timed): at least half a block
    ])
    lines = [l.split() for l in timeline.kernel_events(text, [32768, 32768])]
    calls = [w[2:] for w in lines if w[1] == "call"]
    assert calls == [["0", "0", "untimed"], ["1", "32768", "timed"], ["2", "32768", "timed"]]
    timeouts = [(w[0], w[2], w[3]) for w in lines if w[1] == "timeout"]
    assert timeouts == [("10.253000000", "10.123.0.6:60815->10.123.0.13:1024", "first"),
                        ("11.681000000", "10.123.0.6:60815->10.123.0.13:1024", "repeat"),
                        ("11.700000000", "10.123.0.4:55783->10.123.0.15:1024", "first")]
    assert [w[0] for w in lines if w[1] == "drop"] == ["10.020000000"]


def probe(t, conn, una, cwnd, ssthresh, data_len=0):
    (sa, sp), (da, dp) = conn
    return tracefs_line(t, "swapper/0", "tcp_probe",
                        f"family=AF_INET src={sa}:{sp} dest={da}:{dp} mark=0x0 data_len={data_len} "
                        f"snd_nxt={una + 2896:#x} snd_una={una:#x} snd_cwnd={cwnd} ssthresh={ssthresh} snd_wnd=65160 "
                        f"srtt=236 rcv_wnd=64512 sock_cookie=2 skbaddr=000000007359c496 skaddr=000000004b6a3e78")


def resend(t, conn):
    (sa, sp), (da, dp) = conn
    return tracefs_line(t, "alltoall_bench", "tcp_retransmit_skb",
                        f"skbaddr=000000007662f57c skaddr=000000009bedf39e family=AF_INET sport={sp} dport={dp} "
                        f"saddr={sa} daddr={da} saddrv6=::ffff:{sa} daddrv6=::ffff:{da} state=TCP_ESTABLISHED err=0")


def test_kernel_trace_with_tcp_events_reads_as_the_simulators_tcp_lines():
    """record --tcp's events: tcp_probe (an ACK without data reaching a
    sender) as an ack line (snd_una in decimal, the threshold "inf" before a
    loss sets one), tcp_retransmit_skb as resend, and every change of a
    connection's congestion state to another machine as a state line; the
    launcher's loopback connections and probes of segments with data are
    left out.  Without those events no tcp line is written."""
    a = (("10.123.0.6", 60815), ("10.123.0.13", 1024))
    lo = (("127.0.0.1", 5000), ("127.0.0.1", 6000))
    text = "\n".join([
        send(10.000, 32768),
        probe(10.001, a, 0x10, 10, 2147483647), probe(10.002, a, 0x5b0, 10, 2147483647, data_len=40),
        probe(10.003, lo, 0x10, 10, 7),
        state(10.004, a, 3), resend(10.0045, a), resend(10.005, lo),
        state(10.010, a, 4), probe(10.200, a, 0xb60, 1, 5), state(10.201, a, 0), state(10.201, lo, 4),
    ])
    tcp = [l.split()[1:] for l in timeline.kernel_events(text, [32768]) if l.split()[1] == "tcp"]
    c = "10.123.0.6:60815->10.123.0.13:1024"
    assert tcp == [["tcp", c, "ack", "16", "10", "inf"], ["tcp", c, "state", "recovery"], ["tcp", c, "resend"],
                   ["tcp", c, "state", "loss"], ["tcp", c, "ack", "2912", "1", "5"], ["tcp", c, "state", "open"]]
    plain = [l for l in timeline.kernel_events("\n".join([send(10.0, 32768), state(10.004, a, 3)]), [32768])]
    assert not any(" tcp " in l for l in plain)


def test_segments_read_as_resends_with_sequence_numbers_and_lost_segments():
    """record --segments' bpftrace lines: a queue's drop (namespace inode
    and device, addresses, ports, sequence number, IP length, headers'
    length) as the connection's lost line, at the namespace's name, with its
    bytes of data (an ACK's 0); a resend's tcp_skb_cb bytes (seq, end_seq,
    little-endian) as a resend line with them, standing for tracefs's resend
    lines; loopback connections and lines cut short are left out."""
    seq = 4000000000
    cb = "".join(f"\\x{b:02x}" for b in seq.to_bytes(4, "little") + ((seq + 2896) % (1 << 32)).to_bytes(4, "little"))
    text = "\n".join([
        "Attaching 2 probes...",
        "L 10002000000 4026533075 p4 10.123.0.6 60815 10.123.0.13 1024 12345 1500 52",
        "L 10003000000 4026533075 up0 10.123.0.13 1024 10.123.0.6 60815 777 52 52",
        "L 10003500000 4026530000 lo 127.0.0.1 5000 127.0.0.1 6000 1 1500 52",
        f"R 10004000000 10.123.0.6 60815 10.123.0.13 1024 {cb}",
        "R 10005000000 10.123.0.6 60815",
    ])
    events = timeline.segment_events(text, {"4026533075": "topocoll-s-s1"})
    c, back = "10.123.0.6:60815->10.123.0.13:1024", "10.123.0.13:1024->10.123.0.6:60815"
    assert events == [(10.002, f"tcp {c} lost topocoll-s-s1:p4 12345 1448"),
                      (10.003, f"tcp {back} lost topocoll-s-s1:up0 777 0"),
                      (10.004, f"tcp {c} resend {seq} 2896")]
    a = (("10.123.0.6", 60815), ("10.123.0.13", 1024))
    tracefs = "\n".join([send(10.000, 32768), state(10.0035, a, 3), resend(10.004, a)])
    tcp = [l.split()[1:] for l in timeline.kernel_events(tracefs, [32768], segments=events) if " tcp " in l]
    assert tcp == [["tcp", c, "lost", "topocoll-s-s1:p4", "12345", "1448"], ["tcp", back, "lost", "topocoll-s-s1:up0", "777", "0"],
                   ["tcp", c, "state", "recovery"], ["tcp", c, "resend", str(seq), "2896"]]   # tracefs's resend left out


def tcp_trace(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(l + "\n" for l in lines))
    return path


def test_tcp_compares_timeouts_resends_acks_and_windows(tmp_path):
    c, d = "10.0.0.1:49153->10.0.0.2:5000", "10.0.0.2:49153->10.0.0.1:5000"
    a = tcp_trace(tmp_path / "a.trace", [
        "0.0 call 0 65536 untimed", f"0.05 tcp {c} state loss",          # untimed: not counted
        "1.0 call 1 65536 timed",
        f"1.001 tcp {c} ack 1000 10 inf", f"1.002 tcp {c} ack 2448 10 inf",  # 1 segment
        f"1.003 tcp {c} ack 5344 10 inf",                                    # 2
        f"1.010 tcp {c} ack 9000 12 inf",                                    # 3 (2.5, rounded up)
        f"1.020 tcp {c} state recovery", f"1.020 tcp {c} resend",
        f"1.250 tcp {c} state loss", f"1.250 tcp {c} resend", f"1.256 tcp {c} state open",   # from recovery, 6 ms
        f"1.300 tcp {d} ack 77 4 2",
        "2.0 call 2 65536 timed",
        f"2.001 tcp {c} ack 100000 3 2",                                     # 5+ (a call's first ACK too)
        f"2.150 tcp {d} state loss", f"2.170 tcp {d} state open",           # from open, 20 ms
    ])
    b = tcp_trace(tmp_path / "b.trace", ["0.0 call 0 65536 timed", f"0.1 tcp {c} resend"])
    s = timeline.tcp_summary(*timeline.read_tcp(a), 0.1, 1448)
    assert s["calls"] == 2 and s["loss"] == 1.0 and s["loss_from"] == {"recovery": 0.5, "open": 0.5}
    assert s["loss_bins"] == {2: 0.5, 1: 0.5}
    assert [round(x, 3) for x in s["lasted"]] == [0.006, 0.02]
    assert s["resends"] == 1.0
    assert s["strides"] == {1: 1, 2: 1, 3: 1, 5: 1}
    assert sorted(s["first_cwnd"]) == [3, 4, 10] and sorted(s["first_ssthresh"]) == [2, 2]
    assert sorted(s["windows"]) == [3, 4, 10, 10, 10, 12] and sorted(s["peaks"]) == [3, 4, 12]   # a timed call's ACKs
    assert [round(g, 3) for g in s["gaps"]] == [0.001, 0.001, 0.007]   # within a call, a connection's own
    out = subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "tcp", str(a), str(b)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows = {l[:42].strip(): l[42:].split() for l in out.stdout.splitlines()[2:]}
    assert rows["timeouts (a connection entering loss)"] == ["1.0", "0.0"]
    assert rows["at 200-300 ms"] == ["0.5", "0.0"] and rows["resends"] == ["1", "1"]
    assert rows["acknowledging 5+ segments"] == ["25", "%", "0", "%"]
    assert rows["2 ms or more after the connection's last"] == ["33", "%", "0", "%"]
    assert rows["largest window in a call (quartiles)"][1] == "-" and rows["window at an ACK (10/50/90 %)"][1] == "-"
    assert rows["data segments lost"] == ["-", "-"] and rows["resent and lost again"] == ["-", "-"]   # no lost lines


def test_tcp_counts_segments_lost_and_resends_lost_again(tmp_path):
    """From lost and resend SEQ BYTES lines, a timed call's data segments
    lost (an ACK lost is not one) and the share of those resent whose resend
    was lost again (the same segment lost after a resend covering it)."""
    c = "10.0.0.1:49153->10.0.0.2:5000"
    a = tcp_trace(tmp_path / "a.trace", [
        "0.0 call 0 65536 untimed", f"0.01 tcp {c} lost s0->s1 1 1448",            # untimed: not counted
        "1.0 call 1 65536 timed",
        f"1.001 tcp {c} lost s0->s1 1449 1448", f"1.002 tcp {c} lost s0->s1 2897 1448",
        f"1.003 tcp {c} lost s1->s0 77 0",                                           # an ACK
        f"1.020 tcp {c} resend 1449 2896",                                           # covers both
        f"1.021 tcp {c} lost s0->s1 2897 1448",                                      # lost again
        f"1.050 tcp {c} resend 2897 1448",
    ])
    s = timeline.tcp_summary(*timeline.read_tcp(a), 0.1, 1448)
    assert s["lost"] == 3 and s["again"] == 1 and s["traced_losses"]
    out = subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "tcp", str(a), str(a)], capture_output=True, text=True)
    rows = {l[:42].strip(): l[42:].split() for l in out.stdout.splitlines()[2:]}
    assert rows["data segments lost"] == ["3", "3"] and rows["resent and lost again"] == ["33.3", "%", "33.3", "%"]
    assert rows["resends"] == ["2", "2"]


def test_tcp_counts_resends_whose_last_copy_was_not_lost(tmp_path):
    """A resend of a segment whose copy sent before was neither lost (no
    lost line covering it since) nor given up by a timeout (the loss state)
    is one an in-order path did not call for; in timed calls only."""
    c = "10.0.0.1:49153->10.0.0.2:5000"
    a = tcp_trace(tmp_path / "a.trace", [
        "0.0 call 0 65536 untimed", f"0.01 tcp {c} resend 1 1448", f"0.02 tcp {c} resend 1 1448",   # untimed
        "1.0 call 1 65536 timed",
        f"1.01 tcp {c} resend 1449 2896", f"1.02 tcp {c} lost s0->s1 2897 1448",
        f"1.03 tcp {c} resend 1449 1448",                           # its last copy was lost: needed
        f"1.04 tcp {c} resend 1449 1448",                           # the one before still on its way
        f"1.05 tcp {c} resend 5793 1448", f"1.06 tcp {c} state loss",
        f"1.07 tcp {c} resend 5793 1448",                           # after a timeout: needed
    ])
    s = timeline.tcp_summary(*timeline.read_tcp(a), 0.1, 1448)
    assert s["needless"] == 1
    out = subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "tcp", str(a), str(a)], capture_output=True, text=True)
    rows = {l[:42].strip(): l[42:].split() for l in out.stdout.splitlines()[2:]}
    assert rows["resent again, the last copy not lost"] == ["1.0", "1.0"]


def test_tcp_refuses_what_it_cannot_read(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "tcp", *map(str, args)],
                              capture_output=True, text=True)
    plain = tcp_trace(tmp_path / "p.trace", ["0.0 call 0 1000 timed", "0.1 timeout x first"])
    proc = run(plain, plain)
    assert proc.returncode == 1 and "p.trace: no tcp lines" in proc.stderr and "Traceback" not in proc.stderr
    bad = tcp_trace(tmp_path / "b.trace", ["0.0 call 0 1000 timed", "0.1 tcp x ack 1 2"])
    proc = run(bad, plain)
    assert proc.returncode == 1 and "b.trace:2: not a tcp line" in proc.stderr
    bad.write_text("0.0 call 0 1000 timed\n0.1 tcp x state sleeping\n")
    assert "b.trace:2: not a tcp line" in run(bad, plain).stderr
    proc = run(plain, plain, "--mss", "0")
    assert proc.returncode == 2 and "--bin and --mss must be positive" in proc.stderr


def test_compare_counts_each_timed_call(tmp_path):
    a = tmp_path / "a.trace"
    a.write_text("0.0 call 0 1000 untimed\n0.1 timeout x first\n"
                 "1.0 call 1 1000 timed\n1.005 drop s0->s1\n1.010 drop s0->s1\n1.25 timeout x first\n"
                 "1.70 timeout x repeat\n2.0 call 2 1000 timed\n2.001 drop host\n")
    b = tmp_path / "b.trace"
    b.write_text("0.0 call 0 1000 timed\n0.21 timeout y first\n")
    out = subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "compare", str(a), str(b), "--bin", "100"],
                         capture_output=True, text=True, check=True).stdout
    rows = {l.split()[0]: l.split()[1:] for l in out.splitlines()[2:]}
    # A: two timed calls (the untimed call's timeout left out), B: one
    assert rows["0"][:2] == ["1.5", "0.0"]                 # 3 drops in A's first bins over 2 calls
    assert rows["200"][2:4] == ["0.5", "1.0"]              # A's timeout at 250 ms, B's at 210 ms
    assert rows["700"][4:6] == ["0.50", "0.00"]            # A's repeat
    assert rows["total"] == ["1.5", "0.0", "1.0", "1.0", "0.50", "0.00"]


def test_a_trace_without_timed_calls_is_refused(tmp_path):
    a = tmp_path / "a.trace"
    a.write_text("0.0 call 0 1000 untimed\n")
    proc = subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "compare", str(a), str(a)],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "no timed call" in proc.stderr
    a.write_text("zero call 0 1000 timed\n")
    proc = subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "compare", str(a), str(a)],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "a.trace:1: not a time" in proc.stderr


def test_queue_drops_are_read_from_each_devices_root_qdisc():
    """tc -s qdisc: a classful root (htb) counts its classes' drops, so only
    the root's count is taken; every device named, none counted twice."""
    text = "\n".join([
        "qdisc noqueue 0: dev lo root refcnt 2 ",
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) ",
        "qdisc tbf a14b: dev p0 root refcnt 3 rate 100Mbit burst 12500b lat 11.1ms ",
        " Sent 23175268 bytes 22094 pkt (dropped 96, overlimits 15440 requeues 0) ",
        " backlog 0b 0p requeues 0",
        "qdisc htb 1: dev eth0 root refcnt 3 r2q 10 default 0x10f direct_packets_stat 0 direct_qlen 1000",
        " Sent 24098053 bytes 22065 pkt (dropped 3, overlimits 4210 requeues 0) ",
        "qdisc pfifo a14d: dev eth0 parent 1:101 limit 1000p",
        " Sent 1539027 bytes 1357 pkt (dropped 2, overlimits 0 requeues 0) ",
        "qdisc pfifo a14e: dev eth0 parent 1:102 limit 1000p",
        " Sent 1539027 bytes 1357 pkt (dropped 1, overlimits 0 requeues 0) ",
    ])
    assert timeline.qdisc_drops(text) == {"lo": 0, "p0": 96, "eth0": 3}
    assert timeline.counted({"a": 5, "b": 1}, {"a": 9, "b": 1, "c": 2}) == {"a": 4, "c": 2}


def test_counters_refuses_without_a_command():
    proc = subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "counters", "/tmp/x.json"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "needs a command" in proc.stderr, proc.stderr


# Two calls of 4 ranks, three sends each (to r+1, r+2, r+3 mod 4): rank 0
# sends take 50 ms, rank 1's 200 ms one after another, ranks 2 and 3's 10 ms.
def executor_events(call_start: float) -> dict[int, list[tuple[float, float, int]]]:
    sends = {}
    for r in range(4):
        gap, took = {0: (0.1, 0.05), 1: (0.3, 0.2)}.get(r, (0.1, 0.01))
        sends[r] = [(call_start + k * gap, call_start + k * gap + took, (r + 1 + k) % 4) for k in range(3)]
    return sends


def write_pmpi_trace(prefix: Path, calls: dict[int, float], with_peer: bool = True) -> None:
    for r in range(4):
        lines = []
        for call, t in calls.items():
            for op, (start, done, peer) in enumerate(executor_events(t)[r]):
                tail = f" {peer}" if with_peer else ""
                lines += [f"{call} {op} start {start:.9f}{tail}", f"{call} {op} done {done:.9f}{tail}"]
        Path(f"{prefix}.{r}").write_text("\n".join(lines) + "\n")


def write_simulator_trace(path: Path, calls: dict[int, float]) -> None:
    lines = []
    for call, t in calls.items():
        lines.append((t - 0.001, f"call {call} 1000 timed"))
        for r, sends in executor_events(t).items():
            for op, (start, done, peer) in enumerate(sends):
                lines += [(start, f"exec {r} {call} {op} start {peer}"), (done, f"exec {r} {call} {op} done {peer}")]
    lines.append((t + 0.5, "drop s0->s1"))
    path.write_text("".join(f"{t:.9f} {what}\n" for t, what in sorted(lines)))


def sends_output(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "sends", *args], capture_output=True, text=True)


@pytest.mark.parametrize("form", ["pmpi", "simulator"])
def test_sends_reads_durations_ranks_done_and_running_ahead(tmp_path, form):
    """The last call only (--calls 1): rank 0's sends are done at 250 ms, ranks
    2 and 3's at 210 ms, rank 1's at 800 ms; when rank 1 (the slowest) starts
    its middle send, at 300 ms, rank 0 had started all three: one ahead.  With
    the topology, sends by links crossed."""
    calls = {4: 50.0, 5: 100.0}
    source = tmp_path / "t"
    if form == "pmpi":
        write_pmpi_trace(source, calls)
    else:
        write_simulator_trace(source, calls)
    summary = timeline.send_summary(timeline.read_sends(str(source)), 1, None)
    assert [(c, round(f, 6), round(m, 6), round(l, 6), a) for c, f, m, l, a in summary["rows"]] == \
        [(5, 0.21, 0.25, 0.8, 1)]
    assert sorted(round(d, 6) for d in summary["durations"]["all"]) == [0.01] * 6 + [0.05] * 3 + [0.2] * 3
    proc = sends_output(str(source), "--calls", "2", "--topology", "chain:2,2")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == f"{source}: 2 calls"
    # same switch (2 links): 0->1, 1->0, 2->3, 3->2 a call (10, 10, 50, 200 ms); the rest cross (3 links):
    # two sends of each rank a call (10 ms x 4, 50 x 2, 200 x 2)
    assert out[1] == "  a send (2 links): median 50.0 ms, 90 % 200.0 ms, 8 sends", out
    assert out[2] == "  a send (3 links): median 50.0 ms, 90 % 200.0 ms, 16 sends", out
    assert [l.split() for l in out[4:6]] == [["4", "210ms", "250ms", "800ms", "1"], ["5", "210ms", "250ms", "800ms", "1"]]
    # each send k: rank 1's (the slowest, 200 ms each, 300 ms apart) is the last done, at 200, 500, 800 ms
    assert summary["steps"] == pytest.approx([0.2, 0.5, 0.8])
    assert out[6].endswith("median of the calls: 200 500 800"), out


def test_sends_reads_a_trace_without_peers(tmp_path):
    """TOPOCOLL_TRACE lines before the peer was added: all sends together, even with a topology"""
    write_pmpi_trace(tmp_path / "t", {7: 3.0}, with_peer=False)
    proc = sends_output(str(tmp_path / "t"), "--topology", "chain:2,2")
    assert proc.returncode == 0, proc.stderr
    assert "a send (all): median 50.0 ms, 90 % 200.0 ms, 12 sends" in proc.stdout


def test_sends_refuses_what_it_cannot_read(tmp_path):
    proc = sends_output(str(tmp_path / "none"))
    assert proc.returncode != 0 and "neither a simulator trace nor a TOPOCOLL_TRACE prefix" in proc.stderr
    write_pmpi_trace(tmp_path / "t", {1: 1.0})
    Path(f"{tmp_path}/t.2").write_text("1 0 start 1.0 3\n1 0 sent 1.1 3\n")
    proc = sends_output(str(tmp_path / "t"))
    assert proc.returncode != 0 and "t.2:2: unknown event 'sent'" in proc.stderr, proc.stderr
    Path(f"{tmp_path}/t.2").write_text("1 0 start\n")
    proc = sends_output(str(tmp_path / "t"))
    assert proc.returncode != 0 and "t.2:1: not an executor event" in proc.stderr, proc.stderr
    write_pmpi_trace(tmp_path / "u", {1: 1.0})
    proc = sends_output(str(tmp_path / "u"), "--topology", "chain:1,2")
    assert proc.returncode != 0 and "rank 3 has no machine in chain:1,2 (3 machines)" in proc.stderr, proc.stderr
    proc = sends_output(str(tmp_path / "u"), "--topology", "chain:x")
    assert proc.returncode == 1 and proc.stderr.startswith("timeline: --topology chain:x: ") \
        and "Traceback" not in proc.stderr, proc.stderr
    sim = tmp_path / "sim.trace"
    sim.write_text("0.1 call 0 1000 timed\n0.2 drop s0->s1\n")
    proc = sends_output(str(sim))
    assert proc.returncode != 0 and "no executor events" in proc.stderr
    proc = sends_output(str(sim), "--calls", "0")
    assert proc.returncode == 2 and "--calls must be at least 1" in proc.stderr


def test_convert_takes_the_calls_from_the_pmpi_trace(tmp_path):
    """With --calls-from, a call starts at its first send in TOPOCOLL_TRACE
    (the same monotonic clock as tracefs), where the sends in the kernel
    trace alone would be misread (here: none of them large)."""
    write_pmpi_trace(tmp_path / "t", {0: 10.0, 1: 11.0, 2: 12.0})
    raw = tmp_path / "k.tracefs"
    raw.write_text("\n".join(["# tracer: nop", send(10.0005, 100), drop(11.5)]) + "\n")
    csv_path = tmp_path / "k.csv"
    csv_path.write_text("msize_bytes,seconds\n32768,0.5\n32768,0.5\n")
    out = tmp_path / "k.trace"
    proc = subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "convert", str(raw), str(csv_path), str(out),
                           "--untimed", "1", "--calls-from", str(tmp_path / "t")], capture_output=True, text=True)
    assert proc.returncode == 0 and "3 calls (the program made 3)" in proc.stdout and not proc.stderr, proc.stderr
    assert [l.split() for l in out.read_text().splitlines()] == [
        ["10.000000000", "call", "0", "0", "untimed"], ["11.000000000", "call", "1", "32768", "timed"],
        ["11.500000000", "drop", "qdisc"], ["12.000000000", "call", "2", "32768", "timed"]]


def test_convert_warns_of_a_buffer_that_overflowed(tmp_path):
    """tracefs keeps the newest events when its buffer fills (the header
    counts those kept against those written): convert says so."""
    raw = tmp_path / "k.tracefs"
    header = "# tracer: nop\n#\n# entries-in-buffer/entries-written: {}/{}   #P:2\n"
    csv_path = tmp_path / "k.csv"
    csv_path.write_text("msize_bytes,seconds\n32768,0.5\n")
    for kept, written, warned in ((3, 3, False), (3, 90, True)):
        raw.write_text(header.format(kept, written) + "\n".join([send(10.0, 32768), send(11.0, 32768), drop(11.5)]) + "\n")
        proc = subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "convert", str(raw), str(csv_path),
                               str(tmp_path / "k.trace"), "--untimed", "1"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert ("the trace buffer overflowed, 3 of 90 events kept" in proc.stderr) == warned, proc.stderr


def fake_tracefs(root: Path, buffer_size: str) -> Path:
    """tracefs's files as record reads and writes them, before tracing has
    been used since boot (the buffer shown as "7 (expanded: 1408)")."""
    for e in timeline.EVENTS + timeline.TCP_EVENTS:
        (root / "events" / e).mkdir(parents=True)
        (root / "events" / e / "enable").write_text("0\n")
    (root / "events" / "tcp" / "tcp_probe" / "filter").write_text("none\n")
    (root / "trace").write_text("")
    (root / "tracing_on").write_text("1\n")
    (root / "trace_clock").write_text("[local] global counter uptime perf mono\n")
    (root / "buffer_size_kb").write_text(buffer_size)
    return root


def test_record_puts_back_a_buffer_not_yet_expanded(tmp_path, monkeypatch):
    fs = fake_tracefs(tmp_path / "tracefs", "7 (expanded: 1408)\n")
    monkeypatch.setattr(timeline, "TRACEFS", fs)
    with pytest.raises(SystemExit, match="t.csv: no such file"):   # the command wrote none
        timeline.record(tmp_path / "out.txt", [sys.executable, "-c", "pass", "--csv", str(tmp_path / "t.csv")], 2)
    assert (fs / "buffer_size_kb").read_text() == "1408"   # the size it takes once used
    assert (fs / "trace_clock").read_text() == "local" and (fs / "tracing_on").read_text() == "1"
    assert all((fs / "events" / e / "enable").read_text() == "0" for e in timeline.EVENTS)


def test_record_with_tcp_filters_the_probes_and_puts_everything_back(tmp_path, monkeypatch):
    """record --tcp turns tcp_probe (kept to ACKs without data) and
    tcp_retransmit_skb on while the command runs, and afterwards every event
    off again and the probe's filter cleared, as they were."""
    fs = fake_tracefs(tmp_path / "tracefs", "1410\n")
    monkeypatch.setattr(timeline, "TRACEFS", fs)
    seen = tmp_path / "seen"
    probe_dir = fs / "events" / "tcp" / "tcp_probe"
    look = (f"import pathlib; d = pathlib.Path({str(probe_dir)!r}); "
            f"pathlib.Path({str(seen)!r}).write_text((d / 'enable').read_text() + ' ' + (d / 'filter').read_text())")
    with pytest.raises(SystemExit, match="t.csv: no such file"):
        timeline.record(tmp_path / "out.txt", [sys.executable, "-c", look, "--csv", str(tmp_path / "t.csv")], 2,
                        tcp=True)
    assert seen.read_text() == "1 " + timeline.PROBE_FILTER
    assert (probe_dir / "filter").read_text() == "0"   # tracefs's word for no filter
    assert all((fs / "events" / e / "enable").read_text() == "0" for e in timeline.EVENTS + timeline.TCP_EVENTS)


@pytest.mark.parametrize("argv, want", [
    (["/tmp/o", "--tcp", "--", "b", "--csv", "f"], (["b", "--csv", "f"], 2, True, False)),   # after OUT, before --
    (["--tcp", "/tmp/o", "--", "b"], (["b"], 2, True, False)),
    (["/tmp/o", "--untimed", "1", "--tcp", "--", "b"], (["b"], 1, True, False)),
    (["/tmp/o", "--tcp", "--segments", "--", "b"], (["b"], 2, True, True)),
    (["/tmp/o", "--", "b", "--tcp"], (["b", "--tcp"], 2, False, False)),                   # the command's own
])
def test_record_reads_its_options_before_the_command(argv, want, monkeypatch):
    seen = {}
    monkeypatch.setattr(timeline, "record", lambda out, cmd, untimed, tcp=False, segments=False:
                        seen.update(r=(cmd, untimed, tcp, segments)))
    monkeypatch.setattr(timeline.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sys, "argv", ["timeline.py", "record", *argv])
    timeline.main()
    assert seen["r"] == want


def test_record_names_what_it_does_not_know(capsys, monkeypatch):
    monkeypatch.setattr(timeline.os, "geteuid", lambda: 0)
    for argv, word in ((["record", "/tmp/o", "--bogus", "--", "b"], "record: unknown arguments before --: --bogus"),
                       (["record", "/tmp/o", "--segments", "--", "b"], "record: --segments adds to --tcp: give both"),
                       (["counters", "/tmp/o", "--tcp", "--", "b"], "counters: unknown arguments before --: --tcp")):
        monkeypatch.setattr(sys, "argv", ["timeline.py", *argv])
        with pytest.raises(SystemExit) as e:
            timeline.main()
        assert e.value.code == 2 and word in capsys.readouterr().err


def test_record_segments_needs_bpftrace(tmp_path, monkeypatch):
    """Without bpftrace, record --segments says so before touching tracefs."""
    fs = fake_tracefs(tmp_path / "tracefs", "1410\n")
    monkeypatch.setattr(timeline, "TRACEFS", fs)
    monkeypatch.setattr(timeline.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match=r"--segments needs bpftrace \(apt install bpftrace\)"):
        timeline.record(tmp_path / "out.txt", [sys.executable, "-c", "pass", "--csv", str(tmp_path / "t.csv")], 2,
                        tcp=True, segments=True)
    assert (fs / "tracing_on").read_text() == "1\n" and (fs / "trace_clock").read_text().startswith("[local]")   # untouched


def test_record_names_a_setting_it_cannot_write(tmp_path, monkeypatch):
    """A write tracefs refuses (EINVAL) ends with the file and the value named, not a traceback."""
    import errno
    fs = fake_tracefs(tmp_path / "tracefs", "1410\n")
    monkeypatch.setattr(timeline, "TRACEFS", fs)
    write = Path.write_text

    def refusing(self, data, *a, **kw):
        if self.name == "trace_clock":
            raise OSError(errno.EINVAL, "Invalid argument")
        return write(self, data, *a, **kw)
    monkeypatch.setattr(Path, "write_text", refusing)
    with pytest.raises(SystemExit, match=r"timeline: writing 'mono' to .*trace_clock: Invalid argument"):
        timeline.record(tmp_path / "out.txt", [sys.executable, "-c", "pass", "--csv", str(tmp_path / "t.csv")], 2)


def test_tcp_counts_recoveries_a_timer_began(tmp_path):
    """A recovery begun with no ACK within 50 us before it (RACK's
    reordering timer: the kernel traces a state change a few us after its
    ACK) is counted in timed calls, with the kernel's 4 ms ticks from the
    connection's last ACK to it, the trace's stamps taken in whole ns."""
    c = "10.0.0.1:49153->10.0.0.2:5000"
    a = tcp_trace(tmp_path / "a.trace", [
        "0.0 call 0 65536 untimed", f"0.001 tcp {c} ack 1 10 inf", f"0.010 tcp {c} state recovery",   # untimed
        f"0.020 tcp {c} state open",
        "1.0 call 1 65536 timed",
        f"1.001 tcp {c} ack 1449 10 inf", f"1.001030 tcp {c} state recovery",   # its ACK's, 30 us after
        f"1.002 tcp {c} state open",
        f"1.0025 tcp {c} ack 2897 10 inf", f"1.008 tcp {c} state recovery",     # ticks 250 -> 252
        f"1.009 tcp {c} state open",
        f"1.0095 tcp {c} ack 4345 10 inf", f"1.012 tcp {c} state recovery",     # 252 -> 253: on the tick, in ns
    ])
    s = timeline.tcp_summary(*timeline.read_tcp(a), 0.1, 1448)
    assert s["timer_ticks"] == [2, 1], s["timer_ticks"]
    out = subprocess.run([sys.executable, str(SCRIPTS / "timeline.py"), "tcp", str(a), str(a)], capture_output=True, text=True)
    rows = {l[:42].strip(): l[42:].split() for l in out.stdout.splitlines()[2:]}
    assert rows["recoveries begun by a timer"] == ["2.0", "2.0"]
    assert rows["4 ms ticks after the last ACK"] == ["2", "(50", "%", "2+)", "2", "(50", "%", "2+)"]
