/* The switch tree in ns-3 (tree_net.h says what it builds). */
#include "tree_net.h"

#include "event_trace.h"
#include "probing_tcp.h"

#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>

using namespace ns3;

namespace {

/* Segments past their machine's queue that their sockets still count for
 * TCP small queues (net_options::tsq_until_received), by the id of their
 * InNetworkTag: the socket and the bytes the queue reported.  A segment
 * taken by a machine's device, or dropped anywhere, is released.  On the
 * testbed a frame keeps its socket (and the destructor that uncharges it,
 * tcp_wfree) through the veths and bridges until the receiving machine's
 * IP layer orphans it or a queue frees it; a NIC frees it at its transmit
 * completion (docs/results/2026-12-05-packet-small-queues-in-the-network.md). */
std::unordered_map<uint64_t, std::pair<small_queue_owner *, uint32_t>> g_in_network;
uint64_t g_in_network_next = 0;
/* A segment's place in g_in_network, on the packet and every hop's copy of
 * it (ns-3's packet uid will not do: the segments TCP cuts from one
 * buffer share theirs) */
class InNetworkTag : public Tag {
  public:
    uint64_t id = 0;
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("topocoll::InNetworkTag").SetParent<Tag>().AddConstructor<InNetworkTag>();
        return tid;
    }
    TypeId GetInstanceTypeId() const override { return GetTypeId(); }
    uint32_t GetSerializedSize() const override { return 8; }
    void Serialize(TagBuffer b) const override { b.WriteU64(id); }
    void Deserialize(TagBuffer b) override { id = b.ReadU64(); }
    void Print(std::ostream &os) const override { os << "in-network=" << id; }
};
void tsq_release(Ptr<const Packet> p)
{
    InNetworkTag tag;
    if (g_in_network.empty() || !p || !p->PeekPacketTag(tag)) return;
    auto it = g_in_network.find(tag.id);
    if (it == g_in_network.end()) return;
    auto [s, bytes] = it->second;
    g_in_network.erase(it);
    s->left(bytes);
}

/* The point-to-point header a device sends and queues with a packet, and a
 * full IPv4 packet with it. */
constexpr uint32_t LINK_HEADER_BYTES = 2;
constexpr uint32_t FULL_FRAME = 1500 + LINK_HEADER_BYTES;

/* A veth's rate under a shaper of `rate` (gso_clumps): fast enough that a
 * burst reaches the next queue at once (a frame in at most 1.2 us). */
DataRate veth_rate(double rate) { return DataRate((uint64_t)std::max(1e10, 10 * rate)); }

/* Frames of a flow leaving a machine less than this apart are one clump
 * (host_clumps): the gap the testbed's captures were read with
 * (docs/results/2026-12-05-packet-probe-from-the-top.md), far above a frame
 * on the veth (1.2 us) and far below one on a shaped link (120 us at 100 Mbit/s) */
constexpr double CLUMP_GAP_S = 20e-6;

/* Routing on a tree: every node holds, per destination machine, the
 * interface that leads towards it (down to the child whose subtree holds it,
 * else up).  Packets to a machine's own address are delivered locally. */
class TreeRouting : public Ipv4RoutingProtocol {
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("topocoll::TreeRouting").SetParent<Ipv4RoutingProtocol>().SetGroupName("Internet");
        return tid;
    }
    std::vector<int32_t> out;                               /* per machine: interface, -1 none */
    const std::unordered_map<uint32_t, int> *machine_of = nullptr;   /* address -> machine */
    Ipv4Address own;                                         /* a machine's address; 0 for a switch */
    int machine = -1;                                        /* a machine's rank; -1 for a switch */

    Ptr<Ipv4Route> route_to(Ipv4Address dst)
    {
        auto it = machine_of->find(dst.Get());
        if (it == machine_of->end() || out[it->second] < 0) return nullptr;
        int32_t ifi = out[it->second];
        Ptr<Ipv4Route> r = Create<Ipv4Route>();
        r->SetDestination(dst);
        r->SetGateway(Ipv4Address::GetZero());
        r->SetSource(own == Ipv4Address() ? ipv4->GetAddress(ifi, 0).GetLocal() : own);
        r->SetOutputDevice(ipv4->GetNetDevice(ifi));
        return r;
    }
    Ptr<Ipv4Route> RouteOutput(Ptr<Packet>, const Ipv4Header &h, Ptr<NetDevice>, Socket::SocketErrno &err) override
    {
        Ptr<Ipv4Route> r = route_to(h.GetDestination());
        err = r ? Socket::ERROR_NOTERROR : Socket::ERROR_NOROUTETOHOST;
        return r;
    }
    bool RouteInput(Ptr<const Packet> p, const Ipv4Header &h, Ptr<const NetDevice> idev, UnicastForwardCallback ucb,
                    MulticastForwardCallback, LocalDeliverCallback lcb, ErrorCallback ecb) override
    {
        if (own != Ipv4Address() && h.GetDestination() == own) {
            const int32_t iif = ipv4->GetInterfaceForDevice(idev);
            if (g_freezes.stopped(machine)) {   /* its core is frozen: taken in when it thaws */
                g_freezes.held_in++;
                g_freezes.wait(machine, [lcb, p, h, iif] { lcb(p, h, iif); });
            } else if (g_softirqs.cost > 0) {   /* a core of the host processes it first */
                host_softirq([lcb, p, h, iif] { lcb(p, h, iif); });
            } else {
                lcb(p, h, iif);
            }
            return true;
        }
        Ptr<Ipv4Route> r = route_to(h.GetDestination());
        if (!r) { ecb(p, h, Socket::ERROR_NOROUTETOHOST); return false; }
        ucb(r, p, h);
        return true;
    }
    void NotifyInterfaceUp(uint32_t) override {}
    void NotifyInterfaceDown(uint32_t) override {}
    void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void SetIpv4(Ptr<Ipv4> i) override { ipv4 = i; }
    void PrintRoutingTable(Ptr<OutputStreamWrapper>, Time::Unit) const override {}

  private:
    Ptr<Ipv4> ipv4;
};

class TreeRoutingHelper : public Ipv4RoutingHelper {
  public:
    TreeRoutingHelper *Copy() const override { return new TreeRoutingHelper(*this); }
    Ptr<Ipv4RoutingProtocol> Create(Ptr<Node>) const override { return CreateObject<TreeRouting>(); }
};

/* A machine's egress queue, as the testbed's sparse-first (htb, a class per
 * peer machine) and a stock host's fq_codel serve it: a short packet (a pure
 * ACK, MPI's zero-byte sync) of a flow with nothing queued goes ahead of the
 * bulk, and the bulk is a FIFO per peer machine, the peers served
 * round-robin a packet at a time (htb's quantum is one frame); each FIFO
 * holds `limit` packets.  With sparse_first off the bulk is one FIFO (the
 * testbed's fifo).  A flow's packets never overtake each other, as in the
 * testbed; its short-first (by length alone) is not modelled.  A peer's FIFO
 * is an internal queue taken from a pool while it holds packets, so a
 * machine has as many as it has peers backlogged at once.  It tells a socket
 * when its data segments come in and leave, for TCP small queues
 * (probing_tcp.h). */
class HostQueueDisc : public QueueDisc {
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("topocoll::HostQueueDisc")
                                .SetParent<QueueDisc>()
                                .SetGroupName("TrafficControl")
                                .AddConstructor<HostQueueDisc>();
        return tid;
    }
    HostQueueDisc() : QueueDisc(QueueDiscSizePolicy::NO_LIMITS) {}
    uint32_t limit = 1000;
    bool sparse_first = true;
    bool tsq_until_received = false;  /* a socket counts its data segments on past this queue (g_in_network) */
    uint64_t *peak = nullptr;         /* the most packets any machine's queue held */
    uint64_t *peers_peak = nullptr;   /* the most peers any machine's queue held bulk for */
    gso_count *gso = nullptr;         /* the data segments queued and the GSO packets they made */
    gso_count *clumps = nullptr;      /* shaping: a flow's frames leaving together (CLUMP_GAP_S) */
    uint64_t *clump_max = nullptr;
    int machine = -1;                 /* whose egress (g_freezes: nothing leaves while its core is frozen) */
    uint32_t gso_run = 0;             /* segments of the GSO packet being queued */
    /* gso_clumps: the queue shapes to the link's rate (its device is
     * faster) as the testbed's tbf over its htb over a veth does: the htb
     * picks a peer whose class's bucket is not in debt; the line's tbf lets
     * a packet go when its bucket holds the packet's bytes, a GSO packet
     * whole, its segments one after the other whatever the peer's bucket,
     * and one longer than its bucket split into segments */
    double shape_bps = 0;             /* 0: no shaping, the device paces */
    double bucket_bytes = 0;          /* the line's bucket's depth (its tbf's burst) */
    double peer_bucket_bytes = 0;     /* a peer's bucket's (its class's cburst) */

  private:
    /* a token bucket at the link's rate: its tokens now (bytes; < 0 in debt) */
    struct bucket {
        double tokens = 0;
        Time filled;
        double now(double depth, double bps)
        {
            const Time t = Simulator::Now();
            tokens = std::min(depth, tokens + (t - filled).GetSeconds() * bps / 8);
            filled = t;
            return tokens;
        }
        void pay(double depth, double bps, double bytes)
        {
            now(depth, bps);
            tokens -= bytes;
        }
    };
    bucket root;                      /* the machine's */
    std::unordered_map<uint32_t, bucket> peer_bucket;   /* each peer's */
    EventId wake;                     /* a dequeue at the buckets' next credit */
    bool thaw_armed = false;          /* a dequeue waits for the machine's core to thaw */
    /* shaping: a GSO packet as its socket queued it in one instant */
    struct gso_packet {
        double bytes = 0;             /* its frames' bytes */
        uint32_t left = 0;            /* its segments still queued */
        bool whole = false;           /* its last segment is queued */
        Time at;                      /* when it was queued */
        uint32_t peer = 0;            /* to whom (set as it starts leaving) */
    };
    std::unordered_map<const QueueDiscItem *, std::shared_ptr<gso_packet>> packet_of;   /* a queued segment's */
    std::shared_ptr<gso_packet> queuing;   /* the GSO packet being queued */
    std::shared_ptr<gso_packet> sending;   /* the GSO packet leaving, its rest next */
    std::unordered_map<uint32_t, std::pair<Time, uint32_t>> clump_of;   /* flow -> its last frame out, its clump's frames */
    std::unordered_map<uint32_t, uint32_t> bulk;   /* flow hash -> its packets in the bulk */
    std::unordered_map<const QueueDiscItem *, small_queue_owner *> owner;   /* a queued data segment's socket */
    std::unordered_map<uint32_t, size_t> peer_queue;   /* peer address -> its bulk FIFO (internal queue 1, 2, ...) */
    std::deque<std::pair<size_t, uint32_t>> turn;      /* the backlogged FIFOs and their peers, next first */
    std::vector<size_t> spare;                         /* internal queues free for another peer */

    /* A flow's data frames leaving within CLUMP_GAP_S of each other are one
     * clump, as the testbed's captures at a switch are read */
    void note_clump(Ptr<const QueueDiscItem> item)
    {
        if (!clumps || item->GetSize() < TC_SHORT_PACKET_BYTES) return;
        auto &[last, frames] = clump_of[item->Hash(0)];
        const Time now = Simulator::Now();
        if (frames > 0 && (now - last).GetSeconds() < CLUMP_GAP_S) {
            clumps->grow_packet(frames++);
        } else {
            clumps->add_packet(1);
            frames = 1;
        }
        clumps->segments++;
        last = now;
        *clump_max = std::max<uint64_t>(*clump_max, frames);
    }
    Ptr<QueueDiscItem> leaving(Ptr<QueueDiscItem> item)
    {
        if (item && shape_bps > 0) note_clump(item);
        if (item && !packet_of.empty()) {
            auto g = packet_of.find(PeekPointer(item));
            if (g != packet_of.end()) {
                g->second->left--;
                packet_of.erase(g);
            }
        }
        if (item && !owner.empty()) {
            auto o = owner.find(PeekPointer(item));
            if (o != owner.end()) {
                small_queue_owner *s = o->second;
                owner.erase(o);
                if (tsq_until_received) {   /* counted on until the machine it is for takes it */
                    InNetworkTag tag;
                    tag.id = ++g_in_network_next;
                    item->GetPacket()->AddPacketTag(tag);
                    g_in_network[tag.id] = {s, item->GetSize()};
                } else {
                    s->left(item->GetSize());
                }
            }
        }
        return item;
    }
    Ptr<InternalQueue> new_queue()
    {
        return CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
            "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, limit + 1)));
    }
    /* the bulk FIFO item joins: its peer's under sparse-first, else the one
     * FIFO (peer 0); taken from the pool when the peer has none */
    size_t bulk_queue(Ptr<QueueDiscItem> item)
    {
        uint32_t peer = 0;
        if (Ptr<Ipv4QueueDiscItem> ip = sparse_first ? DynamicCast<Ipv4QueueDiscItem>(item) : nullptr)
            peer = ip->GetHeader().GetDestination().Get();
        auto it = peer_queue.find(peer);
        if (it != peer_queue.end()) return it->second;
        size_t q;
        if (!spare.empty()) {
            q = spare.back();
            spare.pop_back();
        } else {
            AddInternalQueue(new_queue());
            q = GetNInternalQueues() - 1;
        }
        peer_queue.emplace(peer, q);
        turn.emplace_back(q, peer);
        if (peers_peak && sparse_first) *peers_peak = std::max<uint64_t>(*peers_peak, turn.size());   /* fifo: none */
        return q;
    }

    bool DoEnqueue(Ptr<QueueDiscItem> item) override
    {
        uint32_t flow = item->Hash(0);
        auto it = bulk.find(flow);
        bool sparse = sparse_first && item->GetSize() < TC_SHORT_PACKET_BYTES && (it == bulk.end() || it->second == 0);
        size_t band = sparse ? 0 : bulk_queue(item);
        if (GetInternalQueue(band)->GetNPackets() >= limit) {
            DropBeforeEnqueue(item, "queue full");   /* a full FIFO is not empty: its peer keeps its turn */
            return false;
        }
        if (!GetInternalQueue(band)->Enqueue(item)) return false;
        if (band > 0) bulk[flow]++;
        if (small_queue_owner *s = probing_tcp_sender()) {
            owner[PeekPointer(item)] = s;
            s->queued(item->GetSize());
            if (band > 0) {   /* a data segment: it ends its GSO packet unless more follow */
                const bool more = s->gso_follow() > 0;
                if (shape_bps > 0) {
                    if (!queuing || queuing->whole || queuing->at != Simulator::Now()) {
                        queuing = std::make_shared<gso_packet>();
                        queuing->at = Simulator::Now();
                    }
                    queuing->bytes += item->GetSize() + LINK_HEADER_BYTES;
                    queuing->left++;
                    queuing->whole = !more;
                    packet_of[PeekPointer(item)] = queuing;
                }
                gso_run++;
                if (gso) ++gso->segments;
                if (!more) {
                    if (gso) gso->add_packet(gso_run);
                    gso_run = 0;
                }
            }
        }
        if (peak) *peak = std::max<uint64_t>(*peak, GetNPackets());
        return true;
    }
    /* a dequeue when a bucket `debt` bytes short will let a packet go */
    void wake_after(double debt)
    {
        const Time in = Seconds(debt > 0 ? debt * 8 / shape_bps : 0) + NanoSeconds(1);
        if (!wake.IsRunning() || (int64_t)wake.GetTs() > (Simulator::Now() + in).GetTimeStep()) {
            wake.Cancel();
            wake = Simulator::Schedule(in, &QueueDisc::Run, this);
        }
    }
    /* the peer's FIFO first in turn, if it has one */
    bool to_front(uint32_t peer)
    {
        for (size_t k = 0; k < turn.size(); k++)
            if (turn[k].second == peer) {
                std::swap(turn[0], turn[k]);   /* the order of the others matters less than a GSO packet's */
                return true;
            }
        return false;
    }
    Ptr<QueueDiscItem> DoDequeue() override
    {
        if (g_freezes.stopped(machine)) {
            if (!thaw_armed) {
                thaw_armed = true;
                g_freezes.held_out++;
                g_freezes.wait(machine, [q = Ptr<HostQueueDisc>(this)] {
                    q->thaw_armed = false;
                    q->Run();
                });
            }
            return nullptr;
        }
        /* the rest of a GSO packet goes next (to_front), whatever the buckets */
        if (sending && (sending->left == 0 || !to_front(sending->peer))) sending = nullptr;
        if (!sending && shape_bps > 0) {
            if (GetInternalQueue(0)->IsEmpty() && turn.empty()) return nullptr;
            if (GetInternalQueue(0)->IsEmpty()) {   /* the first peer in turn whose own bucket lets it send */
                double least = -1e300;
                size_t tried = 0;
                for (; tried < turn.size(); tried++) {
                    const double t = peer_bucket[turn.front().second].now(peer_bucket_bytes, shape_bps);
                    if (t >= 0) break;
                    least = std::max(least, t);
                    turn.push_back(turn.front());
                    turn.pop_front();
                }
                if (tried == turn.size()) {
                    wake_after(-least);
                    return nullptr;
                }
            }
            /* The line's tbf above the htb: a packet leaves when the bucket
             * holds its bytes, a GSO packet whole; one longer than the bucket
             * the tbf split into segments as it took it (tbf_segment). */
            Ptr<const QueueDiscItem> head = GetInternalQueue(0)->IsEmpty()
                                                ? GetInternalQueue(turn.front().first)->Peek()
                                                : GetInternalQueue(0)->Peek();
            double need = head->GetSize() + LINK_HEADER_BYTES;
            auto g = packet_of.find(PeekPointer(head));
            if (g != packet_of.end()) {
                const gso_packet &p = *g->second;
                if (!p.whole && p.at == Simulator::Now()) {   /* the rest of it comes in this instant */
                    wake_after(0);
                    return nullptr;
                }
                if (p.bytes <= bucket_bytes) need = p.bytes;
            }
            if (const double t = root.now(bucket_bytes, shape_bps); t < need) {
                wake_after(need - t);
                return nullptr;
            }
        }
        Ptr<QueueDiscItem> item;
        if (!sending && (item = GetInternalQueue(0)->Dequeue())) return leaving(spent(item, 0));
        if (turn.empty()) return nullptr;
        auto [q, peer] = turn.front();
        turn.pop_front();
        item = GetInternalQueue(q)->Dequeue();
        if (auto g = item && !sending ? packet_of.find(PeekPointer(item)) : packet_of.end();
            g != packet_of.end() && g->second->bytes <= bucket_bytes && g->second->left > 1)
            sending = g->second, sending->peer = peer;
        if (!GetInternalQueue(q)->IsEmpty()) {
            turn.emplace_back(q, peer);
        } else {   /* back to the pool */
            peer_queue.erase(peer);
            spare.push_back(q);
        }
        if (item) {
            auto b = bulk.find(item->Hash(0));
            if (b != bulk.end() && --b->second == 0) bulk.erase(b);
        }
        return leaving(spent(item, peer));
    }
    /* the buckets pay for a packet leaving, its frame's bytes on the link */
    Ptr<QueueDiscItem> spent(Ptr<QueueDiscItem> item, uint32_t peer)
    {
        if (item && shape_bps > 0) {
            const double bytes = item->GetSize() + LINK_HEADER_BYTES;
            root.pay(bucket_bytes, shape_bps, bytes);
            if (peer) peer_bucket[peer].pay(peer_bucket_bytes, shape_bps, bytes);
        }
        return item;
    }
    void DoDispose() override
    {
        wake.Cancel();
        QueueDisc::DoDispose();
    }
    bool CheckConfig() override
    {
        if (GetNInternalQueues() == 0) AddInternalQueue(new_queue());   /* the sparse band; bulk FIFOs come as needed */
        return true;
    }
    void InitializeParams() override {}
};

/* With --trace-tcp, a TCP segment dropped at `where`, as its connection's
 * line (event_trace.h): its sequence number and bytes of data */
void trace_lost(const char *where, Ptr<const QueueDiscItem> item)
{
    Ptr<const Ipv4QueueDiscItem> ip = DynamicCast<const Ipv4QueueDiscItem>(item);
    TcpHeader th;
    if (!event_tracing_tcp() || !ip || ip->GetHeader().GetProtocol() != TcpL4Protocol::PROT_NUMBER ||
        !item->GetPacket()->PeekHeader(th))
        return;
    const std::string conn = probing_tcp_conn_name(ip->GetHeader().GetSource(), th.GetSourcePort(),
                                                   ip->GetHeader().GetDestination(), th.GetDestinationPort());
    event_trace("tcp %s lost %s %u %u", conn.c_str(), where, th.GetSequenceNumber().GetValue(),
                item->GetPacket()->GetSize() - th.GetSerializedSize());
}
/* A packet dropped: counted where the JSON reads it, no longer counted by
 * its socket's small queues, and traced (--trace; with its queue's item,
 * the TCP segment too) */
void host_drop(uint64_t *count, Ptr<const Packet> packet, Ptr<const QueueDiscItem> item = nullptr)
{
    ++*count;
    tsq_release(packet);
    event_trace("drop host");
    if (item) trace_lost("host", item);
}
void port_drop(port_drops *pd, Ptr<const Packet> packet, Ptr<const QueueDiscItem> item = nullptr)
{
    ++pd->drops;
    ++*pd->total;
    tsq_release(packet);
    event_trace("drop %s", pd->port.c_str());
    if (item) trace_lost(pd->port.c_str(), item);
}
void unplaced_drop(tree_net *tn, Ptr<const Packet> packet)
{
    ++tn->drops_switch;
    ++tn->drops_unplaced;
    tsq_release(packet);
    event_trace("drop unplaced");
}
void device_drop(uint64_t *count, Ptr<const Packet> packet)
{
    ++*count;
    tsq_release(packet);
}

}  // namespace

host_freezes g_freezes;
host_softirqs g_softirqs;

void small_queue_forget(const small_queue_owner *s)
{
    for (auto it = g_in_network.begin(); it != g_in_network.end();)
        it = it->second.first == s ? g_in_network.erase(it) : std::next(it);
}

std::string tree_net_check(const tc_topology *t, const net_options &o)
{
    for (int l = 0; l < tc_topology_num_links(t); l++) {
        int child, parent;
        double bw, lat;
        tc_topology_link(t, l, &child, &parent, &bw, &lat);
        if (child < 0 || parent < 0) return "link " + std::to_string(l) + " has no ends";
        const double rate = bw > 0 ? bw : o.rate_bps, delay = lat > 0 ? lat : o.latency_s;
        const std::string link = std::string("link ") + tc_topology_node_name(t, child) + " - " +
                                 tc_topology_node_name(t, parent);
        char have[32], bound[32];
        if (!(rate >= TREE_NET_MIN_RATE_BPS && rate <= TREE_NET_MAX_RATE_BPS)) {
            const bool low = rate < TREE_NET_MIN_RATE_BPS;
            tc_format_rate(rate, have, sizeof have);
            tc_format_rate(low ? TREE_NET_MIN_RATE_BPS : TREE_NET_MAX_RATE_BPS, bound, sizeof bound);
            return link + (bw > 0 ? "" : " (the rate for links without one)") + ": " + have +
                   (low ? " is below the packet simulator's least" : " is above the packet simulator's greatest") +
                   " link rate, " + bound;
        }
        if (!(delay >= 0 && delay <= TREE_NET_MAX_LATENCY_S)) {
            tc_format_time(delay, have, sizeof have);
            tc_format_time(TREE_NET_MAX_LATENCY_S, bound, sizeof bound);
            return link + ": a latency of " + have + " is over the packet simulator's limit of " + bound + " a link";
        }
    }
    return "";
}

std::string tree_net_build(const tc_topology *t, const net_options &o, tree_net &net)
{
    if (std::string why = tree_net_check(t, o); !why.empty()) return why;
    static std::unordered_map<uint32_t, int> machine_of;   /* lives as long as the simulation */
    machine_of.clear();
    const int nodes = tc_topology_num_nodes(t), p = tc_topology_num_machines(t);
    net.node.clear();
    net.ports.clear();
    for (int n = 0; n < nodes; n++) net.node.push_back(CreateObject<Node>());
    InternetStackHelper stack;
    TreeRoutingHelper routing;
    stack.SetRoutingHelper(routing);
    stack.SetIpv6StackInstall(false);
    stack.SetTcp(probing_tcp_l4(o.socket_hash));
    g_in_network.clear();
    for (auto &n : net.node) stack.Install(n);
    net.machine_addr.assign(p, Ipv4Address());
    net.machine_node.assign(p, -1);
    for (int r = 0; r < p; r++) net.machine_node[r] = tc_topology_machine_node(t, r);
    for (int r = 0; r < p; r++) {
        net.machine_addr[r] = Ipv4Address((10u << 24) + (uint32_t)r + 1);
        machine_of[net.machine_addr[r].Get()] = r;
    }
    auto route = [&](int n) { return DynamicCast<TreeRouting>(net.node[n]->GetObject<Ipv4>()->GetRoutingProtocol()); };
    for (int n = 0; n < nodes; n++) {
        Ptr<TreeRouting> tr = route(n);
        tr->out.assign(p, -1);
        tr->machine_of = &machine_of;
        int r = tc_topology_machine_rank(t, n);
        if (r >= 0) tr->own = net.machine_addr[r], tr->machine = r;
    }
    /* every egress has a queue disc, so the traffic-control layer itself
     * should drop nothing (it drops for a stopped device without one) */
    for (int n = 0; n < nodes; n++) {
        bool ok = tc_topology_machine_rank(t, n) >= 0
            ? net.node[n]->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext(
                  "TcDrop", MakeBoundCallback(+[](uint64_t *c, Ptr<const Packet> pk) { host_drop(c, pk); }, &net.drops_host))
            : net.node[n]->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext(
                  "TcDrop", MakeBoundCallback(&unplaced_drop, &net));
        if (!ok) return "ns-3's traffic-control layer has no TcDrop trace";
    }
    uint32_t next_switch_addr = (11u << 24) + 1;
    const int links = tc_topology_num_links(t);
    for (int l = 0; l < links; l++) {
        int child, parent;
        double bw, lat;
        tc_topology_link(t, l, &child, &parent, &bw, &lat);   /* tree_net_check saw its ends */
        const double rate = bw > 0 ? bw : o.rate_bps;
        PointToPointHelper p2p;
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate((uint64_t)rate)));
        p2p.SetChannelAttribute("Delay", TimeValue(Seconds(lat > 0 ? lat : o.latency_s)));
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 1)));
        NetDeviceContainer d = p2p.Install(net.node[child], net.node[parent]);
        bool child_is_machine = tc_topology_machine_rank(t, child) >= 0;
        for (int side = 0; side < 2; side++)
            for (const char *src : {"MacTxDrop", "PhyTxDrop", "PhyRxDrop"})
                if (!d.Get(side)->TraceConnectWithoutContext(src, MakeBoundCallback(
                        &device_drop, &net.drops_device)))
                    return std::string("ns-3's point-to-point device has no trace ") + src;
        for (int side = 0; side < 2; side++) {
            int n = side == 0 ? child : parent;
            Ptr<NetDevice> dev = d.Get(side);
            Ptr<Ipv4> ip = net.node[n]->GetObject<Ipv4>();
            int32_t ifi = ip->AddInterface(dev);
            int r = tc_topology_machine_rank(t, n);
            Ipv4Address a = r >= 0 ? net.machine_addr[r] : Ipv4Address(next_switch_addr++);
            ip->AddAddress(ifi, Ipv4InterfaceAddress(a, Ipv4Mask("255.255.255.255")));
            ip->SetUp(ifi);
            Ptr<Queue<Packet>> q = DynamicCast<PointToPointNetDevice>(dev)->GetQueue();
            if (r >= 0 && o.tsq_until_received &&
                !dev->TraceConnectWithoutContext("MacRx", MakeCallback(+[](Ptr<const Packet> pk) { tsq_release(pk); })))
                return "ns-3's point-to-point device has no trace MacRx";
            if (side == 0 && child_is_machine) {
                /* the machine's egress: a short device queue under the qdisc that holds the backlog */
                q->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, 2));
                Ptr<HostQueueDisc> qd = CreateObject<HostQueueDisc>();
                qd->limit = (uint32_t)o.host_queue_packets;
                qd->sparse_first = o.host_sparse_first;
                qd->tsq_until_received = o.tsq_until_received;
                qd->peak = &net.host_queue_peak;
                qd->peers_peak = &net.host_queue_peers_peak;
                qd->gso = &net.host_gso;
                qd->machine = r;
                if (o.gso_clumps) {
                    /* the testbed's tbf over an htb over a veth: the device
                     * takes a packet at once, the queue's buckets (the line's
                     * and each peer class's burst) pace */
                    qd->shape_bps = rate;
                    qd->clumps = &net.host_clumps;
                    qd->clump_max = &net.host_clump_max;
                    qd->bucket_bytes = tc_shaper_bucket(rate);
                    qd->peer_bucket_bytes = TC_SHAPER_CLASS_BURST;
                    DynamicCast<PointToPointNetDevice>(dev)->SetDataRate(veth_rate(rate));
                }
                Ptr<TrafficControlLayer> tcl = net.node[n]->GetObject<TrafficControlLayer>();
                tcl->SetRootQueueDiscOnDevice(dev, qd);
                qd->TraceConnectWithoutContext("Drop", MakeBoundCallback(
                    +[](uint64_t *c, Ptr<const QueueDiscItem> item) { host_drop(c, item->GetPacket(), item); }, &net.drops_host));
                q->TraceConnectWithoutContext("Drop", MakeBoundCallback(
                    +[](uint64_t *c, Ptr<const Packet> pk) { host_drop(c, pk); }, &net.drops_host));
            } else {
                /* A switch port: a FIFO that takes a packet if its bytes fit,
                 * as the testbed's bfifo (under tbf) and a switch's buffer
                 * counted in cells do, over a device queue of one packet.
                 * ns-3's device queue alone stops taking anything once a full
                 * frame no longer fits, so a full port dropped every ACK. */
                const uint32_t bytes = (uint32_t)(o.switch_queue_packets - 1) * FULL_FRAME;
                Ptr<QueueDisc> qd;
                if (o.gso_clumps) {
                    /* the testbed's tbf over a veth: the device takes a
                     * packet at once, the shapers' bucket paces, over a
                     * byte FIFO of the port's frames */
                    qd = CreateObjectWithAttributes<TbfQueueDisc>(
                        "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, bytes + FULL_FRAME)),
                        "Burst", UintegerValue((uint32_t)tc_shaper_bucket(rate)),
                        "Mtu", UintegerValue(FULL_FRAME), "Rate", DataRateValue(DataRate((uint64_t)rate)));
                    DynamicCast<PointToPointNetDevice>(dev)->SetDataRate(veth_rate(rate));
                } else {
                    qd = CreateObjectWithAttributes<FifoQueueDisc>(
                        "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, bytes)));
                }
                net.node[n]->GetObject<TrafficControlLayer>()->SetRootQueueDiscOnDevice(dev, qd);
                const int to = side == 0 ? parent : child;
                net.ports.push_back({std::string(tc_topology_node_name(t, n)) + "->" + tc_topology_node_name(t, to), 0,
                                     &net.drops_switch});
                qd->TraceConnectWithoutContext("Drop", MakeBoundCallback(
                    +[](port_drops *pd, Ptr<const QueueDiscItem> item) { port_drop(pd, item->GetPacket(), item); }, &net.ports.back()));
                q->TraceConnectWithoutContext("Drop", MakeBoundCallback(   /* never: the disc holds the backlog */
                    +[](port_drops *pd, Ptr<const Packet> pk) { port_drop(pd, pk); }, &net.ports.back()));
            }
        }
        /* the routes through this link: down to every machine below the child */
        Ptr<Ipv4> cip = net.node[child]->GetObject<Ipv4>(), pip = net.node[parent]->GetObject<Ipv4>();
        int32_t cif = cip->GetInterfaceForDevice(d.Get(0)), pif = pip->GetInterfaceForDevice(d.Get(1));
        std::vector<char> below(p, 0);
        for (int r = 0; r < p; r++)
            for (int n = tc_topology_machine_node(t, r); n >= 0; n = tc_topology_node_parent(t, n))
                if (n == child) { below[r] = 1; break; }
        Ptr<TreeRouting> cr = route(child), pr = route(parent);
        for (int r = 0; r < p; r++) {
            if (below[r]) pr->out[r] = pif;
            else cr->out[r] = cif;   /* up: everything not below the child */
        }
    }
    return "";
}
