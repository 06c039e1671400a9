/* The switch tree in ns-3 (tree_net.cc): a node per machine and switch of a
 * topocoll topology, a point-to-point link per tree link at its rate, the
 * switch ports' DropTail queues, the machines' egress queue, and routing up
 * and down the tree by a table (each node's interface towards each machine). */
#ifndef TOPOCOLL_TREE_NET_H
#define TOPOCOLL_TREE_NET_H

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/traffic-control-module.h"

extern "C" {
#include "topocoll/topocoll.h"
}

struct net_options {
    double rate_bps;              /* links the topology gives no rate */
    double latency_s;             /* one-way delay of a link the topology gives none */
    int switch_queue_packets;     /* a switch port's buffer, full-size frames */
    int host_queue_packets;       /* a machine's egress queue (txqueuelen) */
    bool host_sparse_first;       /* the machine's queue sends a sparse flow's short packets first and its
                                     bulk round-robin between peer machines; else it is one FIFO */
    bool socket_hash;             /* TCP finds sockets by a hash (probing_tcp_l4), else ns-3's walk */
    bool gso_clumps = false;      /* a machine's queue shapes to its link's rate over a faster device and sends
                                     a GSO packet's segments together (HostQueueDisc); a switch port shapes
                                     with a bucket over a faster device (the testbed's tbf) */
    bool tsq_until_received = false;   /* TCP small queues count a data segment until the machine it is for
                                          takes it or a switch port drops it, else until it leaves its
                                          machine (tree_net.cc) */
};

/* A switch port's drops: "child->parent" up a link, "parent->child" down
 * it (its queue: a FIFO of --buffer full frames' bytes, one of them the
 * device's own slot). */
struct port_drops {
    std::string port;
    uint64_t drops = 0;
    uint64_t *total = nullptr;    /* the net's drops_switch, counted with it */
};

/* Data segments machines' queues took from their sockets, and the GSO
 * packets they came in (tsq_gso; else one a segment). */
struct gso_count {
    uint64_t segments = 0, packets = 0;
    /* packets by their segments: 1, 2, 3-4, 5-8, 9-16, 17 and more */
    static constexpr int SIZE_BINS = 6;
    static constexpr const char *SIZE_LABELS[SIZE_BINS] = {"1", "2", "3-4", "5-8", "9-16", "17+"};
    uint64_t by_size[SIZE_BINS] = {};
    static int bin(uint32_t segs)
    {
        int b = 0;
        while (b + 1 < SIZE_BINS && segs > (1u << b)) b++;
        return b;
    }
    void add_packet(uint32_t segs)
    {
        by_size[bin(segs)]++;
        packets++;
    }
    /* a packet counted at `segs` segments has one more (one the counts were
     * reset under is counted anew) */
    void grow_packet(uint32_t segs)
    {
        if (by_size[bin(segs)] == 0) return add_packet(segs + 1);
        by_size[bin(segs)]--;
        by_size[bin(segs + 1)]++;
    }
};

struct tree_net {
    std::vector<ns3::Ptr<ns3::Node>> node;        /* per topology node */
    std::vector<ns3::Ipv4Address> machine_addr;   /* per machine rank */
    std::vector<int> machine_node;                /* per machine rank: its topology node */
    uint64_t drops_switch = 0, drops_host = 0;    /* packets dropped at full queues */
    uint64_t drops_device = 0;                    /* lost by a device (none expected) */
    uint64_t drops_unplaced = 0;                  /* switch drops outside a port's queue (none expected) */
    uint64_t host_queue_peak = 0;                 /* the most packets a machine's egress queue held */
    uint64_t host_queue_peers_peak = 0;           /* the most peers one machine's queue held bulk for at once */
    gso_count host_gso;                           /* the segments machines sent and their GSO packets */
    gso_count host_clumps;                        /* gso_clumps: a flow's frames leaving a machine together */
    uint64_t host_clump_max = 0;                  /* and the longest such clump */
    std::deque<port_drops> ports;                 /* per switch port (stable addresses) */
    ns3::Ptr<ns3::Node> node_of_machine(int r) const { return node[machine_node[r]]; }
};

/* The host's cores as the hypervisor stops them (mpi_options::host_freezes,
 * driven by sim_mpi.cc): while core c is frozen, the machines whose network
 * processing it runs (machine m on core m % cores, as the testbed's softirqs
 * run on its vCPUs) take nothing from their links into their stacks and send
 * nothing from their egress queues; what waited goes on, in order, when it
 * thaws.  The switch ports keep their rate: the testbed's shapers refill
 * their buckets while a vCPU is stopped. */
struct host_freezes {
    int cores = 0;                                       /* 0: never frozen */
    std::vector<char> frozen;                            /* per core */
    std::vector<std::vector<std::function<void()>>> waiting;   /* per core: what goes on at its thaw */
    uint64_t count = 0, held_in = 0, held_out = 0;       /* freezes; packets held arriving; queues held */
    bool stopped(int machine) const { return cores > 0 && machine >= 0 && frozen[(size_t)(machine % cores)]; }
    void wait(int machine, std::function<void()> f) { waiting[(size_t)(machine % cores)].push_back(std::move(f)); }
};
extern host_freezes g_freezes;

/* The host's network processing (mpi_options::host_softirq, driven by
 * sim_mpi.cc): with a cost, a frame reaching its machine is taken in only
 * once a core of the host has spent that long on it (host_softirq calls
 * then); 0: at once. */
struct host_softirqs {
    double cost = 0;                       /* seconds of a core a frame */
    uint64_t frames = 0;                   /* frames so processed */
    std::vector<ns3::Time> busy_until;     /* per core: the end of the frames it has taken */
    size_t next = 0;                       /* the turn among free cores */
};
extern host_softirqs g_softirqs;
void host_softirq(std::function<void()> then);

/* The links the simulator takes (checked per link, the topology's own rate
 * and latency or the defaults): below 1 Mbit/s a full frame takes over 12 ms
 * and TCP's timeouts (200 ms and up) fire under a queue of a few frames; over
 * 1 Tbit/s a frame takes under 12 ns, ns-3's clock counts whole nanoseconds;
 * at 10 s a link TCP gave up on a connection of two switches' machines, where
 * 1 s a link runs on a seven-level tree. */
constexpr double TREE_NET_MIN_RATE_BPS = 1e6;
constexpr double TREE_NET_MAX_RATE_BPS = 1e12;
constexpr double TREE_NET_MAX_LATENCY_S = 1.0;

/* Whether the simulator takes t's links with o's defaults: an empty string
 * or the problem, naming the link. */
std::string tree_net_check(const tc_topology *t, const net_options &o);
/* Build t's network; returns an empty string or the problem. */
std::string tree_net_build(const tc_topology *t, const net_options &o, tree_net &net);

#endif
