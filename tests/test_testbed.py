"""The emulated switched cluster: a 4-machine testbed comes up, an all-to-all
runs on it with every byte right, and it comes down leaving nothing behind."""

import os
import re
import subprocess
import time

import pytest

from topocoll.cli import main
from topocoll import _core
from topocoll.testbed import mpi, net

from .conftest import ALGORITHMS
from .mpi_util import BUILD, pmpi_lib

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root (CI runs as root)"), pytest.mark.mpi]


def namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [l.split()[0] for l in out.splitlines() if l.startswith(net.PREFIX)]


@pytest.fixture
def testbed():
    main(["testbed", "down"])
    assert main(["testbed", "up", "star:2,2", "--rate", "100mbit"]) == 0
    yield
    main(["testbed", "down"])


def test_up_run_down(testbed, capsys):
    assert sorted(namespaces()) == sorted([net.machine_ns(f"n{i}") for i in range(4)] +
                                          [net.switch_ns("s0"), net.switch_ns("s1")])
    assert main(["testbed", "status"]) == 0
    # every link shaped: a tbf at 100 Mbit/s on each end, the switch ports with a 100-packet queue
    qd = subprocess.run(["ip", "netns", "exec", net.switch_ns("s0"), "tc", "qdisc", "show"],
                        capture_output=True, text=True).stdout
    # tc shows the 100-packet limit as the time it takes to drain past the
    # burst: (100 frames of 1514 B - burst) at the rate
    m = re.search(r"tbf .*rate (\d+)Mbit burst (\d+)b lat ([\d.]+)ms", qd)
    assert m, qd
    rate, burst, lat = int(m.group(1)) * 1e6, int(m.group(2)), float(m.group(3))
    assert rate == 100e6 and lat == pytest.approx((100 * 1514 - burst) * 8 / rate * 1e3, abs=0.1)
    # each machine is its own node: its hostname is its name
    host = subprocess.run(["ip", "netns", "exec", net.machine_ns("n2"), "unshare", "--uts", "sh", "-c",
                           "hostname n2 && hostname"], capture_output=True, text=True).stdout.strip()
    assert host == "n2"
    env = {"LD_PRELOAD": str(pmpi_lib("openmpi")), "TOPOCOLL_TOPOLOGY": "star:2,2",
           "TOPOCOLL_ALLTOALL": "faraj-yuan", "TOPOCOLL_STATS": "1", "TOPOCOLL_VERBOSE": "1"}
    proc = mpi.run([str(BUILD / "alltoall_check"), "0", "1", "1000", "65536"], env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    calls, errors = map(int, re.search(r"calls=(\d+) errors=(\d+)", proc.stdout).groups())
    assert errors == 0
    # ranks were mapped to machines by their processor names (no TOPOCOLL_RANK_MAP)
    assert f"topocoll: alltoall faraj-yuan calls={calls}" in proc.stderr
    assert "(one rank per machine)" in proc.stderr
    # the testbed passes its rate, so the executor paced (65536-int blocks go in pieces)
    m = re.search(r"topocoll: pacing steps=(\d+) split-messages=(\d+)", proc.stderr)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, proc.stderr[-2000:]
    # a machine's queue has a class per peer (and one for the rest), and every peer's carried packets
    sent = host_classes("n0")
    peers = [f"1:{0x100 + j:x}" for j in range(3)]
    assert set(sent) == {"1:1", *peers, "1:103"}
    assert all(sent[c] > 0 for c in peers) and sent["1:1"] == sum(v for c, v in sent.items() if c != "1:1")


def host_classes(machine):
    """Packets each htb class of a machine's interface has sent."""
    out = subprocess.run(["ip", "netns", "exec", net.machine_ns(machine), "tc", "-s", "class", "show", "dev", "eth0"],
                         capture_output=True, text=True).stdout
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"class htb (\S+) .*\n Sent \d+ bytes (\d+) pkt", out)}


SINK = """
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("", 5999)); s.listen(8)
def drain(c):
    while c.recv(1 << 16):
        pass
while True:
    c = s.accept()[0]; threading.Thread(target=drain, args=(c,), daemon=True).start()
"""

ECHO = """
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("", 5999))
while True:
    data, addr = u.recvfrom(64)
    u.sendto(data, addr)
"""

PROBE = """
import socket, sys, threading, time
sink, echo = sys.argv[1:3]
def bulk():
    c = socket.create_connection((sink, 5999)); c.sendall(b"x" * (8 << 20)); c.close()
b = threading.Thread(target=bulk); b.start(); time.sleep(0.3)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(5)
for k in range(10):
    t0 = time.monotonic(); u.sendto(b"probe", (echo, 5999)); u.recvfrom(64)
    print((time.monotonic() - t0) * 1e3); time.sleep(0.02)
b.join()
"""


def set_host_queues(kind):
    for m in ("n0", "n1", "n2", "n3"):
        net.HOST_QUEUES[kind](net.machine_ns(m), "eth0", 100e6, net.NIC_QUEUE,
                              net.peer_addresses(["n0", "n1", "n2", "n3"], m))


def test_host_queue_sends_small_packets_first(testbed):
    """While a machine's interface is backlogged with bulk data, a small
    packet leaves at once under sparse-first and short-first and behind the
    backlog under fifo: round trips of small UDP probes from n0 to n2
    (another switch: the probes share no queue with the data but n0's) while
    n0 sends 8 MB to n1."""
    def probe_during_bulk():
        peers = [subprocess.Popen(["ip", "netns", "exec", net.machine_ns(m), "python3", "-c", code])
                 for m, code in (("n1", SINK), ("n2", ECHO))]
        try:
            time.sleep(0.3)
            out = subprocess.run(["ip", "netns", "exec", net.machine_ns("n0"), "python3", "-c", PROBE,
                                  net.address(1), net.address(2)], capture_output=True, text=True, timeout=60)
        finally:
            for p in peers:
                p.kill()
                p.wait()
        return sorted(float(x) for x in out.stdout.split())
    # A full-size packet takes 0.12 ms at 100 Mbit/s; fifo's backlog behind
    # the bulk connection is tens of them (7-13 ms measured idle). The python
    # probes themselves add up to ~1 ms on a busy 2-core machine, hence the
    # bounds: a median under 2.5 ms (no more than ~20 packets ahead) for the
    # sparse queues, over 4 ms and 4x theirs for fifo.
    sparse = probe_during_bulk()
    assert len(sparse) == 10 and sparse[5] < 2.5, sparse            # sparse-first: no wait behind the data
    set_host_queues("short-first")
    short = probe_during_bulk()
    assert len(short) == 10 and short[5] < 2.5, short               # short-first: the same
    set_host_queues("fifo")
    # fifo's backlog is the bulk connection's window: once in a fresh-clone
    # CI run its slow start ended early and every probe waited 1.5-1.7 ms
    # (about 13 packets), so the bulk runs again, at most three times,
    # until it has built a backlog
    for _ in range(3):
        slow = probe_during_bulk()
        if len(slow) == 10 and slow[5] > 4.0:
            break
    assert len(slow) == 10 and slow[5] > 4.0, slow                  # fifo: behind several ms of data
    assert slow[5] > 4 * max(sparse[5], short[5]), (sparse, short, slow)


ORDER_SINK = """
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("", 6000)); u.settimeout(3)
got = []
try:
    while True:
        got.append(int(u.recv(2048)[:8]))
except socket.timeout:
    pass
print(" ".join(map(str, got)))
"""

ORDER_SOURCE = """
import socket, sys
import time
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.sendto(b"%08d" % -1, (sys.argv[1], 6000)); time.sleep(0.3)    # the peer's address resolved first
for k in range(300):
    u.sendto(b"%08d" % k + (b"x" * 1400 if k % 2 == 0 else b""), (sys.argv[1], 6000))
"""


def test_host_queue_keeps_a_flow_in_order(testbed):
    """Full-size and small datagrams to one peer, alternating, faster than
    the link: under sparse-first they arrive in the order sent (one queue a
    peer, as fq_codel keeps a flow's packets in order, so a connection's ACKs
    never overtake its own data); under short-first the small ones overtake
    the large ones queued before them."""
    def arrivals():
        sink = subprocess.Popen(["ip", "netns", "exec", net.machine_ns("n1"), "python3", "-c", ORDER_SINK],
                                stdout=subprocess.PIPE, text=True)
        try:
            time.sleep(0.3)
            subprocess.run(["ip", "netns", "exec", net.machine_ns("n0"), "python3", "-c", ORDER_SOURCE,
                            net.address(1)], check=True, timeout=60)
            out = sink.communicate(timeout=30)[0]
        finally:
            sink.kill()
            sink.wait()
        return [int(x) for x in out.split() if int(x) >= 0]
    def overtaken(got):     # datagrams that arrived after one sent later
        return sum(1 for i in range(1, len(got)) if got[i] < max(got[:i]))
    got = arrivals()
    assert len(got) > 250 and overtaken(got) == 0, got                # sparse-first: in order
    set_host_queues("short-first")
    got = arrivals()
    assert len(got) > 250 and overtaken(got) > 50, got                # short-first: small ones jump the queue


BURST = """
import socket, struct, sys, threading, time
cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))   # every frame of eth0
cap.bind(("eth0", 0)); cap.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
cap.setsockopt(socket.SOL_SOCKET, 35, 1)                                   # SO_TIMESTAMPNS
cs = [socket.create_connection((p, 5999)) for p in sys.argv[1:]]
for k in range(4):                                 # windows open, then the queue idles
    for c in cs:
        c.sendall(b"w" * 65536)
    time.sleep(0.3)
cap.settimeout(0.01)
try:
    while True:
        cap.recv(65536)
except socket.timeout:
    pass
def capture():
    cap.settimeout(0.5)
    try:
        while True:
            data, anc, _, addr = cap.recvmsg(65536, 64)
            if addr[2] == socket.PACKET_OUTGOING and anc:
                sec, ns = struct.unpack("qq", anc[0][2][:16])
                print(sec * 10**9 + ns, len(data))
    except socket.timeout:
        pass
t = threading.Thread(target=capture); t.start(); time.sleep(0.05)
for c in cs:                                       # 64 KB to each peer at once
    c.send(b"b" * 65536)
t.join()
"""


@pytest.mark.parametrize("kind", list(net.HOST_QUEUES))
def test_host_queue_holds_the_link_rate_at_the_millisecond(testbed, kind):
    """A machine with 64 KB for each of 3 peers after an idle spell sends
    no more in any millisecond than a NIC at the link's rate could after
    idling: the shapers' bucket plus a millisecond at the rate (and a frame
    of rounding), by the kernel's time of each frame leaving eth0.  Per-peer
    htb classes alone let 30-38 KB through at 100 Mbit/s, 57 KB with 8
    peers; the tbf above them holds 24 KB."""
    set_host_queues(kind)
    sinks = [subprocess.Popen(["ip", "netns", "exec", net.machine_ns(m), "python3", "-c", SINK])
             for m in ("n1", "n2", "n3")]
    try:
        time.sleep(0.3)
        out = subprocess.run(["ip", "netns", "exec", net.machine_ns("n0"), "python3", "-c", BURST,
                              *(net.address(i) for i in (1, 2, 3))],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    finally:
        for p in sinks:
            p.kill()
            p.wait()
    frames = [tuple(map(int, l.split())) for l in out.splitlines()]
    assert sum(n for _, n in frames) > 3 * 65536, out[-2000:]          # the whole burst was seen
    most, j, inside = 0, 0, 0
    for t, n in frames:                                                 # the busiest sliding millisecond
        inside += n
        while t - frames[j][0] >= 1_000_000:
            inside -= frames[j][1]
            j += 1
        most = max(most, inside)
    assert most <= _core.shaper_bucket(100e6) + 100e6 / 8 * 1e-3 + net.MTU_FRAME, (kind, most)


def rps_masks():
    """Each veth's rps_cpus (the CPUs its received frames are steered to), by namespace and device."""
    masks = {}
    for ns in namespaces():
        out = subprocess.run(["ip", "netns", "exec", ns, "sh", "-c",
                              "for d in /sys/class/net/*/queues/rx-0/rps_cpus; do echo $d $(cat $d); done"],
                             capture_output=True, text=True).stdout
        for path, mask in (line.split() for line in out.splitlines()):
            dev = path.split("/")[4]
            if dev not in ("lo", "br0"):
                masks[ns, dev] = mask
    return masks


def test_each_flow_crosses_in_order_unless_asked(testbed, capsys):
    """By default every veth end steers a flow's frames to one CPU by the
    flow's hash (RPS over the CPUs this process may use), so a flow crosses
    the emulated network in order; --flow-order any leaves the kernel's
    default (no steering), and the bench runs only on a testbed whose flow
    order is the one asked for."""
    from topocoll import Topology, TopocollError
    from topocoll.bench.testbed import TestbedBackend
    links = len(Topology.synthetic("star:2,2").links())
    masks = rps_masks()
    assert len(masks) == 2 * links
    cpus = sum(1 << c for c in os.sched_getaffinity(0))
    assert {int(m.replace(",", ""), 16) for m in masks.values()} == {cpus}, masks
    assert net.status()["flow_order"] == "kept"
    assert main(["testbed", "status"]) == 0 and "flow order kept" in capsys.readouterr().out
    main(["testbed", "down"])
    assert main(["testbed", "up", "star:2,2", "--flow-order", "any"]) == 0
    masks = rps_masks()
    assert len(masks) == 2 * links and all(int(m.replace(",", ""), 16) == 0 for m in masks.values()), masks
    with pytest.raises(TopocollError, match="flow_order=any, not kept"):
        TestbedBackend("star:2,2", Topology.synthetic("star:2,2"), 100e6)
    with pytest.raises(TopocollError, match="flow order 'sorted'"):
        net.up(Topology.synthetic("3"), "3", 100e6, flow_order="sorted")


def test_cpu_masks_as_sysfs_writes_them():
    assert net.cpu_mask([0, 1]) == "00000003"
    assert net.cpu_mask([1]) == "00000002"
    assert net.cpu_mask([0, 33]) == "00000002,00000001"
    assert net.cpu_mask(range(64)) == "ffffffff,ffffffff"


def test_down_leaves_nothing(capsys):
    main(["testbed", "down"])
    assert main(["testbed", "up", "chain:1,1", "--host-queue", "fifo"]) == 0
    assert namespaces()
    qd = subprocess.run(["ip", "netns", "exec", net.machine_ns("n0"), "tc", "qdisc", "show", "dev", "eth0"],
                        capture_output=True, text=True).stdout
    assert qd.startswith("qdisc tbf") and "htb" not in qd
    assert net.status()["host_queue"] == "fifo"
    assert main(["testbed", "down"]) == 0
    assert namespaces() == []
    assert not net.STATE.exists() and not net.STATE_DIR.exists()
    assert not list(net.NETNS_ETC.glob(net.PREFIX + "*")) if net.NETNS_ETC.exists() else True
    # the host's own interfaces were never touched: no veth of ours in the root namespace
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "topocoll" not in links and " p0@" not in links and "eth0@" not in links


def test_refuses_a_second_testbed(testbed):
    from topocoll import Topology, TopocollError
    with pytest.raises(TopocollError, match="already up"):
        net.up(Topology.synthetic("3"), "3", 100e6)
    # the bench runs on the testbed that is up only if it has the queues asked for
    from topocoll.bench.testbed import TestbedBackend
    with pytest.raises(TopocollError, match="host_queue=sparse-first, not fifo"):
        TestbedBackend("star:2,2", Topology.synthetic("star:2,2"), 100e6, host_queue="fifo")
    with pytest.raises(TopocollError, match="buffer_packets=100, not 50"):
        TestbedBackend("star:2,2", Topology.synthetic("star:2,2"), 100e6, buffer_packets=50)
    with pytest.raises(TopocollError, match="host queue 'fq'"):
        net.up(Topology.synthetic("3"), "3", 100e6, host_queue="fq")


def test_short_bench_on_the_testbed(capsys, tmp_path):
    main(["testbed", "down"])
    csv_path = tmp_path / "t.csv"
    starts = tmp_path / "starts.txt"
    assert main(["bench", "star:2,2", "--backend", "testbed", "--sizes", "32K", "--repetitions", "2",
                 "--algorithms", "faraj-yuan,native", "--quiet", "--csv", str(csv_path),
                 "--record-starts", str(starts)]) == 0
    import csv
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 2 * 2 and {r["backend"] for r in rows} == {"testbed"}
    assert {r["topology"] for r in rows} == {"star:2,2"} and "load_average=" in rows[0]["settings"]
    # how far apart the ranks started each timed call, by the machine's one clock: a median per algorithm
    skews = re.findall(r"(faraj-yuan|native) ([0-9.]+)ms", rows[0]["settings"].split("start_skew=")[1])
    assert [a for a, _ in skews] == ["faraj-yuan", "native"] and all(0 <= float(v) < 1000 for _, v in skews)
    out = capsys.readouterr().out
    assert "ranks left the barrier before each timed call this far apart" in out
    # what the hypervisor took of the cores while each algorithm ran, a share in [0, 100] %
    steal = re.findall(r"(faraj-yuan|native) ([0-9.]+)%", rows[0]["settings"].split("host_steal=")[1])
    assert [a for a, _ in steal] == ["faraj-yuan", "native"] and all(0 <= float(v) <= 100 for _, v in steal)
    assert "the hypervisor took this share of this machine's cores while each algorithm ran" in out
    # and each rank's start, a line a timed call, as the packet back-end's --starts reads them
    lines = [l.split() for l in starts.read_text().splitlines() if not l.startswith("#")]
    assert [l[:3] for l in lines] == [[a, "32768", r] for a in ("faraj-yuan", "native") for r in ("0", "1")], lines
    offsets = [[float(x) for x in l[3:]] for l in lines]
    assert all(len(o) == 4 and min(o) == 0 and max(o) < 1 for o in offsets), offsets
    assert namespaces() == []          # the bench brought it up, so it took it down
    assert not net.STATE_DIR.exists()


def test_every_algorithm_in_the_testbed_bench(capsys, tmp_path):
    """The bench checks every byte once per size: every registered algorithm
    on real TCP, one rank a machine and then two."""
    main(["testbed", "down"])
    csv_path = tmp_path / "all.csv"
    assert main(["bench", "star:2,2", "--backend", "testbed", "--sizes", "8K", "--repetitions", "1",
                 "--algorithms", "all", "--segment-size", "3000", "--quiet", "--csv", str(csv_path)]) == 0
    import csv
    rows = list(csv.DictReader(csv_path.open()))
    assert {r["algorithm"] for r in rows} == set(ALGORITHMS) | {"native"}
    assert main(["bench", "star:2,2", "--backend", "testbed", "--sizes", "8K", "--repetitions", "1",
                 "--ranks-per-machine", "2", "--algorithms", "hierarchical-factor,faraj-yuan", "--quiet",
                 "--csv", str(csv_path)]) == 0
    rows = list(csv.DictReader(csv_path.open()))
    assert {r["ranks"] for r in rows} == {"8"} and len(rows) == 2
    assert namespaces() == []


def test_bcast_bench_on_the_testbed(capsys):
    """The rooted collectives on real TCP: every byte of every broadcast
    checked, fewer messages between switches for multilevel than binomial."""
    main(["testbed", "down"])
    assert main(["bench", "star:2,2", "--backend", "testbed", "--collective", "bcast", "--ranks-per-machine", "2",
                 "--algorithms", "multilevel,binomial", "--sizes", "4K", "--repetitions", "1", "--quiet"]) == 0
    rows = {l.split()[0]: l.split() for l in capsys.readouterr().out.splitlines() if "L0=" in l}
    top = {alg: float(r[-3].split("=")[1]) for alg, r in rows.items()}
    assert top["multilevel"] == 2 and top["binomial"] > top["multilevel"]
    assert namespaces() == []


def test_executor_env_passes_rate_and_nap_unless_given():
    from topocoll._core import parse_rate
    record = {"rate_bps": 1e8}
    env = mpi.executor_env(record, {})
    assert set(env) == {"TOPOCOLL_BANDWIDTH", "TOPOCOLL_NAP", "TOPOCOLL_PACE_LEAD_SHARE"}
    assert env["TOPOCOLL_NAP"] == mpi.TESTBED_NAP and env["TOPOCOLL_PACE_LEAD_SHARE"] == "0"   # leads measured there
    # the rate the library reads is the testbed's (a bare number would be Mbit/s)
    assert parse_rate(env["TOPOCOLL_BANDWIDTH"]) == 1e8
    given = {"TOPOCOLL_BANDWIDTH": "1Gbit", "TOPOCOLL_NAP": "0", "TOPOCOLL_PACE_LEAD_SHARE": "8"}
    assert mpi.executor_env(record, dict(given)) == given


def test_demo_runs_the_emulated_cluster(capsys, tmp_path):
    """As root, the demo brings up the 12-machine chain, times faraj-yuan
    against the MPI's own all-to-all, prints the table and the speed-up,
    writes the figure, and leaves nothing behind."""
    assert main(["demo", "--no-simgrid", "--no-packet", "--testbed-sizes", "64K", "--testbed-repetitions", "1",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"faraj-yuan\s+[\d.]+\s+[\d.]+\s+[\d.]+%", out) and re.search(r"native\s+[\d.]+", out)
    assert re.search(r"faraj-yuan against the MPI's own MPI_Alltoall on the emulated cluster: [\d.]+x at 64K", out)
    assert (tmp_path / "testbed-chain-4-4-4.png").stat().st_size > 0
    assert namespaces() == []


@pytest.mark.parametrize("argv, item", [
    (["bench", "star:2,2", "--backend", "testbed", "--sizes", "8K", "--mca", "btl_tcp_sndbuf"], "btl_tcp_sndbuf"),
    (["bench", "star:2,2", "--backend", "testbed", "--sizes", "8K", "--mca", "=65536"], "=65536"),
    (["testbed", "run", "--mca", "btl_tcp_sndbuf", "--", "true"], "btl_tcp_sndbuf"),
])
def test_a_malformed_mca_parameter_is_refused(argv, item, capsys):
    """An --mca item without KEY= is refused, naming it, before anything
    runs (bench once dropped it silently), not reported as a missing testbed."""
    main(["testbed", "down"])
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--mca {item}: expected KEY=VALUE" in err and "Traceback" not in err, err
    assert namespaces() == []


def test_sparse_first_refuses_more_peers_than_htb_has_classes():
    from topocoll import TopocollError
    peers = tuple(net.address(i) for i in range(net.MAX_PEER_CLASSES))
    with pytest.raises(TopocollError, match=f"at most {net.MAX_PEER_CLASSES} machines"):
        net.sparse_first("topocoll-m-none", "eth0", 1e8, net.NIC_QUEUE, peers)


def test_short_first_filter_matches_the_cores_short_packets(monkeypatch):
    """The short-first htb's u32 filter sends a packet to the priority class
    exactly when its IPv4 length is under the core's short-packet length,
    the one the simulator's sparse-first queue uses."""
    batches = []
    monkeypatch.setattr(net, "sh", lambda *args, **kw: batches.append(kw.get("input", "")))
    net.short_first("ns", "eth0", 1e8, 100)
    m = re.search(r"protocol ip prio 1 u32 match u16 0 0x([0-9a-f]{4}) at 2 flowid 1:10", "".join(batches))
    assert m, batches
    mask, short = int(m.group(1), 16), int(_core.default("short_packet"))
    assert [n for n in range(1600) if n & mask == 0] == list(range(short))


def test_the_hypervisors_share_of_the_cores():
    """steal over a stretch of busy time is a share in [0, 1] of all the
    cores' ticks; readings out of order or missing give none"""
    from topocoll.bench.testbed import cpu_ticks, steal_share
    before = cpu_ticks()
    assert before is not None and 0 <= before[0] <= before[1]
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass
    after = cpu_ticks()
    share = steal_share(before, after)
    assert after[1] > before[1] and share is not None and 0 <= share <= 1
    assert steal_share((10, 100), (15, 200)) == pytest.approx(0.05)
    assert steal_share(after, before) is None and steal_share(None, after) is None
