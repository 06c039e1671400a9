"""The emulated switched cluster: Linux network namespaces on one machine.

One namespace per machine (``topocoll-m-NAME``) and per switch
(``topocoll-s-NAME``, holding a bridge ``br0``); a veth pair per link, created
directly inside the two namespaces (nothing is added to the host's own
namespace); each direction of every link shaped to the link's rate (tbf)
with a finite queue: on a switch's port to ``--buffer`` packets (the
switch-port buffer, where contention drops packets, first in first out), on a
machine's interface to 1000 (a NIC's default txqueuelen).  A machine's
interface serves a flow with little queued first by default (``--host-queue
sparse-first``): a stock Debian host (11 and later) runs fq_codel on its NIC,
which serves a flow with nothing queued -- a connection's pure ACKs, MPI's
zero-byte syncs -- ahead of a bulk flow's backlog and keeps each flow's
packets in order; this kernel has no fq_codel, so htb with a class per peer
machine stands in for it, under a tbf that holds the link's rate at the
millisecond as a NIC does (``short-first``: small packets ahead of all bulk
data, by length alone; ``fifo``: one FIFO).  Each veth hands a flow's frames
to one CPU's backlog, chosen by the flow's hash (RPS over every CPU,
``--flow-order kept``): a switch keeps a flow in order, where the kernel's
default, each frame processed on the CPU that handed it over, lets two CPUs
swap a flow's frames (``--flow-order any``).  TSO, GSO and GRO are off on every veth,
so frames are real-sized, and bridges do not call netfilter.  Each machine gets
its address in 10.123.0.0/16, a route with cubic congestion control (the
namespace inherits the host's default, bbr here, and cannot change it) and the
kernel's default RTO unless ``--rto-min`` is given.

Everything created is named with the ``topocoll-`` prefix and recorded in
/run/topocoll/testbed.json; ``down`` removes every namespace with the prefix,
with or without the record, so it also cleans up after a crash.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from .._core import Topology, TopocollError
from .._core import default as core_default   # htb() has a parameter named default
from .._core import shaper_bucket   # the shapers' bucket: 1 ms at the rate, at least two frames

PREFIX = "topocoll-"
STATE_DIR = Path("/run/topocoll")
STATE = STATE_DIR / "testbed.json"
NETNS_ETC = Path("/etc/netns")
SUBNET = "10.123"
MTU_FRAME = int(core_default("ethernet_frame"))   # bytes a full Ethernet frame takes in a tbf queue
CLASS_BURST = int(core_default("shaper_class_burst"))   # a peer class's burst, bytes
NIC_QUEUE = 1000          # a NIC's default txqueuelen
KERNEL_RTO = "kernel default"   # the record's rto_min when --rto-min is not given
LINE_HANDLE = "10"       # the tbf above a machine's htb (which is 1:)
MAX_PEER_CLASSES = 0xffff - 0x100   # sparse-first's htb classes 1:100 and up, one a peer and one for the rest
#: how a flow's frames cross the emulated network: "kept" in order (each veth
#: steers a flow to one CPU by its hash), "any" (the kernel's default: the CPU
#: that hands a frame over processes it, and two can swap a flow's frames)
FLOW_ORDERS = ("kept", "any")
DEFAULT_FLOW_ORDER = FLOW_ORDERS[0]


def machine_ns(name: str) -> str:
    return f"{PREFIX}m-{name}"


def switch_ns(name: str) -> str:
    return f"{PREFIX}s-{name}"


def address(rank: int) -> str:
    return f"{SUBNET}.{rank // 250}.{rank % 250 + 1}"


def require_root() -> None:
    if os.geteuid() != 0:
        raise TopocollError("unsupported", "the testbed needs root (network namespaces, veth, tc): run as root")
    for tool in ("ip", "tc", "ethtool", "unshare"):
        if not shutil.which(tool):
            raise TopocollError("i/o error", f"'{tool}' not found (Debian: iproute2, ethtool, util-linux; 'make deps')")


def sh(*argv: str, ns: str | None = None, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
    proc = subprocess.run(cmd, capture_output=True, text=True, input=input)
    if check and proc.returncode != 0:
        raise TopocollError("i/o error", f"testbed: '{' '.join(cmd)}' failed: {proc.stderr.strip()}")
    return proc


def our_namespaces() -> list[str]:
    out = sh("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]


def clear_root(ns: str, dev: str) -> None:
    """Remove dev's root queue, if any, before a host queue is built anew:
    htb will not replace another htb, and tc's replace of a tbf root keeps
    the queue under it."""
    sh("tc", "qdisc", "del", "dev", dev, "root", ns=ns, check=False)


def tbf(ns: str, dev: str, rate_bps: float, queue_packets: int) -> None:
    """Shape dev's egress to rate with a queue of queue_packets frames: the
    shapers' bucket (a millisecond at the rate, at least two frames; tbf needs
    one), latency-free limit."""
    sh("tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{int(rate_bps)}bit",
       "burst", str(shaper_bucket(rate_bps)), "limit", str(queue_packets * MTU_FRAME), ns=ns)


def htb(ns: str, dev: str, rate_bps: float, default: str, classes: list[str]) -> None:
    """Shape dev's egress to rate with htb: a root class at the rate and,
    under it, the `classes` lines (tc's own syntax, leaf classes, their
    qdiscs and the filters), unclassified packets to `default`; one tc
    process for all of them.  A tbf at the rate with the shapers' bucket
    sits above the htb and holds the line: htb alone lets a leaf that
    has tokens of its own send whatever its parent's state, so a machine
    with a dozen backlogged peers let 50 KB and more out in one millisecond
    of a 12.5 KB/ms link (docs/results/2026-12-03-testbed-line-rate.md);
    the tbf takes a packet from the htb only when the link could send it."""
    burst, rate = shaper_bucket(rate_bps), int(rate_bps)
    clear_root(ns, dev)
    lines = [f"qdisc add dev {dev} root handle {LINE_HANDLE}: tbf rate {rate}bit burst {burst} "
             f"limit {2 * MTU_FRAME}",   # tbf insists on a limit; it is its default fifo's, which the htb replaces
             f"qdisc add dev {dev} parent {LINE_HANDLE}:1 handle 1: htb default {default}",
             f"class add dev {dev} parent 1: classid 1:1 htb rate {rate}bit ceil {rate}bit burst {burst} "
             f"cburst {burst} quantum {MTU_FRAME}", *classes]
    sh("tc", "-batch", "-", ns=ns, input="\n".join(lines) + "\n")


def short_first(ns: str, dev: str, rate_bps: float, queue_packets: int, peers: tuple[str, ...] = ()) -> None:
    """Shape dev's egress to rate like tbf, but send packets shorter than the
    core's short-packet length (pure ACKs, MPI's zero-byte syncs) ahead of the bulk
    backlog: htb with a priority class for them (guaranteed 5 % of the rate,
    may take all of it) and a bulk class (95 %, may take all), each a FIFO of
    queue_packets.  Unlike fq_codel it tells packets apart by length alone,
    so a connection's pure ACKs overtake its own queued data; Linux then keeps
    echoing the timestamp of an older segment (it takes a segment's timestamp
    only if its ACK is not older than one already seen), samples the RTT from
    that echo when an ACK covers a retransmission, and its RTO grows to
    seconds (docs/results/2026-11-27-testbed-host-queue.md)."""
    burst, rate, frames = shaper_bucket(rate_bps), int(rate_bps), CLASS_BURST
    # as the simulator's sparse-first queue counts; a power of two (the core
    # asserts it), which the u32 mask below needs
    short = int(core_default("short_packet"))
    htb(ns, dev, rate_bps, "20", [
        f"class add dev {dev} parent 1:1 classid 1:10 htb rate {rate // 20}bit ceil {rate}bit prio 0 "
        f"burst {frames} cburst {frames} quantum {MTU_FRAME}",
        f"class add dev {dev} parent 1:1 classid 1:20 htb rate {rate - rate // 20}bit ceil {rate}bit prio 1 "
        f"burst {burst} cburst {burst} quantum {MTU_FRAME}",
        f"qdisc add dev {dev} parent 1:10 pfifo limit {queue_packets}",
        f"qdisc add dev {dev} parent 1:20 pfifo limit {queue_packets}",
        # IPv4 total length (bytes 2-3 of the header) below short
        f"filter add dev {dev} parent 1: protocol ip prio 1 u32 match u16 0 "
        f"0x{0xffff & ~(short - 1):04x} at 2 flowid 1:10",
        # ARP, a flow of its own for fq_codel
        f"filter add dev {dev} parent 1: protocol arp prio 2 u32 match u32 0 0 flowid 1:10"])


def sparse_first(ns: str, dev: str, rate_bps: float, queue_packets: int, peers: tuple[str, ...] = ()) -> None:
    """Shape dev's egress to rate with one FIFO of queue_packets per peer
    machine (by destination address; one more for anything else), served
    round-robin a frame at a time, where a peer whose queue keeps under its
    equal share of the rate (pure ACKs, syncs) is served ahead of the ones
    that borrow: htb, a class per peer.  A connection's packets stay in
    order, as in fq_codel (one flow queue per connection, which is one per
    peer for MPI), and as in the packet simulator's host queue."""
    if len(peers) + 1 > MAX_PEER_CLASSES:
        raise TopocollError("invalid argument", f"--host-queue sparse-first: at most {MAX_PEER_CLASSES} machines "
                            f"(an htb class a peer), not {len(peers) + 1}; use short-first or fifo")
    rate, frames = int(rate_bps), CLASS_BURST
    share = rate // (len(peers) + 1)
    classes = []
    for j in range(len(peers) + 1):
        cls = f"1:{0x100 + j:x}"
        classes += [f"class add dev {dev} parent 1:1 classid {cls} htb rate {share}bit ceil {rate}bit prio 0 "
                    f"burst {frames} cburst {frames} quantum {MTU_FRAME}",
                    f"qdisc add dev {dev} parent {cls} pfifo limit {queue_packets}"]
        if j < len(peers):
            classes.append(f"filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip dst {peers[j]}/32 "
                           f"flowid {cls}")
    htb(ns, dev, rate_bps, f"{0x100 + len(peers):x}", classes)


def fifo(ns: str, dev: str, rate_bps: float, queue_packets: int, peers: tuple[str, ...] = ()) -> None:
    """One FIFO: tbf."""
    clear_root(ns, dev)
    tbf(ns, dev, rate_bps, queue_packets)


def cpu_mask(cpus) -> str:
    """The CPUs as a sysfs cpumask: hex words of 32 bits, the highest first,
    comma-separated (rps_cpus refuses bits past the last CPU)."""
    bits = sum(1 << c for c in cpus)
    return ",".join(reversed([f"{bits >> at & 0xffffffff:08x}" for at in range(0, max(bits.bit_length(), 1), 32)]))


def keep_flow_order(ns: str, dev: str) -> None:
    """RPS on dev's receive queue over every CPU this process may use: a
    frame the veth receives joins the backlog of the CPU its flow's hash
    picks, so a flow's frames are processed in one queue, in order."""
    path = f"/sys/class/net/{dev}/queues/rx-0/rps_cpus"
    proc = sh("tee", path, ns=ns, input=cpu_mask(sorted(os.sched_getaffinity(0))), check=False)
    if proc.returncode != 0:
        raise TopocollError("unsupported", f"testbed: --flow-order kept steers each flow to one CPU (RPS), but "
                                           f"{path} in {ns} could not be written ({proc.stderr.strip()}); a kernel "
                                           "without CONFIG_RPS? '--flow-order any' runs without it")


def peer_addresses(machines: list[str], machine: str) -> tuple[str, ...]:
    """The addresses of every machine but `machine`, in the topology's order."""
    return tuple(address(i) for i, m in enumerate(machines) if m != machine)


# A machine's egress queue by name, each set up as f(ns, dev, rate_bps, queue_packets, peers) (peers: the
# other machines' addresses); the first is the default.
HOST_QUEUES = {"sparse-first": sparse_first, "short-first": short_first, "fifo": fifo}
DEFAULT_HOST_QUEUE = next(iter(HOST_QUEUES))


def up(topo: Topology, topology_arg: str, rate_bps: float, buffer_packets: int = 100,
       rto_min: str | None = None, congestion: str = "cubic", progress=None,
       host_queue: str = DEFAULT_HOST_QUEUE, flow_order: str = DEFAULT_FLOW_ORDER) -> dict:
    """Build the testbed for the topology; returns its record."""
    require_root()
    for what, value, valid in (("host queue", host_queue, HOST_QUEUES), ("flow order", flow_order, FLOW_ORDERS)):
        if value not in valid:
            raise TopocollError("invalid argument", f"{what} '{value}'; valid: {', '.join(valid)}")
    if our_namespaces():
        raise TopocollError("invalid argument", "a testbed is already up ('topocoll testbed down' first)")
    machines, switches = topo.machines, topo.switches
    record = {"topology": topology_arg, "name": topo.name, "rate_bps": rate_bps, "buffer_packets": buffer_packets,
              "rto_min": rto_min or KERNEL_RTO, "congestion": congestion, "host_queue": host_queue,
              "flow_order": flow_order,
              "machines": machines,
              "switches": switches, "addresses": {m: address(i) for i, m in enumerate(machines)},
              "created": time.strftime("%Y-%m-%d %H:%M:%S")}
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    STATE.write_text(json.dumps(record, indent=2))
    try:
        hosts = "127.0.0.1 localhost\n" + "".join(f"{address(i)} {m}\n" for i, m in enumerate(machines))
        for m in machines:
            sh("ip", "netns", "add", machine_ns(m))
            (NETNS_ETC / machine_ns(m)).mkdir(parents=True, exist_ok=True)
            (NETNS_ETC / machine_ns(m) / "hosts").write_text(hosts)
            sh("ip", "link", "set", "lo", "up", ns=machine_ns(m))
        for s in switches:
            ns = switch_ns(s)
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
            sh("ip", "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0", ns=ns)
            sh("ip", "link", "set", "br0", "up", ns=ns)
            for key in ("iptables", "ip6tables", "arptables"):
                sh("sysctl", "-qw", f"net.bridge.bridge-nf-call-{key}=0", ns=ns, check=False)
        port = {s: 0 for s in switches}
        links = topo.links()
        for k, l in enumerate(links):
            child, parent = l["child"], l["parent"]
            bw = l["bandwidth"] or rate_bps
            if child in machines:
                cns, cdev = machine_ns(child), "eth0"
            else:
                cns, cdev = switch_ns(child), "up0"
            pns, pdev = switch_ns(parent), f"p{port[parent]}"
            port[parent] += 1
            sh("ip", "link", "add", cdev, "netns", cns, "type", "veth", "peer", "name", pdev, "netns", pns)
            for ns, dev in ((cns, cdev), (pns, pdev)):
                sh("ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", ns=ns, check=False)
                if flow_order == "kept":
                    keep_flow_order(ns, dev)
                sh("ip", "link", "set", dev, "up", ns=ns)
            if cdev == "up0":
                sh("ip", "link", "set", cdev, "master", "br0", ns=cns)
            sh("ip", "link", "set", pdev, "master", "br0", ns=pns)
            # the switch's port queue is the buffer; a machine's NIC queue is its txqueuelen
            tbf(pns, pdev, bw, buffer_packets)
            if child in machines:
                HOST_QUEUES[host_queue](cns, cdev, bw, NIC_QUEUE, peer_addresses(machines, child))
            else:
                tbf(cns, cdev, bw, buffer_packets)
            if progress:
                progress(k + 1, len(links))
        for i, m in enumerate(machines):
            ns = machine_ns(m)
            sh("ip", "addr", "add", f"{address(i)}/16", "dev", "eth0", ns=ns)
            route = ["ip", "route", "replace", f"{SUBNET}.0.0/16", "dev", "eth0", "congctl", congestion]
            if rto_min:
                route += ["rto_min", rto_min]
            sh(*route, ns=ns)
    except BaseException:
        down()
        raise
    return record


def down() -> list[str]:
    """Remove every namespace this tool made (by prefix), their /etc/netns
    entries and the record; returns what was removed."""
    require_root()
    removed = []
    for ns in our_namespaces():
        sh("ip", "netns", "delete", ns, check=False)
        removed.append(ns)
    if NETNS_ETC.is_dir():
        for d in NETNS_ETC.glob(PREFIX + "*"):
            shutil.rmtree(d, ignore_errors=True)
    STATE.unlink(missing_ok=True)
    if STATE_DIR.is_dir() and not any(STATE_DIR.iterdir()):
        STATE_DIR.rmdir()
    return removed


def status() -> dict | None:
    """The record of the testbed that is up (None if none), with the
    namespaces found."""
    found = our_namespaces() if os.geteuid() == 0 else []
    if not STATE.exists():
        return {"up": False, "stray_namespaces": found} if found else None
    record = json.loads(STATE.read_text())
    record.setdefault("host_queue", "fifo")        # a record from before the option
    record.setdefault("flow_order", "any")         # likewise
    expected = {machine_ns(m) for m in record["machines"]} | {switch_ns(s) for s in record["switches"]}
    record["up"] = expected <= set(found)
    record["missing"] = sorted(expected - set(found))
    return record
