#!/usr/bin/env python3
"""How old the TCP timestamps are that the testbed's machines echo, and why.

  timestamp_echoes.py ADDRESS=CAPTURE ...   e.g. 10.123.0.2=n1.pcap 10.123.0.6=n5.pcap

Each CAPTURE is `tcpdump -s 96 -w FILE tcp` on one machine's interface
(inside its namespace), ADDRESS that machine's address.  It prints, over
every connection of a captured machine:

- stale echoes: ACKs that move the machine's cumulative ACK forward but
  echo a timestamp the machine sent more than 100 ms before (Linux samples
  the RTT from such an echo when the ACK covers a retransmission);
- for the stale echoes on connections captured at both ends: whether every
  segment that could have refreshed the peer's echo in the meantime (at or
  below the peer's last acknowledged point) carried an ACK older than one
  the peer had already taken (Linux takes no timestamp from such a segment);
- data segments that left a machine behind a later pure ACK of their own
  connection (its egress queue reordered them), the cause of those old ACKs.

Needs scapy (Debian: python3-scapy; run it with /usr/bin/python3).
docs/results/2026-11-27-testbed-host-queue.md quotes its output.
"""
from __future__ import annotations

import collections
import sys

STALE = 0.1    # seconds


def older(a: int, b: int) -> bool:
    """a before b in 32-bit sequence space."""
    return (a - b) % 2**32 > 2**31


def load(path: str) -> list[tuple]:
    from scapy.all import IP, TCP, PcapReader
    out = []
    for p in PcapReader(path):
        if IP not in p or TCP not in p:
            continue
        t = p[TCP]
        ts = next((o[1] for o in t.options if o[0] == "Timestamp"), None)
        out.append((float(p.time), p[IP].src, t.sport, p[IP].dst, t.dport, t.seq, t.ack, len(t.payload), ts,
                    str(t.flags)))
    return out


def connection(r: tuple) -> tuple:
    return tuple(sorted([(r[1], r[2]), (r[3], r[4])]))


def stale_echoes(me: str, rows: list[tuple]) -> list[tuple]:
    """(connection, time, age, echoed value) of each stale echo a machine received."""
    out = []
    by_conn = collections.defaultdict(list)
    for r in rows:
        by_conn[connection(r)].append(r)
    for conn, rs in by_conn.items():
        sent_at: dict[int, float] = {}
        snd_una = None
        for t, src, _, _, _, _, ack, _, ts, _ in rs:
            if src == me:
                if ts and ts[0] not in sent_at:
                    sent_at[ts[0]] = t
                continue
            if ts is None:
                continue
            forward = snd_una is None or older(snd_una, ack)
            if forward and snd_una is not None and ts[1] in sent_at and t - sent_at[ts[1]] > STALE:
                out.append((conn, t, t - sent_at[ts[1]], ts[1]))
            if forward:
                snd_una = ack
    return out


def explained(me: str, peer_rows: list[tuple], conn: tuple, t: float, age: float, echo: int) -> bool:
    """At the peer: did every segment from `me` that reached it after the
    echoed one, at or below its last acknowledged point, carry an old ACK?"""
    snd_una = rcv_wup = None
    for r in peer_rows:
        if connection(r) != conn or r[0] > t + 0.001:
            continue
        tt, src, _, _, _, seq, ack, _, ts, _ = r
        if src != me:                  # the peer's own segment: what it last acknowledged
            rcv_wup = ack
            continue
        old = snd_una is not None and older(ack, snd_una)
        if tt > t - age + 0.0005 and ts and ts[0] != echo and rcv_wup is not None \
                and not older(rcv_wup, seq) and not old:
            return False
        if snd_una is None or older(snd_una, ack):
            snd_una = ack
    return True


def reordered(me: str, rows: list[tuple]) -> tuple[int, int]:
    """(data segments sent, those that left behind a later ACK of their own connection)."""
    highest: dict[tuple, int] = {}
    data = behind = 0
    for _, src, sport, dst, dport, _, ack, length, _, flags in rows:
        if src != me or "A" not in flags:
            continue
        key = (sport, dst, dport)
        if length:
            data += 1
            behind += key in highest and older(ack, highest[key])
        if key not in highest or older(highest[key], ack):
            highest[key] = ack
    return data, behind


def main(argv: list[str]) -> None:
    if not argv or any("=" not in a for a in argv):
        sys.exit(__doc__)
    caps = {addr: load(path) for addr, path in (a.split("=", 1) for a in argv)}
    total = both = why = data = behind = 0
    for me, rows in caps.items():
        found = stale_echoes(me, rows)
        total += len(found)
        for conn, t, age, echo in found:
            peer = next(a for a, _ in conn if a != me)
            if peer in caps:
                both += 1
                why += explained(me, caps[peer], conn, t, age, echo)
        d, b = reordered(me, rows)
        data, behind = data + d, behind + b
    print(f"stale echoes (over {STALE * 1e3:.0f} ms) on ACKs that moved a connection forward: {total}")
    print(f"  on connections captured at both ends: {both}; every segment that could have refreshed the echo "
          f"carried an old ACK: {why}")
    print(f"data segments sent: {data}; left behind a later pure ACK of their own connection: {behind} "
          f"({100 * behind / max(data, 1):.1f} %)")


if __name__ == "__main__":
    main(sys.argv[1:])
