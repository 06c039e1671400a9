"""The packet-level back-end: the SimGrid back-end's SMPI programs and
platform, with SimGrid's ns-3 network model (``--cfg=network/model:ns-3``)
in place of its flow model, so that TCP, switch-port queues, drops and
retransmission timeouts are simulated packet by packet (docs/packet.md
says why this road, and what it models and what not).

ns-3 takes its settings from ``NS_ATTRIBUTE_DEFAULT``:

- ``ns3::TcpSocket::SndBufSize``/``RcvBufSize`` 4 MiB, as Linux's largest
  autotuned buffers: ns-3's 128 KiB default stops SimGrid at the first
  message of 128 KiB or more ("total_bytes ... is not sent_bytes").
- ``ns3::DropTailQueue<Packet>::MaxSize`` -- every device's queue, in
  packets (``--buffer``; the machines' interfaces too: ns-3's defaults give
  no way to tell them apart here).
- ``ns3::TcpSocketBase::MinRto`` -- the minimum retransmission timeout
  (``--rto-min``; default Linux's 200 ms, where ns-3 uses 1 s).
- TCP is ns-3 3.37's default, Cubic, as the testbed's routes.

SimGrid itself fixes segments at 1000 bytes, an acknowledgement a segment
and no timestamps, and opens a new connection for each message.  The PMPI
library paces (``TOPOCOLL_PACE=on``, as on a real cluster; ``--pace off``
for SMPI's default).
"""

from __future__ import annotations

from .._core import TopocollError, format_time, parse_time
from .simgrid import SimGridBackend

SOCKET_BUFFER = 4 * 1024 * 1024
DEFAULT_RTO_MIN = "200ms"
MAX_QUEUE_PACKETS = 1_000_000


def ns3_attributes(buffer_packets: int, rto_min: float) -> str:
    """The NS_ATTRIBUTE_DEFAULT value for these settings."""
    return ";".join([f"ns3::TcpSocket::SndBufSize={SOCKET_BUFFER}", f"ns3::TcpSocket::RcvBufSize={SOCKET_BUFFER}",
                     f"ns3::DropTailQueue<Packet>::MaxSize={buffer_packets}p",
                     f"ns3::TcpSocketBase::MinRto=+{rto_min * 1e6:.0f}us"])


class PacketBackend(SimGridBackend):
    name = "packet"

    def __init__(self, *args, buffer: int = 100, rto_min: str | None = None, **kw):
        if not 1 <= buffer <= MAX_QUEUE_PACKETS:
            raise TopocollError("invalid argument", f"--buffer {buffer}: a queue of 1 to {MAX_QUEUE_PACKETS} packets")
        rto = parse_time(rto_min or DEFAULT_RTO_MIN)
        if not rto > 0:
            raise TopocollError("invalid argument", f"--rto-min {rto_min}: a positive time")
        given = dict(kw.get("env") or {})
        super().__init__(*args, **kw)
        self.buffer, self.rto_min = buffer, rto
        self.cfg_extra = ["network/model:ns-3"]
        if "TOPOCOLL_SEGMENT_SIZE" not in given:   # the flow model's shortcut; here segments are what they cost
            self.env.pop("TOPOCOLL_SEGMENT_SIZE", None)
        # the executor paces as over real TCP (SMPI's default is off: the flow
        # model needs none), at the rate of links the topology gives none
        self.env.setdefault("TOPOCOLL_PACE", "on")
        self.env.setdefault("TOPOCOLL_BANDWIDTH", f"{self.bandwidth:.0f}bit")
        self.env_extra = {"NS_ATTRIBUTE_DEFAULT": ns3_attributes(buffer, rto)}

    def settings(self) -> dict:
        return {**super().settings(), "network": "ns-3 packets, TCP Cubic, 1000-byte segments",
                "buffer_packets": self.buffer, "rto_min": format_time(self.rto_min)}
