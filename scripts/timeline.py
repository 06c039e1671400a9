#!/usr/bin/env python3
"""Where a call's time goes: timeouts and drops over a call, the emulated
cluster's kernel beside the packet simulator.

  timeline.py record OUT [--tcp [--segments]] -- topocoll bench T --backend testbed ... --csv FILE
        run the command (as root, on the testbed) with the kernel's TCP and
        drop tracepoints on (tracefs: tcp_cong_state_set, tcp_sendmsg_locked,
        skb:kfree_skb) and write OUT in the simulator's --trace format; with
        --tcp also each connection's ACKs, resends and state changes
        (tcp_probe for ACKs without data, tcp_retransmit_skb), as the
        simulator's --trace-tcp writes them; with --segments as well (needs
        bpftrace) each resend's sequence numbers and each segment a queue
        dropped (its connection, where, its sequence number), as the
        simulator's resend and lost lines
  timeline.py convert RAW CSV OUT [--untimed N] [--calls-from PREFIX]
        a tracefs dump (record keeps it as OUT.tracefs) read again
  timeline.py tcp A B [--bin MS] [--mss BYTES]
        per timed call, side by side, from traces with tcp lines: timeouts
        (a connection entering loss) by the state it left and by bins of MS
        milliseconds [100], how long loss lasted, resends, how many segments
        each ACK reaching a sender acknowledged, each connection's window
        and slow-start threshold at its first ACK in a call and its largest
        window in a call, the window at every ACK, and the ACKs that came
        2 ms or more after the connection's last (HyStart's ACK train ends
        there); from traces with lost lines (the simulator's, record
        --segments) the data segments queues dropped, how many of their
        resends were dropped again, and the resends of a segment whose last
        copy was neither dropped nor given up by a timeout
  timeline.py compare A B [--bin MS]
        per timed call, side by side: drops, timeouts and repeated timeouts
        (a connection's backed-off RTO) in bins of MS milliseconds from the
        call's start, and the totals a call
  timeline.py sends A [B] [--calls N] [--topology T]
        the executor's sends, per call and side by side: how long a send
        took (start to its step's sends done; by links crossed with
        --topology, rank r on machine r), when the first, the median and
        the last rank had all their sends done, how far ranks ran ahead
        (when the slowest rank starts its middle send, the most sends another
        had started, less its), and when the last rank had done its k-th
        send (step k), median of the calls; A and B each a TOPOCOLL_TRACE prefix (files
        PREFIX.RANK, the testbed's) or a simulator --trace file; the last N
        calls in each [9]
  timeline.py counters OUT -- topocoll bench T --backend testbed ...
        run the command and write OUT (JSON): what it changed in every
        testbed queue's drop count (tc -s qdisc, per switch port and
        machine) and in the machines' TCP counters summed (nstat), and
        print them under the simulator's JSON names (the kernel's
        TCPTimeouts counts every RTO, a repeat too, so it stands against
        the simulator's tcp_timeouts + tcp_repeat_timeouts)

The simulator writes its trace itself: topocoll-packet --trace FILE
(core/packet/event_trace.h has the format).  On the kernel's side:
- a timeout is a connection entering TCP_CA_Loss (tcp_enter_loss, on every
  RTO); "repeat" if it was in TCP_CA_Loss already;
- a drop is a packet freed with reason QDISC_DROP (any machine's or
  switch's queue);
- a call starts where its first send starts in the PMPI library's trace
  (--calls-from PREFIX, the command's TOPOCOLL_TRACE; record takes it from
  the environment; both clocks are CLOCK_MONOTONIC); without one, where,
  after 20 ms in which no rank sent a message of the
  call's size (at least half a block, or 4 KiB), three in four of the
  benchmark program's ranks send one within 50 ms: every rank sends at a
  call's start, and only some resume after a stall inside a call.  The
  last calls, as many as the CSV has rows, are the timed ones; record says
  how many calls it found against the benchmark program's (--untimed
  untimed ones a size, 2: the warm-up and the checked call), and a timed
  call shorter than the CSV's time for it, as signs of a misreading.  It
  reads linear at 32 KB on 2 x 8 / 32 (11 of 11 calls); at 128 KB on
  3 x 4 / 32 it found 9 of 11 (a call's last sends run into the next's
  start) and says so.
"""
import argparse
import bisect
import collections
import csv
import json
import os
import re
import shutil
import signal
import statistics as st
import subprocess
import sys
import time
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")
EVENTS = ("tcp/tcp_cong_state_set", "tcp/tcp_sendmsg_locked", "skb/kfree_skb")
TCP_EVENTS = ("tcp/tcp_probe", "tcp/tcp_retransmit_skb")   # record --tcp
PROBE_FILTER = "data_len == 0"   # tcp_probe fires for every segment a socket takes in: keep the pure ACKs
STATES = ("open", "disorder", "cwr", "recovery", "loss")   # TCP_CA_Open ... TCP_CA_Loss, ns-3's alike
ACK_AT_ONCE_S = 50e-6   # a state change this soon after an ACK is that ACK's (the kernel traces them apart)
TICK_NS = 4_000_000   # a jiffy of the testbed's kernel (HZ 250), on which its TCP timers run; in whole ns, as traces stamp
UNBOUNDED = 1 << 30   # a slow-start threshold this large (segments or bytes) is none yet: "inf"
TCP_CA_LOSS = 4
QUIET = 0.02             # seconds without a big send before a call's first
WINDOW = 0.05            # seconds in which three in four ranks send at a call's start
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): (\w+): (.*)$")


def starts_of_sends(sends: list[tuple[float, str]]) -> list[float]:
    """Calls' starts found from the large sends (time, process), in time order"""
    ranks = len({pid for _, pid in sends})
    starts = []
    for i, (t, _) in enumerate(sends):
        if i and t - sends[i - 1][0] < QUIET:
            continue
        senders, k = set(), i
        while k < len(sends) and sends[k][0] < t + WINDOW:
            senders.add(sends[k][1])
            k += 1
        if 4 * len(senders) >= 3 * ranks:
            starts.append(t)
    return starts


def is_peer(addr: str) -> bool:
    """A connection's far end is another machine (not the launcher's loopback, not a listener)"""
    return bool(addr) and not addr.startswith("127.") and addr != "0.0.0.0"


# record --segments: bpftrace beside tracefs (its nsecs is CLOCK_MONOTONIC, as
# tracefs's mono clock): each segment a queue drops with reason QDISC_DROP (its
# network namespace's inode and device, addresses, ports, sequence number, IP
# length, headers' length), each resend with its sequence numbers (tcp_skb_cb's
# seq and end_seq: the first 8 bytes of the skb's cb, in hex)
SEGMENTS_SCRIPT = r"""
tracepoint:skb:kfree_skb / args->reason == QDISC_DROP_REASON / {
  $skb = (struct sk_buff *)args->skbaddr;
  $ip = (struct iphdr *)($skb->head + $skb->network_header);
  if ($ip->protocol == 6) {
    $tcp = (struct tcphdr *)($skb->head + $skb->network_header + $ip->ihl * 4);
    printf("L %llu %u %s %s %u %s %u %u %u %u\n", nsecs, $skb->dev->nd_net.net->ns.inum, $skb->dev->name,
           ntop($ip->saddr), bswap($tcp->source), ntop($ip->daddr), bswap($tcp->dest), bswap($tcp->seq),
           bswap($ip->tot_len), $ip->ihl * 4 + $tcp->doff * 4);
  }
}
tracepoint:tcp:tcp_retransmit_skb {
  printf("R %llu %s %u %s %u %rx\n", nsecs, ntop(args->saddr), args->sport, ntop(args->daddr), args->dport,
         buf(((struct sk_buff *)args->skbaddr)->cb, 8));
}
"""


def segment_events(text: str, spaces: dict[str, str]) -> list[tuple[float, str]]:
    """record --segments' bpftrace lines as trace events: resends with
    their sequence numbers, lost segments at NAMESPACE:DEVICE (spaces:
    namespace inode -> name)"""
    out = []
    for line in text.splitlines():
        p = line.split()
        try:
            if p[:1] == ["L"] and len(p) == 11 and is_peer(p[6]):
                where = f"{spaces.get(p[2], p[2])}:{p[3]}"
                out.append((int(p[1]) / 1e9, f"tcp {p[4]}:{p[5]}->{p[6]}:{p[7]} lost {where} {p[8]} {int(p[9]) - int(p[10])}"))
            elif p[:1] == ["R"] and len(p) == 7 and is_peer(p[4]):
                b = bytes.fromhex(p[6].replace("\\x", ""))
                seq, end = int.from_bytes(b[:4], "little"), int.from_bytes(b[4:], "little")
                out.append((int(p[1]) / 1e9, f"tcp {p[2]}:{p[3]}->{p[4]}:{p[5]} resend {seq} {(end - seq) % (1 << 32)}"))
        except ValueError:   # a line bpftrace cut short
            continue
    return out


def kernel_events(text: str, blocks: list[int], starts: list[float] | None = None,
                  segments: list[tuple[float, str]] | None = None) -> list[str]:
    """A tracefs dump (mono clock) as trace lines; blocks: the CSV's rows'
    block sizes, in order; starts: the calls' starts, if known (else found
    from the sends); segments: record --segments' events, whose resends
    (with sequence numbers) stand for tracefs's"""
    big = min(4096, min(blocks) // 2) if blocks else 4096
    sends, out, state = [], [], {}
    tcp = "tcp_probe:" in text or "tcp_retransmit_skb:" in text   # recorded with --tcp
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        comm, pid, t, name, rest = m.groups()
        t = float(t)
        if name == "tcp_sendmsg_locked":
            left = re.search(r"msg_left (\d+)", rest)
            if comm.startswith("alltoall") and left and int(left.group(1)) >= big:
                sends.append((t, pid))
            continue
        if name == "kfree_skb":
            if "QDISC_DROP" in rest:
                out.append((t, "drop qdisc"))
            continue
        f = dict(re.findall(r"(\w+)=(\S+)", rest))
        conn = f"{f.get('saddr')}:{f.get('sport')}->{f.get('daddr')}:{f.get('dport')}"   # tcp_probe: src, dest
        if name == "tcp_cong_state_set":
            new = int(f.get("cong_state", -1))
            if new == TCP_CA_LOSS:
                out.append((t, f"timeout {conn} {'repeat' if state.get(conn) == TCP_CA_LOSS else 'first'}"))
            if tcp and 0 <= new < len(STATES) and new != state.get(conn, 0) and is_peer(f.get("daddr", "")):
                out.append((t, f"tcp {conn} state {STATES[new]}"))
            state[conn] = new
        elif name == "tcp_probe" and tcp:
            if f.get("data_len") == "0" and is_peer(f.get("dest", "").rsplit(":", 1)[0]):
                ssthresh = int(f["ssthresh"])
                out.append((t, f"tcp {f['src']}->{f['dest']} ack {int(f['snd_una'], 16)} {f['snd_cwnd']} "
                               f"{'inf' if ssthresh >= UNBOUNDED else ssthresh}"))
        elif name == "tcp_retransmit_skb" and tcp and not segments and is_peer(f.get("daddr", "")):
            out.append((t, f"tcp {conn} resend"))
    out += segments or []
    if starts is None:
        starts = starts_of_sends(sorted(sends))
    timed = len(blocks)
    for k, t in enumerate(starts):
        j = k - (len(starts) - timed)
        out.append((t, f"call {k} {blocks[j] if j >= 0 else 0} {'timed' if j >= 0 else 'untimed'}"))
    return [f"{t:.9f} {what}" for t, what in sorted(out)]


def namespaces() -> dict[str, str]:
    """The named network namespaces (ip netns): inode -> name"""
    names = {}
    for name in os.listdir("/run/netns") if os.path.isdir("/run/netns") else []:
        try:
            names[str(os.stat(f"/run/netns/{name}").st_ino)] = name
        except OSError:
            continue
    return names


def start_segments(out: Path) -> subprocess.Popen:
    """bpftrace running SEGMENTS_SCRIPT into OUT.segments, its probes attached"""
    reason = re.search(r'\{ (\d+), "QDISC_DROP" \}', (TRACEFS / "events/skb/kfree_skb/format").read_text())
    if not reason:
        sys.exit("timeline: this kernel's kfree_skb names no QDISC_DROP reason: --segments cannot tell a queue's drops")
    path, log = out.with_name(out.name + ".segments"), out.with_name(out.name + ".bpftrace-log")
    with open(path, "w") as stdout, open(log, "w") as stderr:   # the child keeps its own descriptors
        proc = subprocess.Popen(["bpftrace", "-e", SEGMENTS_SCRIPT.replace("QDISC_DROP_REASON", reason.group(1))],
                                stdout=stdout, stderr=stderr)
    for _ in range(600):   # compiling and attaching takes a few seconds
        if "Attaching" in path.read_text() or proc.poll() is not None:
            break
        time.sleep(0.1)
    if proc.poll() is not None or "Attaching" not in path.read_text():
        proc.kill()
        sys.exit(f"timeline: bpftrace did not start: {log.read_text().strip()[-1000:]}")
    return proc


def record(out: Path, command: list[str], untimed: int, tcp: bool = False, segments: bool = False) -> None:
    if "--csv" not in command:
        sys.exit("timeline: the command needs --csv FILE (the timed calls' count and sizes)")
    csv_path = Path(command[command.index("--csv") + 1])
    if not (TRACEFS / "trace").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=False)
    if not (TRACEFS / "trace").exists():
        sys.exit(f"timeline: no tracefs at {TRACEFS} (needs root and a kernel with tracing)")
    if segments and not shutil.which("bpftrace"):
        sys.exit("timeline: --segments needs bpftrace (apt install bpftrace)")

    def put(name: str, value: str) -> None:
        try:
            (TRACEFS / name).write_text(value)
        except OSError as e:
            sys.exit(f"timeline: writing '{value}' to {TRACEFS / name}: {e.strerror}")
    # the settings it changes, to put back after (the clock is shown as "[local] mono ...";
    # the buffer's size, before tracing first expands it, as "7 (expanded: 1408)": the size
    # it takes once used, which is what to put back)
    before = {name: re.findall(r"\d+", (TRACEFS / name).read_text())[-1] for name in ("tracing_on", "buffer_size_kb")}
    before["trace_clock"] = re.search(r"\[(\w+)\]", (TRACEFS / "trace_clock").read_text()).group(1)
    events = EVENTS + (TCP_EVENTS if tcp else ())
    enabled = {e: (TRACEFS / f"events/{e}/enable").read_text().strip() for e in events}
    filter_before = (TRACEFS / "events/tcp/tcp_probe/filter").read_text().strip() if tcp else "none"
    put("tracing_on", "0")
    put("trace", "")
    put("trace_clock", "mono")
    put("buffer_size_kb", "65536")
    try:
        if tcp:
            put("events/tcp/tcp_probe/filter", PROBE_FILTER)
        for e in events:
            put(f"events/{e}/enable", "1")
        tracer = start_segments(out) if segments else None
        put("tracing_on", "1")
        try:
            rc = subprocess.run(command).returncode
        finally:
            put("tracing_on", "0")
            if tracer:
                tracer.send_signal(signal.SIGINT)
                tracer.wait()
        if segments:   # the namespaces' names, while they exist
            out.with_name(out.name + ".netns").write_text(json.dumps(namespaces()))
        text = (TRACEFS / "trace").read_text()
    finally:
        put("tracing_on", "0")
        for e, was in enabled.items():
            put(f"events/{e}/enable", was)
        if tcp:   # "none" reads back where no filter is set, "0" clears one
            put("events/tcp/tcp_probe/filter", "0" if filter_before == "none" else filter_before)
        put("trace", "")
        for name in ("trace_clock", "buffer_size_kb", "tracing_on"):
            put(name, before[name])
    if rc:
        sys.exit(f"timeline: the command failed (exit {rc})")
    raw = out.with_name(out.name + ".tracefs")
    raw.write_text(text)
    convert(raw, csv_path, out, untimed, os.environ.get("TOPOCOLL_TRACE") or None)


# the simulator's JSON names for the kernel's counters (nstat's names)
AS_SIMULATOR = {
    "tcp_timeouts+tcp_repeat_timeouts": "TcpExtTCPTimeouts",
    "tcp_recoveries": "TcpExtTCPSackRecovery",
    "tcp_loss_probes": "TcpExtTCPLossProbes",
    "tcp_lost_retransmits+tcp_timeout_lost_retransmits": "TcpExtTCPLostRetransmit",
    "tcp_sack_reorder": "TcpExtTCPSACKReorder",
    "retransmitted_segments": "TcpRetransSegs",
    "tcp_hystart_train": "TcpExtTCPHystartTrainDetect",
    "tcp_hystart_train_cwnd": "TcpExtTCPHystartTrainCwnd",
    "tcp_hystart_delay": "TcpExtTCPHystartDelayDetect",
    "tcp_hystart_delay_cwnd": "TcpExtTCPHystartDelayCwnd",
}


def qdisc_drops(text: str) -> dict[str, int]:
    """`tc -s qdisc show` read as drops by device: its root qdisc's, which
    count its children's (htb's classes, tbf's fifo)"""
    drops, dev = {}, None
    for line in text.splitlines():
        m = re.match(r"qdisc \S+ \S+ dev (\S+) (\w+)", line)
        if m:
            dev = m.group(1) if m.group(2) == "root" else None
            continue
        m = re.search(r"\(dropped (\d+),", line)
        if m and dev:
            drops[dev] = drops.get(dev, 0) + int(m.group(1))
            dev = None
    return drops


def testbed_counters() -> tuple[dict[str, int], dict[str, int]]:
    """(drops by namespace:device, TCP counters summed over the machines)"""
    from topocoll.testbed.net import PREFIX, machine_ns, our_namespaces, sh
    drops, tcp = {}, collections.Counter()
    for ns in our_namespaces():
        for dev, n in qdisc_drops(sh("tc", "-s", "qdisc", "show", ns=ns).stdout).items():
            drops[f"{ns[len(PREFIX):]}:{dev}"] = n
        if ns.startswith(machine_ns("")):
            tcp.update(json.loads(sh("nstat", "-az", "--json", ns=ns).stdout)["kernel"])
    return drops, dict(tcp)


def counted(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def counters(out: Path, command: list[str]) -> None:
    from topocoll._core import TopocollError
    try:
        d0, t0 = testbed_counters()
        if not d0:
            sys.exit("timeline: no testbed is up (topocoll testbed up T first)")
        rc = subprocess.run(command).returncode
        d1, t1 = testbed_counters()
    except TopocollError as e:
        sys.exit(f"timeline: {e}")
    if rc:
        sys.exit(f"timeline: the command failed (exit {rc})")
    drops, tcp = counted(d0, d1), counted(t0, t1)
    sim = {name: tcp.get(key, 0) for name, key in AS_SIMULATOR.items()}
    sim["drops"] = sum(drops.values())
    out.write_text(json.dumps({"as_simulator": sim, "drops_by_queue": drops, "tcp": tcp}, indent=1) + "\n")
    print(f"timeline: {out}: " + ", ".join(f"{k} {v}" for k, v in sim.items()))
    print("timeline: drops by queue: " + ", ".join(f"{k} {v}" for k, v in sorted(drops.items(), key=lambda x: -x[1])))


def call_start(ranks: dict[int, list]) -> float:
    """A call's start: its first send's (ranks: read_sends's for the call)"""
    return min(sends[0][0] for sends in ranks.values())


def call_starts(prefix: str) -> list[float]:
    """Each call's start in a TOPOCOLL_TRACE, in order"""
    return sorted(call_start(ranks) for ranks in read_sends(prefix).values())


def convert(raw: Path, csv_path: Path, out: Path, untimed: int, calls_from: str | None = None) -> None:
    if not csv_path.is_file():
        sys.exit(f"timeline: {csv_path}: no such file (the bench's --csv, which says the timed calls)")
    rows = list(csv.DictReader(open(csv_path)))
    blocks = [int(r["msize_bytes"]) for r in rows]
    text = raw.read_text()
    kept = re.search(r"entries-in-buffer/entries-written: (\d+)/(\d+)", text)
    if kept and int(kept.group(1)) < int(kept.group(2)):
        print(f"timeline: warning: {raw}: the trace buffer overflowed, {kept.group(1)} of {kept.group(2)} events kept "
              "(the earliest lost): trace fewer calls", file=sys.stderr)
    seg, spaces = raw.with_suffix(".segments"), raw.with_suffix(".netns")   # record --segments' files beside RAW
    segments = segment_events(seg.read_text(), json.loads(spaces.read_text()) if spaces.exists() else {}) \
        if seg.exists() else None
    lines = kernel_events(text, blocks, call_starts(calls_from) if calls_from else None, segments)
    out.write_text("".join(l + "\n" for l in lines))
    calls = [float(l.split()[0]) for l in lines if " call " in l]
    want = len(blocks) + untimed * len(set(blocks))
    timed = calls[-len(blocks):] if blocks else []
    short = sum(b - a < float(r["seconds"]) for a, b, r in zip(timed, timed[1:], rows))
    print(f"timeline: {out}: {len(calls)} calls (the program made {want}), "
          f"{sum(' timeout ' in l for l in lines)} timeouts, {sum(' drop ' in l for l in lines)} drops")
    if len(calls) != want or short:
        print(f"timeline: warning: {len(calls)} calls found for {want}, {short} timed call(s) shorter than the CSV "
              "says: the calls are misread; do not compare this trace", file=sys.stderr)


def read_trace(path: Path) -> tuple[list[float], list[tuple[int, float, list[str]]]]:
    """A --trace file: the timed calls' starts, and every other line
    (line number, time, its words)"""
    calls, rows = [], []
    try:
        text = open(path).read()
    except OSError as e:
        sys.exit(f"timeline: {path}: {e.strerror}")
    for n, line in enumerate(text.splitlines(), 1):
        p = line.split()
        if len(p) < 2:
            continue
        try:
            t = float(p[0])
        except ValueError:
            sys.exit(f"timeline: {path}:{n}: not a time: {p[0]!r}")
        if p[1] != "call":
            rows.append((n, t, p))
        elif p[-1] == "timed":
            calls.append(t)
    if not calls:
        sys.exit(f"timeline: {path}: no timed call")
    return calls, rows


def read(path: Path) -> tuple[list[float], list[tuple[float, str, str]]]:
    """The timed calls' starts, and every event (time, kind, detail)"""
    calls, rows = read_trace(path)
    return calls, [(t, p[1], p[-1]) for _, t, p in rows if p[1] in ("timeout", "drop")]


def per_call(calls: list[float], events, bin_s: float) -> dict:
    """(kind, bin) -> events a timed call; kinds drop, timeout, repeat"""
    h = collections.Counter()
    ends = calls[1:] + [float("inf")]
    for s, e in zip(calls, ends):
        for t, kind, detail in events:
            if s <= t < e:
                b = int((t - s) / bin_s + 1e-9)   # an event on a bin's edge falls in that bin
                h[(kind, b)] += 1
                if kind == "timeout" and detail == "repeat":
                    h[("repeat", b)] += 1
    return {k: v / len(calls) for k, v in h.items()}


def compare(a: Path, b: Path, bin_ms: float) -> None:
    (ca, ea), (cb, eb) = read(a), read(b)
    ha, hb = per_call(ca, ea, bin_ms / 1e3), per_call(cb, eb, bin_ms / 1e3)
    print(f"a call, in {bin_ms:g} ms bins from its start: A = {a} ({len(ca)} timed calls), B = {b} ({len(cb)})")
    print(f"{'ms':>6}  {'drops A':>8} {'B':>7}  {'timeouts A':>10} {'B':>6}  {'repeats A':>9} {'B':>6}")
    bins = sorted({k[1] for k in ha} | {k[1] for k in hb})
    kinds = ("drop", "timeout", "repeat")

    def line(label, row):
        print(f"{label:>6}  {row[0]:8.1f} {row[1]:7.1f}  {row[2]:10.1f} {row[3]:6.1f}  {row[4]:9.2f} {row[5]:6.2f}")
    for x in bins:
        row = [h.get((k, x), 0) for k in kinds for h in (ha, hb)]
        if max(row) >= 0.05:
            line(f"{x * bin_ms:g}", row)
    line("total", [sum(v for (kind, _), v in h.items() if kind == k) for k in kinds for h in (ha, hb)])


def read_tcp(path: Path) -> tuple[list[float], dict[str, list[tuple]]]:
    """The timed calls' starts, and each connection's tcp lines in time
    order: (time, "ack", una, cwnd, ssthresh or None), (time, "resend"[,
    seq, bytes]), (time, "state", name), (time, "lost", where, seq, bytes)"""
    calls, rows = read_trace(path)
    conns = collections.defaultdict(list)
    for n, t, p in rows:
        if p[1] == "tcp":
            try:
                if len(p) == 7 and p[3] == "ack":
                    ev = (t, "ack", int(p[4]), int(p[5]), None if p[6] == "inf" else int(p[6]))
                elif len(p) in (4, 6) and p[3] == "resend":   # SEQ BYTES: the simulator's, record --segments'
                    ev = (t, "resend") + ((int(p[4]), int(p[5])) if len(p) == 6 else ())
                elif len(p) == 7 and p[3] == "lost":
                    ev = (t, "lost", p[4], int(p[5]), int(p[6]))
                elif len(p) == 5 and p[3] == "state" and p[4] in STATES:
                    ev = (t, "state", p[4])
                else:
                    raise ValueError
            except ValueError:
                sys.exit(f"timeline: {path}:{n}: not a tcp line: {' '.join(p)!r}")
            conns[p[2]].append(ev)
    if not conns:
        sys.exit(f"timeline: {path}: no tcp lines (the simulator's --trace-tcp, or record --tcp, writes them)")
    for evs in conns.values():
        evs.sort(key=lambda e: e[0])
    return calls, conns


def tcp_summary(calls: list[float], conns: dict, bin_s: float, mss: int) -> dict:
    """The figures `tcp` prints, a timed call"""
    ends = calls[1:] + [float("inf")]

    def call_of(t):
        i = bisect.bisect_right(calls, t) - 1
        return i if i >= 0 and t < ends[i] else None
    loss_from, loss_bins, lasted, strides = collections.Counter(), collections.Counter(), [], collections.Counter()
    resends, first_cwnd, first_ssthresh, windows, peaks, gaps = 0, [], [], [], [], []
    lost, again, needless, traced_losses = 0, 0, 0, False
    timer_ticks = []   # recoveries no ACK began: the kernel's ticks (TICK_NS) from the connection's last ACK
    for evs in conns.values():
        state, entered, una, peak, last = "open", None, None, {}, None
        last_ack = None
        for ev in evs:
            t, kind, k = ev[0], ev[1], call_of(ev[0])
            if kind == "state":
                if ev[2] == "recovery" and state != "recovery" and k is not None and last_ack is not None \
                        and t - last_ack > ACK_AT_ONCE_S:
                    timer_ticks.append(round(t * 1e9) // TICK_NS - round(last_ack * 1e9) // TICK_NS)
                if ev[2] == "loss" and state != "loss" and k is not None:
                    loss_from[state if state in ("open", "recovery") else "other"] += 1
                    loss_bins[int((t - calls[k]) / bin_s + 1e-9)] += 1
                    entered = t
                elif ev[2] != "loss" and entered is not None:
                    lasted.append(t - entered)
                    entered = None
                state = ev[2]
            elif kind == "resend":
                resends += k is not None
            elif kind == "lost":
                traced_losses = True
            else:
                if una is not None and k is not None:
                    advance = (ev[2] - una) % (1 << 32)
                    if 0 < advance < UNBOUNDED:
                        strides[min(5, -(-advance // mss))] += 1
                una, last_ack = ev[2], t
                if k is not None:
                    if last is not None and last[1] == k:   # since the connection's last ACK in this call
                        gaps.append(t - last[0])
                    last = (t, k)
                    windows.append(ev[3])
                    if k not in peak:   # the connection's first ACK in this call
                        first_cwnd.append(ev[3])
                        if ev[4] is not None:
                            first_ssthresh.append(ev[4])
                    peak[k] = max(peak.get(k, 0), ev[3])
        peaks += peak.values()
        lost_data, lost_again = again_lost(evs, call_of)
        lost += lost_data
        again += lost_again
        needless += needless_resends(evs, call_of)
    n = len(calls)
    return {"calls": n, "loss": sum(loss_from.values()) / n, "loss_from": {k: v / n for k, v in loss_from.items()},
            "loss_bins": {b: v / n for b, v in loss_bins.items()}, "lasted": lasted, "resends": resends / n,
            "strides": strides, "first_cwnd": first_cwnd, "first_ssthresh": first_ssthresh, "windows": windows,
            "peaks": peaks, "gaps": gaps, "lost": lost, "again": again, "needless": needless,
            "traced_losses": traced_losses, "timer_ticks": timer_ticks}


def covers(start: int, size: int, seq: int) -> bool:
    """Whether `size` bytes from `start` hold sequence number `seq` (mod 2^32)"""
    return (seq - start) % (1 << 32) < size


def again_lost(evs: list[tuple], call_of) -> tuple[int, int]:
    """A connection's data segments lost in a timed call (lost lines with
    bytes), and how many of them, resent (a resend line covering the
    segment's first byte), were lost again after that resend"""
    resends = [ev for ev in evs if ev[1] == "resend" and len(ev) == 4]
    losses = [ev for ev in evs if ev[1] == "lost" and ev[4] > 0]
    lost = again = 0
    for t, _, _, seq, _ in losses:
        if call_of(t) is None:
            continue
        lost += 1
        sent = next((r[0] for r in resends if r[0] > t and covers(r[2], r[3], seq)), None)
        again += sent is not None and any(u[0] > sent and u[3] == seq for u in losses)
    return lost, again


def needless_resends(evs: list[tuple], call_of) -> int:
    """A connection's resends in a timed call of a segment whose copy sent
    before was neither lost (no lost line for it since) nor given up by a
    timeout: on a path that keeps a flow's order, RACK found it lost wrongly
    (or a SACK came for an older copy)"""
    out, n = {}, 0   # a resend still on its way: where it starts -> its bytes
    for ev in evs:
        if ev[1] == "resend" and len(ev) == 4:
            n += ev[2] in out and call_of(ev[0]) is not None
            out[ev[2]] = ev[3]
        elif ev[1] == "lost":   # a copy covering the segment lost
            for seq in [q for q, size in out.items() if covers(q, size, ev[3])]:
                del out[seq]
        elif ev[1] == "state" and ev[2] == "loss":
            out.clear()
    return n


def tcp_compare(a: Path, b: Path, bin_ms: float, mss: int) -> None:
    sa, sb = (tcp_summary(*read_tcp(p), bin_ms / 1e3, mss) for p in (a, b))
    print(f"TCP a timed call: A = {a} ({sa['calls']} calls), B = {b} ({sb['calls']})")
    print(f"{'':42} {'A':>12} {'B':>12}")

    def row(label, fa, fb):
        print(f"{label:42} {fa:>12} {fb:>12}")
    row("timeouts (a connection entering loss)", f"{sa['loss']:.1f}", f"{sb['loss']:.1f}")
    for k in ("open", "recovery", "other"):
        row(f"  from {k}", f"{sa['loss_from'].get(k, 0):.1f}", f"{sb['loss_from'].get(k, 0):.1f}")
    bins = sorted(set(sa["loss_bins"]) | set(sb["loss_bins"]))
    for x in bins:
        fa, fb = sa["loss_bins"].get(x, 0), sb["loss_bins"].get(x, 0)
        if max(fa, fb) >= 0.05:
            row(f"  at {x * bin_ms:g}-{(x + 1) * bin_ms:g} ms", f"{fa:.1f}", f"{fb:.1f}")

    def spread(xs, scale=1.0, unit=""):
        if not xs:
            return "-"
        return f"{quantile(xs, .5) * scale:.0f}/{quantile(xs, .9) * scale:.0f}{unit}"
    row("loss lasted, median/90 %", spread(sa["lasted"], 1e3, " ms"), spread(sb["lasted"], 1e3, " ms"))
    # a recovery begun with no ACK at that instant: RACK's reordering timer,
    # which Linux's timer wheel runs on the tick after the jiffy it expires in
    row("recoveries begun by a timer", f"{len(sa['timer_ticks']) / sa['calls']:.1f}",
        f"{len(sb['timer_ticks']) / sb['calls']:.1f}")

    def ticks(xs):
        return "-" if not xs else f"{quantile(xs, .5):.0f} ({100 * sum(x >= 2 for x in xs) / len(xs):.0f} % 2+)"
    row(f"  {TICK_NS / 1e6:g} ms ticks after the last ACK", ticks(sa["timer_ticks"]), ticks(sb["timer_ticks"]))
    row("resends", f"{sa['resends']:.0f}", f"{sb['resends']:.0f}")

    def lost(s):
        return f"{s['lost'] / s['calls']:.0f}" if s["traced_losses"] else "-"

    def again(s):
        return f"{100 * s['again'] / s['lost']:.1f} %" if s["traced_losses"] and s["lost"] else "-"
    row("data segments lost", lost(sa), lost(sb))
    row("  resent and lost again", again(sa), again(sb))

    def needless(s):
        return f"{s['needless'] / s['calls']:.1f}" if s["traced_losses"] else "-"
    row("resent again, the last copy not lost", needless(sa), needless(sb))
    row("ACKs reaching senders", f"{sum(sa['strides'].values()) / sa['calls']:.0f}",
        f"{sum(sb['strides'].values()) / sb['calls']:.0f}")
    for k in range(1, 6):
        share = [100 * s["strides"][k] / max(1, sum(s["strides"].values())) for s in (sa, sb)]
        row(f"  acknowledging {k}{'+' if k == 5 else ''} segment{'' if k == 1 else 's'}",
            f"{share[0]:.0f} %", f"{share[1]:.0f} %")
    # HyStart's ACK train ends at a gap over 2 ms (hystart_ack_delta)
    late = [100 * sum(g >= 2e-3 for g in s["gaps"]) / max(1, len(s["gaps"])) for s in (sa, sb)]
    row("  2 ms or more after the connection's last", f"{late[0]:.0f} %", f"{late[1]:.0f} %")

    def quartiles(xs):
        return "-" if not xs else f"{quantile(xs, .25):.0f}/{quantile(xs, .5):.0f}/{quantile(xs, .75):.0f}"
    row("at a connection's first ACK in a call:", "", "")
    row("  window, segments (quartiles)", quartiles(sa["first_cwnd"]), quartiles(sb["first_cwnd"]))
    row("  slow-start threshold (quartiles)", quartiles(sa["first_ssthresh"]), quartiles(sb["first_ssthresh"]))
    row("largest window in a call (quartiles)", quartiles(sa["peaks"]), quartiles(sb["peaks"]))

    def deciles(xs):
        return "-" if not xs else "/".join(f"{quantile(xs, q):.0f}" for q in (.1, .5, .9))
    row("window at an ACK (10/50/90 %)", deciles(sa["windows"]), deciles(sb["windows"]))


def read_sends(source: str) -> dict[int, dict[int, list[tuple[float, float, int | None]]]]:
    """call -> rank -> the rank's sends (start, done, peer), by start: from a
    simulator --trace file (its exec lines) or a TOPOCOLL_TRACE prefix"""
    ops: dict[tuple[int, int, int], dict] = {}

    def note(where, line, call, rank, op, event, when, peer):
        try:
            key, t = (int(call), int(rank), int(op)), float(when)
            peer = None if peer is None else int(peer)
        except ValueError:
            sys.exit(f"timeline: {where}: not an executor event: {line.strip()!r}")
        if event not in ("start", "done", "notify"):
            sys.exit(f"timeline: {where}: unknown event {event!r}")
        ops.setdefault(key, {"peer": peer})[event] = t

    path = Path(source)
    if path.is_file():
        for n, line in enumerate(open(path), 1):
            p = line.split()
            if len(p) >= 2 and p[1] == "exec":
                if len(p) != 7:
                    sys.exit(f"timeline: {path}:{n}: not an executor event: {line.strip()!r}")
                note(f"{path}:{n}", line, p[3], p[2], p[4], p[5], p[0], p[6])
    else:
        files = [f for f in path.parent.glob(path.name + ".*") if f.suffix[1:].isdigit()]
        if not files:
            sys.exit(f"timeline: {source}: neither a simulator trace nor a TOPOCOLL_TRACE prefix (no {source}.RANK files)")
        for f in files:
            rank = int(f.suffix[1:])
            for n, line in enumerate(open(f), 1):
                p = line.split()
                if len(p) not in (4, 5):   # before 2026-11-29 the lines had no peer
                    sys.exit(f"timeline: {f}:{n}: not an executor event: {line.strip()!r}")
                note(f"{f}:{n}", line, p[0], rank, p[1], p[2], p[3], p[4] if len(p) == 5 else None)
    calls: dict[int, dict[int, list]] = {}
    for (call, rank, _), ev in ops.items():
        if "start" in ev and "done" in ev:
            calls.setdefault(call, {}).setdefault(rank, []).append((ev["start"], ev["done"], ev["peer"]))
    for ranks in calls.values():
        for sends in ranks.values():
            sends.sort()
    if not calls:
        sys.exit(f"timeline: {source}: no executor events (the MPI's own algorithm leaves none)")
    return calls


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def send_summary(calls: dict, last: int, topology) -> dict:
    """The figures `sends` prints, over the last calls"""
    durations: dict[str, list[float]] = collections.defaultdict(list)
    rows, steps = [], []
    for call in sorted(calls)[-last:]:
        ranks = calls[call]
        t0 = call_start(ranks)
        # when the last rank had done its k-th send (an algorithm's step k)
        steps.append([max(s[k][1] for s in ranks.values()) - t0 for k in range(min(map(len, ranks.values())))])
        for rank, sends in ranks.items():
            for start, done, peer in sends:
                cls = "all"
                if topology is not None and peer is not None:
                    cls = f"{topology.path_class(rank, peer)} links"
                durations[cls].append(done - start)
        finished = sorted(max(d for _, d, _ in sends) - t0 for sends in ranks.values())
        mid = min(len(s) for s in ranks.values()) // 2
        slowest = max(s[mid][0] for s in ranks.values())
        ahead = max(sum(1 for t, _, _ in s if t <= slowest) for s in ranks.values()) - (mid + 1)
        rows.append((call, finished[0], finished[len(finished) // 2], finished[-1], ahead))
    n = min(map(len, steps)) if steps else 0
    return {"durations": durations, "rows": rows, "steps": [st.median(c[k] for c in steps) for k in range(n)]}


def sends(sources: list[str], last: int, topology_arg: str | None) -> None:
    topology = None
    if topology_arg:
        from topocoll._core import TopocollError
        from topocoll.common import load_topology
        try:
            topology = load_topology(topology_arg)
        except TopocollError as e:
            sys.exit(f"timeline: --topology {topology_arg}: {e}")
    for source in sources:
        calls = read_sends(source)
        if topology is not None:
            over = max(r for ranks in calls.values() for r in ranks)
            if over >= topology.num_machines:
                sys.exit(f"timeline: {source}: rank {over} has no machine in {topology_arg} "
                         f"({topology.num_machines} machines)")
        s = send_summary(calls, last, topology)
        print(f"{source}: {len(s['rows'])} call{'' if len(s['rows']) == 1 else 's'}")
        for cls, xs in sorted(s["durations"].items()):
            print(f"  a send ({cls}): median {1e3 * quantile(xs, .5):.1f} ms, 90 % {1e3 * quantile(xs, .9):.1f} ms, "
                  f"{len(xs)} sends")
        print(f"  {'call':>5} {'first done':>11} {'median':>7} {'last':>7} {'ahead':>6}")
        for call, first, med, lastr, ahead in s["rows"]:
            print(f"  {call:>5} {1e3 * first:9.0f}ms {1e3 * med:5.0f}ms {1e3 * lastr:5.0f}ms {ahead:>6}")
        print("  the last rank done with its k-th send (a step), ms from the call's start, median of the calls: "
              + " ".join(f"{1e3 * t:.0f}" for t in s["steps"]))


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # quiet when piped into head
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="trace a testbed command in the kernel")
    r.add_argument("out", type=Path)
    r.add_argument("command", nargs=argparse.REMAINDER)
    r.add_argument("--untimed", type=int, default=2, help="untimed calls a size (default %(default)s)")
    r.add_argument("--tcp", action="store_true",
                   help="also each connection's ACKs, resends and state changes (tcp_probe, tcp_retransmit_skb)")
    r.add_argument("--segments", action="store_true",
                   help="with --tcp, also the resends' sequence numbers and each segment a queue dropped (bpftrace)")
    v = sub.add_parser("convert", help="a tracefs dump read again")
    v.add_argument("raw", type=Path)
    v.add_argument("csv", type=Path)
    v.add_argument("out", type=Path)
    v.add_argument("--untimed", type=int, default=2, help="untimed calls a size (default %(default)s)")
    v.add_argument("--calls-from", metavar="PREFIX", help="the calls' starts from this TOPOCOLL_TRACE")
    c = sub.add_parser("compare", help="two traces side by side")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--bin", type=float, default=20.0, help="bin width, ms (default %(default)s)")
    e = sub.add_parser("sends", help="the executor's sends: durations, ranks done, running ahead")
    e.add_argument("sources", nargs="+", metavar="TRACE", help="TOPOCOLL_TRACE prefix or simulator --trace file")
    e.add_argument("--calls", type=int, default=9, help="the last N calls of each (default %(default)s)")
    e.add_argument("--topology", help="sends by links crossed on this tree (rank r on machine r)")
    p = sub.add_parser("tcp", help="two traces' TCP lines side by side: timeouts, resends, ACKs, windows")
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    p.add_argument("--bin", type=float, default=100.0, help="timeouts in bins of this width, ms (default %(default)s)")
    p.add_argument("--mss", type=int, default=1448, help="bytes a segment, to count the ACKs' segments (default %(default)s)")
    n = sub.add_parser("counters", help="a testbed command's queue drops and TCP counters")
    n.add_argument("out", type=Path)
    n.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.cmd in ("counters", "record"):
        command = args.command
        if "--" in command:   # options after OUT (the command takes the rest of the line) come before --
            head, command = command[:command.index("--")], command[command.index("--") + 1:]
            if head and args.cmd == "counters":
                ap.error(f"counters: unknown arguments before --: {' '.join(head)}")
            if head:
                late = argparse.ArgumentParser(prog="timeline.py record OUT", add_help=False)
                late.add_argument("--untimed", type=int, default=args.untimed)
                late.add_argument("--tcp", action="store_true", default=args.tcp)
                late.add_argument("--segments", action="store_true", default=args.segments)
                try:
                    more, unknown = late.parse_known_args(head)
                except SystemExit:
                    ap.error(f"record: bad options before --: {' '.join(head)}")
                if unknown:
                    ap.error(f"record: unknown arguments before --: {' '.join(unknown)}")
                args.untimed, args.tcp, args.segments = more.untimed, more.tcp, more.segments
        if not command:
            ap.error(f"{args.cmd} needs a command after --")
        if os.geteuid() != 0:
            sys.exit(f"timeline: {args.cmd} needs root (the testbed's namespaces, tracefs)")
        if args.cmd == "counters":
            counters(args.out, command)
        else:
            if args.segments and not args.tcp:
                ap.error("record: --segments adds to --tcp: give both")
            record(args.out, command, args.untimed, args.tcp, args.segments)
    elif args.cmd == "sends":
        if args.calls < 1:
            ap.error("--calls must be at least 1")
        sends(args.sources, args.calls, args.topology)
    elif args.cmd == "tcp":
        if args.bin <= 0 or args.mss < 1:
            ap.error("--bin and --mss must be positive")
        tcp_compare(args.a, args.b, args.bin, args.mss)
    elif args.cmd == "convert":
        convert(args.raw, args.csv, args.out, args.untimed, args.calls_from)
    else:
        if args.bin <= 0:
            ap.error("--bin must be positive")
        compare(args.a, args.b, args.bin)


if __name__ == "__main__":
    main()
