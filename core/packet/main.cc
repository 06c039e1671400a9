/*
 * topocoll-packet: an all-to-all of the IR run over a packet-level network
 * (ns-3): the switch tree of a topocoll topology as point-to-point links
 * with DropTail switch ports, one TCP connection a pair of machines, and on
 * every simulated rank the executor of the PMPI library itself
 * (core/mpi/tc_exec*.c through sim_exec.c), with its syncs, pieces and
 * pacing.  The MPI's own MPI_Alltoall ("native") is modelled as the
 * schedule Open MPI 4.1's fixed decision rules pick (native_openmpi.cc).
 *
 * Prints one JSON object: the time of each call (the slowest rank's, after
 * a barrier that releases every rank at once), queue drops, messages, and
 * the simulation's own cost.  `topocoll bench --backend packet` runs it;
 * docs/packet.md describes the model and its limits.
 */
#include <sys/resource.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "linux_cubic.h"
#include "native_openmpi.h"
#include "ns3/version-defines.h"
#include "event_trace.h"
#include "probing_tcp.h"
#include "sim_mpi.h"
#include "tree_net.h"

extern "C" {
#include "tc_exec_ir.h"
}

using namespace ns3;

namespace {

/* The executor's events in --trace (event_trace.h): a rank and its call */
struct exec_trace_ctx {
    int rank, call;
};
void exec_trace(void *ctx, int event, long long op, int peer, double)
{
    const exec_trace_ctx *t = (const exec_trace_ctx *)ctx;
    event_trace("exec %d %d %lld %s %d", t->rank, t->call, op, tcx_event_name(event), peer);
}

struct options {
    std::string topology, plan_topology, algorithm = "faraj-yuan", congestion = "cubic", host_queue = "sparse-first";
    std::string tsq_until = "host";   /* where TCP small queues stop counting a segment (net_options) */
    std::string phase_order = "grouped", pace = "auto";
    std::vector<long long> blocks{65536};   /* run in turn on the same connections */
    long long segment_size = 0, piece_size = 64000, mss = 1448, sndbuf = 0 /* auto */,
              rcvbuf = 4 << 20;
    int warmup = 1, repetitions = 3, buffer = 100, host_queue_packets = 1000, sync_depth = 1, fanout = 0;
    double rate = tc_default("bandwidth"), latency = 0, rto_min = 0.2, delayed_ack = 0.04, pace_lead = -1, nap = 200e-6;
    double pace_lead_share = -1;   /* -1: the core's default where no lead is given */
    bool linux_cubic = true;       /* cubic's avoidance as Linux's (linux_cubic.h), else ns-3's TcpCubic */
    double give_up = 0;        /* simulated seconds a call may take before the run stops (0: no limit) */
    double skew = 0;           /* a rank starts a call up to this long after the barrier's release */
    std::string starts;        /* a file: each call's start of every rank after the barrier's release */
    unsigned long long seed = 1;
    int host_cores = 0;        /* > 0: the ranks share a host of this many cores (sim_mpi.h) */
    double cpu_slice = mpi_options().cpu_slice;   /* the host's cores: defaults from sim_mpi.h */
    bool idle_wakes = mpi_options().idle_wakes, barrier_spins = mpi_options().barrier_spins;
    bool idle_yield = mpi_options().idle_yield;
    double yield_poll = mpi_options().yield_poll;
    double host_freezes = mpi_options().host_freezes;
    double host_softirq = mpi_options().host_softirq;
    std::string rendezvous = "put";
    std::string connect = "eager";
    int check = -1;            /* -1: when the buffers are small */
    probing_tcp_options tcp;   /* what TCP does as Linux's does (--sndbuf sets sndbuf_auto) */
    std::string socket_lookup = "hash";
    long long corrupt_message = 0;
    bool progress = false;
    bool print_settings = false;   /* print the network's and TCP's settings as JSON and stop */
    std::string trace;             /* --trace FILE: call starts, timeouts and drops, a line each (event_trace.h) */
    bool trace_tcp = false;        /* --trace-tcp: and each connection's ACKs, resends and states */
};

const size_t MAX_BLOCKS = 64;   /* sizes in one run, as the benchmark program takes */

[[noreturn]] void usage_error(const std::string &what)
{
    fprintf(stderr, "topocoll-packet: error: %s (--help lists the options)\n", what.c_str());
    exit(2);
}

const char *HELP =
    "usage: topocoll-packet --topology FILE [options]\n"
    "Simulate MPI_Alltoall on FILE's switch tree at packet level (ns-3) and print a JSON result.\n"
    "  --plan-topology FILE plan (and pace) on FILE's tree, run on --topology's [--topology]\n"
    "  --algorithm NAME     a registry algorithm or 'native' (Open MPI 4.1's choice) [faraj-yuan]\n"
    "  --block BYTES[,BYTES...]  bytes a rank sends each other rank [65536]; several sizes (at most 64) run\n"
    "                       in turn on the same connections, as the benchmark program runs them, and print\n"
    "                       a JSON line each\n"
    "  --warmup N           untimed calls first, at each size [1]; --repetitions N timed calls [3]\n"
    "  --rate BPS           links the topology gives no rate (bit/s) [the core's default]; every link's\n"
    "                       rate, given or not, from 1e6 to 1e12\n"
    "  --latency S          one-way delay of a link the topology gives none [0]; every link's at most 1 s\n"
    "  --buffer N           a switch port's queue, full-size frames [100]\n"
    "  --host-queue KIND    sparse-first or fifo [sparse-first]; --host-queue-packets N [1000]\n"
    "  --congestion NAME    cubic or newreno [cubic]\n"
    "  --linux-cubic on|off  cubic as Linux's: the window grows only while it limits sending, slow start\n"
    "                       stops at the threshold, and avoidance is no slower than Reno's (the TCP-friendly\n"
    "                       region); off: ns-3's TcpCubic, which grows an idle connection's window, passes\n"
    "                       the threshold, and after a loss at a small window holds it for about a second [on]\n"
    "  --count-delivered on|off  with Linux's cubic: the window grows by the segments an ACK newly\n"
    "                       delivers, each counted once, as Linux counts them; off: ns-3's count, which\n"
    "                       counts again the segments SACKed before (after a timeout, a whole flight) [on]\n"
    "  --linux-hystart on|off  with Linux's cubic: HyStart as Linux's, its thresholds and no RTT sample in\n"
    "                       an avoidance epoch's first second; off: ns-3's, which ends more slow starts early [on]\n"
    "  --ack-rtt on|off     with Linux's HyStart: each ACK's own round-trip sample (from the latest segment it\n"
    "                       newly acknowledges or SACKs; none if it acknowledges a retransmission), as\n"
    "                       Linux's cubic takes it; off: ns-3's smoothed RTT, at every call (several an ACK) [on]\n"
    "  --hystart-rounds on|off  with Linux's HyStart: its rounds begin below its low window of 16 segments\n"
    "                       too, so a train already long at 16 ends the slow start there, as Linux's since\n"
    "                       6.14 (the testbed's 6.18); off: a round begins at the low window, as in 5.8-6.13\n"
    "                       [off: see docs/packet.md]\n"
    "  --hystart-ack-delta US  with Linux's HyStart: the longest gap between two ACKs of a train, 1 to\n"
    "                       1,000,000 us, as tcp_cubic's hystart_ack_delta_us (/sys/module/tcp_cubic/parameters) [2000]\n"
    "  --rto-min S          TCP's minimum RTO, up to 60 s [0.2]\n"
    "  --delayed-ack S      how long a receiver holds the ACK of an odd segment, up to 1 s [0.04]\n"
    "  --loss-probes on|off Linux's tail loss probe and SACK loss detection (ns-3 has neither) [on]\n"
    "  --lost-retransmits on|off  a retransmission is lost once data sent after it is acknowledged,\n"
    "                       as Linux's RACK finds (ns-3 waits for the timeout) [on]\n"
    "  --rack-recovery on|off  in a fast recovery, a segment is lost once one sent after it is acknowledged\n"
    "                       or SACKed (Linux's RACK), so a lost tail goes again at once; off: ns-3's, only\n"
    "                       segments below a SACKed one, the rest a partial ACK at a time [on]\n"
    "  --rack-ties on|off   RACK orders segments sent at one instant as they went (Linux's\n"
    "                       tcp_skb_sent_after, by sequence within a transmit loop), so a lost\n"
    "                       retransmission sent with a segment that arrived goes again; off: only one\n"
    "                       sent strictly earlier is lost [off]\n"
    "  --reo-window on|off  before a recovery, RACK's reordering window as Linux's: below three\n"
    "                       segments SACKed, a hole sent less than a quarter of the least RTT before the\n"
    "                       last segment an ACK delivered (one send's segments share a stamp) waits for\n"
    "                       the third or for the reordering timer, its wait plus 2 ms in whole 4 ms\n"
    "                       jiffies from the last ACK that delivered anything, and the recovery it starts\n"
    "                       resends a segment; off: the first SACK above a hole starts the recovery\n"
    "                       [off: see docs/packet.md]\n"
    "  --timer-ticks on|off TCP's timers (the RTO, the loss probe, the reordering timer) in whole 4 ms\n"
    "                       jiffies, run on the tick after they expire, as Linux's timer wheel runs them (so\n"
    "                       none runs early: one set for a jiffy runs 4-8 ms later); off: the RTO and the\n"
    "                       probe at their times to the nanosecond, the reordering timer on its tick [off]\n"
    "  --small-queues on|off  Linux's TCP small queues: a connection keeps no more than about 1 ms of\n"
    "                       its rate (at least 2 segments) in its machine's queue, the rest of its window\n"
    "                       waiting in the socket; off: the whole window goes to the queue (ns-3's) [on]\n"
    "  --tsq-gso on|off     with small queues: the limit checked a GSO packet at a time, as Linux's (up to\n"
    "                       tcp_tso_autosize's segments, at most half the window, twice its truesize), the\n"
    "                       packet then sent whole; off: a segment at a time [off: see docs/packet.md]\n"
    "  --tsq-until WHERE    with small queues: a segment counts against its connection's limit until it\n"
    "                       leaves its machine (host: a NIC frees it at its transmit completion), or until the\n"
    "                       machine it is for takes it or a switch port drops it (receiver: the testbed's\n"
    "                       veths and bridges keep every frame charged to its socket) [host]\n"
    "  --gso-clumps on|off  with --tsq-gso: GSO packets as the testbed's kernel builds and sends them: one\n"
    "                       smaller than a third of the window waits for an ACK due within 1 ms; a machine's\n"
    "                       queue sends its segments together, at once, shaping to its link's rate with htb's\n"
    "                       buckets, and switch ports shape with tbf's (the testbed's, over veths); off: a\n"
    "                       segment at a time at the link's rate everywhere [off: see docs/packet.md]\n"
    "  --window-in-packets on|off  a restart after idle halves the window and keeps 3/4 of it as the\n"
    "                       threshold in whole segments, as Linux's; off: to the byte (either way a window\n"
    "                       is full when no full segment fits) [off: see docs/packet.md]\n"
    "  --forward-retransmits on|off  in a fast recovery with nothing known lost left to resend and no new\n"
    "                       data, resend segments still in flight (RFC 6675's rule 3, ns-3's); Linux does not [off]\n"
    "  --timeout-keeps-ssthresh on|off  a timeout during a fast recovery keeps the slow-start threshold\n"
    "                       the recovery set, as Linux does; off: set again from the shrunken window (ns-3's) [on]\n"
    "  --linux-rto on|off   the retransmission timer as Linux's: srtt + max(4 x rttvar, --rto-min) in whole\n"
    "                       4 ms ticks, restarted when a fast recovery resends the first unacknowledged\n"
    "                       segment; off: ns-3's, max(--rto-min, srtt + 4 x rttvar), restarted only by ACKs [on]\n"
    "  --linux-tlp on|off   the tail loss probe's timer as Linux's: armed in the open state only, in\n"
    "                       the RTO's place where the RTO comes first, one probe outstanding, the RTO\n"
    "                       restarted from a probe; off: no probe where the RTO comes first [on]\n"
    "  --probe-small-queues on|off  a probe's new data passes small queues as any new data must (Linux's\n"
    "                       tcp_write_xmit): over its share of the machine's queue a connection sends\n"
    "                       no probe and its RTO stays; off: the probe goes regardless [on]\n"
    "  --linux-prr on|off   a fast recovery's window as Linux's proportional rate reduction sizes it:\n"
    "                       after the ACK's losses are marked, reduced from the window before the\n"
    "                       recovery, catching up on what it held back; off: ns-3's, sized before the\n"
    "                       simulator's RACK marks the ACK's losses, which then go out on top [on]\n"
    "  --sack-compression on|off  the receiver compresses SACKs as Linux's: of the ACKs out-of-order\n"
    "                       segments call for at one point, three go at once, the rest wait min(1 ms,\n"
    "                       srtt / 20) and go as one (44 at most); off: each goes at once (ns-3's) [on]\n"
    "  --linux-receive on|off  the receiver's window and ACKs as Linux's: a receive buffer from tcp_rmem's\n"
    "                       128 KiB that grows as the application reads, and an ACK past a full segment at\n"
    "                       once only while the window would not shrink, else at the application's next read\n"
    "                       or the delayed-ACK timer; off: ns-3's, --rcvbuf fixed and an ACK every second\n"
    "                       segment [off: see docs/packet.md]\n"
    "  --socket-lookup hash|walk  how a node's TCP finds a packet's socket: a hash, or ns-3's walk of\n"
    "                       every socket (the same results, slower from 128 machines) [hash]\n"
    "  --mss BYTES          TCP payload a segment [1448]; --rcvbuf BYTES [4194304]\n"
    "  --sndbuf auto|BYTES  a socket's send buffer: auto grows it with the window as Linux does (a send\n"
    "                       completes once its last byte is queued), up to 4194304; BYTES fixes it [auto]\n"
    "  --rendezvous put|copy  how Open MPI moves a message over its eager limit: put (its TCP BTL's\n"
    "                       default: a header, the receiver's put request, the whole message) or copy (the\n"
    "                       BTL without put: a first fragment, an answer, the rest) [put]\n"
    "  --connect eager|lazy|init  when a pair's TCP connection opens: eager, every pair before the run;\n"
    "                       lazy, at the pair's first message, as Open MPI's TCP BTL opens them (its data\n"
    "                       waits for both ends' handshake messages, the accepting rank answering in its\n"
    "                       turn); init, lazy but for the pairs the PMPI library's start-up allgathers\n"
    "                       connect (Open MPI's recursive doubling on 2^n ranks, r and r xor 2^k; else\n"
    "                       Bruck's, ranks 2^k apart), as on the testbed [eager]\n"
    "  --skew S             each rank starts each call at a random time up to S after the barrier\n"
    "                       (uniform; ranks leaving a barrier apart, as the testbed's do) [0]\n"
    "  --seed N             the skew's and the host's random numbers [1]\n"
    "  --host-cores N       all ranks on one host of N cores, taking turns, each acting (reading, answering,\n"
    "                       writing) only in its turn: the emulated cluster's host (2 cores there) [0: a core\n"
    "                       a rank, acting at once]; --cpu-slice S  a turn, on average [0.0005]\n"
    "  --idle-wakes on|off  with --host-cores: a napping rank waiting for its link clock (pacing) wakes every\n"
    "                       1 ms to read and answer what arrived, as the testbed's executor does; off: it\n"
    "                       sleeps to the deadline in one go [on]\n"
    "  --barrier-spins on|off  with --host-cores: a rank leaving the barrier late (--skew, --starts) spins in\n"
    "                       it, wanting a core and reading what arrives in its turns, as a rank in Open MPI's\n"
    "                       barrier does; off: it sleeps off its core until it leaves [off]\n"
    "  --idle-yield on|off  with --host-cores: a waiting rank whose progress poll finds nothing yields its core\n"
    "                       (Open MPI's mpi_yield_when_idle, set on the testbed), so a rank with something to\n"
    "                       do runs within a round of polls; off: the rank keeps the core its whole turn [on];\n"
    "                       --yield-poll S  one poll and yield [2.3e-06, measured on the testbed's host]\n"
    "  --host-freezes PCT   with --host-cores: each core stopped PCT %% of the time, in gaps of 50 us to 51 ms\n"
    "                       as the hypervisor stopped the testbed's vCPUs (15.6 %% over a bench job there):\n"
    "                       its rank stops, and so does the network processing of machines m with\n"
    "                       m %% N == core; the switch ports keep their rate [0: never]\n"
    "  --host-softirq S     with --host-cores: each frame a machine takes in waits for a core of the host\n"
    "                       free of earlier frames, then holds it S seconds (its rank stopped) before it\n"
    "                       reaches its socket: the emulated cluster's network processing, 13-20 us of\n"
    "                       softirq a frame on its host (docs/packet.md) [0: none]\n"
    "  --starts FILE        instead, replay recorded starts: timed call k takes the k-th line (cycled) of FILE\n"
    "                       for --algorithm and --block: ALGORITHM BLOCK REPETITION, then each rank's start in\n"
    "                       seconds after the earliest's (bench --backend testbed --record-starts writes it)\n"
    "  --pace auto|on|off   the executor's pacing [auto: on where link rates are known]\n"
    "  --pace-lead S        [the core's default for the plan]; --piece-size BYTES [64000]\n"
    "  --pace-lead-share P  without --pace-lead, a step's lead is at most P %% of its link time [8; 0: no cap]\n"
    "  --print-settings     print the model's settings (TCP's behaviours, queues, MPI) for the options\n"
    "                       given, as one JSON object, and stop (no --topology needed; with one, after\n"
    "                       checking that the simulator takes it and the options given)\n"
    "  --nap S              longest nap of a waiting rank [0.0002, the testbed's]; 0: it spins, as the PMPI\n"
    "                       library's ranks do off the testbed (modelled as waking the moment a message completes)\n"
    "  --sync-depth N, --phase-order NAME, --segment-size BYTES, --fanout N: the planner's options\n"
    "  --check | --no-check carry and check every byte [when the buffers fit in 1 GiB]\n"
    "  --give-up S          stop a call still running S simulated seconds after it began; the JSON says so [0: never]\n"
    "  --trace FILE         write a line for each call's start, executor event (a send starts, its step's\n"
    "                       sends are done, its syncs leave: TOPOCOLL_TRACE's), TCP timeout (first or repeat:\n"
    "                       the connection had not recovered from its last) and dropped packet, with the\n"
    "                       simulated time (scripts/timeline.py reads it beside the testbed's traces)\n"
    "  --trace-tcp          with --trace: every connection's ACKs as they reach it (its unacknowledged byte,\n"
    "                       window, threshold), its resends and its congestion state's changes, as the\n"
    "                       kernel's tcp_probe, tcp_retransmit_skb and tcp_cong_state_set (timeline.py tcp)\n"
    "  --progress           lines on stderr as calls start (after 5 s of wall time) and every simulated second (after 30 s)\n"
    "  --corrupt-message K  flip a byte of the K-th message with data (tests the check)\n"
    "  --check-scoreboard   after every ACK and send, check ns-3's counts of each connection's SACKed,\n"
    "                       lost and resent bytes against its segments; a mismatch stops the run (exit 3)\n"
    "exit status: 0 done (every byte checked right, where checked); 1 a byte arrived wrong (the JSON's\n"
    "  bad_bytes) or the trace could not be written; 2 an option or the topology refused, or a simulated\n"
    "  TCP connection gave up (15 retransmissions unanswered); 3 the run stood still (no message completed\n"
    "  in %.0f simulated seconds: what every waiting rank waits for is printed), --check-scoreboard\n"
    "  found a mismatch, or an internal error\n";

double number(const char *opt, const char *text)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !std::isfinite(v) || v < 0)
        usage_error(std::string(opt) + ": '" + text + "' is not a non-negative number");
    return v;
}

bool on_off(const char *opt, const char *text)
{
    if (strcmp(text, "on") && strcmp(text, "off")) usage_error(std::string(opt) + ": '" + text + "'; valid: on, off");
    return !strcmp(text, "on");
}

long long whole(const char *opt, const char *text, long long least, long long most)
{
    double v = number(opt, text);
    if (v != std::floor(v) || v < (double)least || v > (double)most)
        usage_error(std::string(opt) + ": '" + text + "' is not a whole number in [" + std::to_string(least) + ", " +
                    std::to_string(most) + "]");
    return (long long)v;
}

/* --connect's names (sim_mpi.h, connect_mode) */
const std::map<std::string, connect_mode> CONNECT_MODES = {
    {"eager", connect_mode::eager}, {"lazy", connect_mode::lazy}, {"init", connect_mode::init}};

options parse(int argc, char **argv)
{
    options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--help" || a == "-h") { printf(HELP, mpi_options().stall_seconds); exit(0); }
        if (a == "--check") { o.check = 1; continue; }
        if (a == "--no-check") { o.check = 0; continue; }
        if (a == "--check-scoreboard") { o.tcp.check_scoreboard = true; continue; }
        if (a == "--progress") { o.progress = true; continue; }
        if (a == "--trace-tcp") { o.trace_tcp = true; continue; }
        if (a == "--print-settings") { o.print_settings = true; continue; }
        if (i + 1 >= argc) usage_error(a + " needs a value");
        const char *v = argv[++i];
        if (a == "--topology") o.topology = v;
        else if (a == "--plan-topology") o.plan_topology = v;
        else if (a == "--algorithm") o.algorithm = v;
        else if (a == "--block") {
            o.blocks.clear();
            std::string list = v, item;
            for (size_t at = 0; at <= list.size(); at++)
                if (at == list.size() || list[at] == ',') {
                    if (item.empty()) usage_error("--block: '" + list + "' has an empty size");
                    o.blocks.push_back(whole(a.c_str(), item.c_str(), 1, 1LL << 30));
                    item.clear();
                } else item += list[at];
            if (o.blocks.size() > MAX_BLOCKS)
                usage_error("--block: " + std::to_string(o.blocks.size()) + " sizes; at most " + std::to_string(MAX_BLOCKS));
        }
        else if (a == "--warmup") o.warmup = (int)whole(a.c_str(), v, 0, 1000);
        else if (a == "--repetitions") o.repetitions = (int)whole(a.c_str(), v, 1, 1000);
        else if (a == "--rate") {
            o.rate = number(a.c_str(), v);
            if (o.rate == 0) usage_error("--rate: 0 bit/s; a link's rate is from 1e6 to 1e12 bit/s");
        }
        else if (a == "--latency") o.latency = number(a.c_str(), v);
        else if (a == "--buffer") o.buffer = (int)whole(a.c_str(), v, 2, 1 << 20);
        else if (a == "--host-queue") o.host_queue = v;
        else if (a == "--host-queue-packets") o.host_queue_packets = (int)whole(a.c_str(), v, 2, 1 << 20);
        else if (a == "--congestion") o.congestion = v;
        else if (a == "--linux-cubic") o.linux_cubic = on_off(a.c_str(), v);
        else if (a == "--rto-min") o.rto_min = number(a.c_str(), v);
        else if (a == "--delayed-ack") o.delayed_ack = number(a.c_str(), v);
        else if (a == "--mss") o.mss = whole(a.c_str(), v, 64, 9000);
        else if (a == "--sndbuf") o.sndbuf = !strcmp(v, "auto") ? 0 : whole(a.c_str(), v, 4096, 1LL << 30);
        else if (a == "--rcvbuf") o.rcvbuf = whole(a.c_str(), v, 4096, 1LL << 30);
        else if (a == "--pace") o.pace = v;
        else if (a == "--corrupt-message") o.corrupt_message = whole(a.c_str(), v, 1, 1LL << 40);
        else if (a == "--socket-lookup") {
            if (strcmp(v, "hash") && strcmp(v, "walk")) usage_error("--socket-lookup: '" + std::string(v) + "'; valid: hash, walk");
            o.socket_lookup = v;
        }
        else if (a == "--loss-probes") o.tcp.probes = on_off(a.c_str(), v);
        else if (a == "--lost-retransmits") o.tcp.lost_retransmits = on_off(a.c_str(), v);
        else if (a == "--rack-recovery") o.tcp.rack_recovery = on_off(a.c_str(), v);
        else if (a == "--rack-ties") o.tcp.rack_ties = on_off(a.c_str(), v);
        else if (a == "--reo-window") o.tcp.reo_window = on_off(a.c_str(), v);
        else if (a == "--timer-ticks") o.tcp.timer_ticks = on_off(a.c_str(), v);
        else if (a == "--count-delivered") o.tcp.count_delivered = on_off(a.c_str(), v);
        else if (a == "--linux-hystart") o.tcp.linux_hystart = on_off(a.c_str(), v);
        else if (a == "--hystart-rounds") o.tcp.hystart_rounds = on_off(a.c_str(), v);
        else if (a == "--ack-rtt") o.tcp.ack_rtt = on_off(a.c_str(), v);
        else if (a == "--hystart-ack-delta") o.tcp.hystart_ack_delta_us = (uint32_t)whole(a.c_str(), v, 1, 1000000);
        else if (a == "--small-queues") o.tcp.small_queues = on_off(a.c_str(), v);
        else if (a == "--tsq-gso") o.tcp.tsq_gso = on_off(a.c_str(), v);
        else if (a == "--tsq-until") o.tsq_until = v;
        else if (a == "--gso-clumps") o.tcp.gso_clumps = on_off(a.c_str(), v);
        else if (a == "--window-in-packets") o.tcp.window_in_packets = on_off(a.c_str(), v);
        else if (a == "--forward-retransmits") o.tcp.forward_retransmits = on_off(a.c_str(), v);
        else if (a == "--timeout-keeps-ssthresh") o.tcp.timeout_keeps_ssthresh = on_off(a.c_str(), v);
        else if (a == "--linux-rto") o.tcp.linux_rto = on_off(a.c_str(), v);
        else if (a == "--linux-tlp") o.tcp.linux_tlp = on_off(a.c_str(), v);
        else if (a == "--probe-small-queues") o.tcp.probe_small_queues = on_off(a.c_str(), v);
        else if (a == "--linux-prr") o.tcp.linux_prr = on_off(a.c_str(), v);
        else if (a == "--sack-compression") o.tcp.sack_compression = on_off(a.c_str(), v);
        else if (a == "--linux-receive") o.tcp.linux_receive = on_off(a.c_str(), v);
        else if (a == "--pace-lead") o.pace_lead = number(a.c_str(), v);
        else if (a == "--pace-lead-share") o.pace_lead_share = number(a.c_str(), v);
        else if (a == "--piece-size") o.piece_size = whole(a.c_str(), v, 1, 1LL << 30);
        else if (a == "--nap") o.nap = number(a.c_str(), v);
        else if (a == "--give-up") o.give_up = number(a.c_str(), v);
        else if (a == "--trace") o.trace = v;
        else if (a == "--skew") o.skew = number(a.c_str(), v);
        else if (a == "--starts") o.starts = v;
        else if (a == "--host-cores") o.host_cores = (int)whole(a.c_str(), v, 0, 4096);
        else if (a == "--cpu-slice") o.cpu_slice = number(a.c_str(), v);
        else if (a == "--idle-wakes") o.idle_wakes = on_off(a.c_str(), v);
        else if (a == "--barrier-spins") o.barrier_spins = on_off(a.c_str(), v);
        else if (a == "--idle-yield") o.idle_yield = on_off(a.c_str(), v);
        else if (a == "--yield-poll") o.yield_poll = number(a.c_str(), v);
        else if (a == "--host-freezes") o.host_freezes = number(a.c_str(), v);
        else if (a == "--host-softirq") o.host_softirq = number(a.c_str(), v);
        else if (a == "--seed") o.seed = (unsigned long long)whole(a.c_str(), v, 0, 1LL << 53);
        else if (a == "--rendezvous") o.rendezvous = v;
        else if (a == "--connect") o.connect = v;
        else if (a == "--sync-depth") o.sync_depth = (int)whole(a.c_str(), v, 1, 1 << 20);
        else if (a == "--phase-order") o.phase_order = v;
        else if (a == "--segment-size") o.segment_size = whole(a.c_str(), v, 1, 1LL << 30);
        else if (a == "--fanout") o.fanout = (int)whole(a.c_str(), v, 1, 1 << 20);
        else usage_error("unknown option " + a);
    }
    if (o.topology.empty() && !o.print_settings) usage_error("--topology FILE is required");
    if (o.trace_tcp && o.trace.empty()) usage_error("--trace-tcp adds to a trace: give --trace FILE too");
    if (o.host_queue != "sparse-first" && o.host_queue != "fifo")
        usage_error("--host-queue: '" + o.host_queue + "'; valid: sparse-first, fifo");
    if (o.tsq_until != "host" && o.tsq_until != "receiver")
        usage_error("--tsq-until: '" + o.tsq_until + "'; valid: host, receiver");
    if (o.congestion != "cubic" && o.congestion != "newreno")
        usage_error("--congestion: '" + o.congestion + "'; valid: cubic, newreno");
    if (o.congestion != "cubic") o.linux_cubic = false;   /* it replaces cubic only */
    if (!o.linux_cubic) o.tcp.count_delivered = o.tcp.linux_hystart = false;   /* parts of Linux's cubic */
    if (!o.tcp.linux_hystart) o.tcp.ack_rtt = o.tcp.hystart_rounds = false;   /* parts of Linux's HyStart */
    if (!o.tcp.probes) o.tcp.linux_tlp = false;   /* the probe's timer: no probe, no timer */
    if (!o.tcp.small_queues) o.tcp.tsq_gso = false;   /* how small queues count */
    if (!o.tcp.small_queues || !o.tcp.probes) o.tcp.probe_small_queues = false;   /* a probe small queues hold */
    if (!o.tcp.tsq_gso) o.tcp.gso_clumps = false;         /* the packets it keeps together */
    if (o.pace != "auto" && o.pace != "on" && o.pace != "off") usage_error("--pace: '" + o.pace + "'; valid: auto, on, off");
    if (o.rto_min <= 0 || o.rto_min > 60) usage_error("--rto-min: must be in (0, 60] seconds");
    if (o.nap < 0 || o.nap > 1) usage_error("--nap: must be in [0, 1] seconds");
    /* Linux holds an ACK 40 ms to 200 ms (TCP_DELACK_MIN, _MAX); past a second is no TCP's, and past
     * 9.2e9 s ns-3's clock (signed nanoseconds) wraps */
    if (o.delayed_ack > 1) usage_error("--delayed-ack: must be in [0, 1] seconds");
    if (o.pace_lead > 1) usage_error("--pace-lead: more than a second");
    if (o.pace_lead_share != -1 && (o.pace_lead_share < 0 || o.pace_lead_share > 100))
        usage_error("--pace-lead-share: must be a percentage from 0 to 100");
    if (o.give_up < 0 || o.give_up > 1e6) usage_error("--give-up: must be in [0, 1e6] simulated seconds");
    if (o.skew > 10) usage_error("--skew: must be in [0, 10] seconds");
    if (o.skew > 0 && !o.starts.empty()) usage_error("--skew and --starts: one or the other");
    if (o.cpu_slice < 1e-6 || o.cpu_slice > 1) usage_error("--cpu-slice: a time from 1e-06 to 1 s");
    if (o.yield_poll < 1e-9 || o.yield_poll > o.cpu_slice)
        usage_error("--yield-poll: a time from 1e-09 s to the turn (--cpu-slice)");
    if (o.host_freezes > 90)   /* number() refused negatives and non-numbers */
        usage_error("--host-freezes: a percentage from 0 to 90");
    if (o.host_freezes > 0 && o.host_cores <= 0) usage_error("--host-freezes stops the host's cores: give --host-cores N too");
    if (o.host_softirq > 1e-3)   /* a millisecond a frame: under 12 Mbit/s of full frames a core */
        usage_error("--host-softirq: a time from 0 to 0.001 s a frame");
    if (o.host_softirq > 0 && o.host_cores <= 0) usage_error("--host-softirq takes the host's cores: give --host-cores N too");
    if (o.host_softirq > 0 && o.host_freezes > 0) usage_error("--host-softirq and --host-freezes: one or the other");
    if (!CONNECT_MODES.count(o.connect))
        usage_error("--connect: '" + o.connect + "'; valid: eager, lazy, init");
    if (o.rendezvous != "put" && o.rendezvous != "copy")
        usage_error("--rendezvous: '" + o.rendezvous + "'; valid: put, copy");
    return o;
}

void tcp_defaults(const options &o)
{
    Config::SetDefault("ns3::TcpL4Protocol::SocketType",
                       TypeIdValue(o.linux_cubic ? topocoll::LinuxCubic::GetTypeId()
                                                 : TypeId::LookupByName(o.congestion == "cubic" ? "ns3::TcpCubic" : "ns3::TcpNewReno")));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue((uint32_t)o.mss));
    Config::SetDefault("ns3::TcpSocket::SndBufSize",
                       UintegerValue(o.sndbuf ? (uint32_t)o.sndbuf : probing_tcp_sndbuf(0, (uint32_t)o.mss)));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue((uint32_t)o.rcvbuf));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(Seconds(o.delayed_ack)));
    Config::SetDefault("ns3::TcpSocket::TcpNoDelay", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocket::DataRetries", UintegerValue(15));   /* Linux's tcp_retries2; ns-3's is 6 */
    Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(Seconds(1)));   /* Linux's first SYN timeout; ns-3's is 3 s */
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(o.rto_min)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(1)));
    /* a window closed to nothing is probed after the RTO's minimum, as Linux's
     * tcp_probe0 does (ns-3's first probe waits 6 s); only Linux's receiver
     * closes one (--rcvbuf is otherwise never full) */
    if (o.tcp.linux_receive) Config::SetDefault("ns3::TcpSocket::PersistTimeout", TimeValue(Seconds(o.rto_min)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    /* with loss probes, a hole below SACKed data is a loss at once (as RACK
     * decides; the tree never reorders a flow), unless RACK's reordering
     * window is modelled (reo_window), which waits for three: probing_tcp.cc */
    Config::SetDefault("ns3::TcpSocketBase::ReTxThreshold", UintegerValue(o.tcp.probes && !o.tcp.reo_window ? 1 : 3));
    /* Linux sends timestamps, but ns-3 3.37 samples the RTT from the echo of
     * an ACK that a retransmission provoked, so a recovery inflates the RTO
     * (to over 60 s: Open MPI's pairwise on 64 machines at 300 KB through
     * 32-packet ports took 688 s, 19 s without); without them Karn's rule
     * keeps retransmissions out of the estimate.  Segments keep Linux's 1448
     * bytes of data (12 bytes of option less a frame). */
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
}

/* What a rank sends each other rank in a checked run. */
inline unsigned char pattern(int from, int to, long long i, int call)
{
    return (unsigned char)(from * 131 + to * 31 + i * 7 + call * 13 + (i >> 8));
}

/* A number in [0, 1) for (seed, call, rank), the same whatever order the
 * simulation meets them in (splitmix64 over the three). */
double uniform(unsigned long long seed, int call, int rank)
{
    unsigned long long z = seed * 0x9E3779B97F4A7C15ull + ((unsigned long long)call << 32 | (unsigned)rank);
    for (int k = 0; k < 2; k++) {
        z += 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
    }
    return (double)(z >> 11) / 9007199254740992.0;
}

double wall_now()
{
    struct timeval tv;
    gettimeofday(&tv, nullptr);
    return tv.tv_sec + tv.tv_usec * 1e-6;
}

/* One size of the run: its schedule (or the MPI's own choice), its pacing
 * and its recorded starts. */
struct size_plan {
    long long block = 0;
    tc_schedule *sched = nullptr;
    int alg = -1, native = 0;
    const char *native_choice = "";
    tcx_schedule tables{};
    bool paced = false;
    double lead = 0;
    double *starts = nullptr;   /* --starts: the lines of this algorithm and block, p offsets each */
    int start_lines = 0;
};

size_plan plan_size(const options &o, tc_topology *plan_topo, int p, long long block, double default_rate)
{
    size_plan pl;
    pl.block = block;
    if (!o.starts.empty() &&
        tc_starts_load(o.starts.c_str(), o.algorithm.c_str(), block, p, &pl.starts, &pl.start_lines) != TC_OK)
        usage_error(std::string("--starts: ") + tc_error_message());
    std::string plan = o.algorithm;
    if (o.algorithm == "native") {
        pl.native = native_openmpi_choice(p, block, &pl.native_choice);
        /* its modified Bruck is the IR's bruck, run by the executor */
        plan = pl.native == OMPI_A2A_BRUCK ? "bruck" : "";
    }
    if (!plan.empty()) {
        pl.alg = tc_algorithm_find(plan.c_str());
        if (pl.alg < 0) usage_error("unknown algorithm '" + o.algorithm + "' (topocoll algorithms lists them; or native)");
        int order = -1;
        for (int k = 0; tc_phase_order_name(k); k++)
            if (o.phase_order == tc_phase_order_name(k)) order = k;
        if (order < 0) usage_error("--phase-order: unknown order '" + o.phase_order + "'");
        tc_plan_options opt{};
        if (tc_algorithm_params(pl.alg) & TC_PARAM_SEGMENTS)
            opt.segments = tc_plan_segments(block, o.segment_size > 0 ? o.segment_size : (long long)tc_default("segment_size"), p);
        opt.fanout = o.fanout;
        opt.sync_depth = o.sync_depth;
        opt.phase_order = order;
        opt.bandwidth = default_rate;
        if (tc_alltoall_plan_with_options(plan.c_str(), plan_topo, &opt, 1, &pl.sched) != TC_OK)
            usage_error("planning " + plan + " failed: " + tc_error_message());
        pl.tables = tcx_tables_of(pl.sched);
    }
    pl.paced = pl.alg >= 0 && !pl.native && o.pace != "off" && tc_algorithm_runs_with_syncs(pl.alg);
    pl.lead = o.pace_lead >= 0 ? o.pace_lead : pl.alg >= 0 ? tc_pace_lead(pl.alg, plan_topo, default_rate) : 0;
    return pl;
}

/* `"NAME": {"1": n, "2": n, "3-4": n, ...}`: counts in gso_count's bins */
void print_bins(const char *name, const gso_count &c)
{
    printf("\"%s\": {", name);
    for (int b = 0; b < gso_count::SIZE_BINS; b++)
        printf("%s\"%s\": %llu", b ? ", " : "", gso_count::SIZE_LABELS[b], (unsigned long long)c.by_size[b]);
    printf("}");
}

/* The network's and TCP's counters, from zero: after the handshakes, and after
 * each size when several run. */
void reset_counts(tree_net &net)
{
    net.drops_switch = net.drops_host = net.drops_device = net.drops_unplaced = 0;
    net.host_queue_peak = net.host_queue_peers_peak = 0;
    net.host_gso = net.host_clumps = gso_count();
    net.host_clump_max = 0;
    for (auto &pd : net.ports) pd.drops = 0;
    g_freezes.count = g_freezes.held_in = g_freezes.held_out = 0;
    g_softirqs.frames = 0;
    sim_reset_stats();
    probing_tcp_reset();
}

/* A connection's memory in the simulation, both ends: 1,024 machines, every
 * pair connected (523,776), took 11.2 GiB (docs/packet.md). */
constexpr double CONNECTION_BYTES = 23.0 * 1024;

/* Refuse a run whose connections would not fit this machine's available
 * memory (MemAvailable), before opening them: past it the kernel kills the
 * run hours in. */
void check_memory(const std::vector<char> &need, int p)
{
    long long pairs = 0;
    for (char c : need) pairs += c;
    const double want = (double)pairs * CONNECTION_BYTES;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return;
    char line[256];
    double avail = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &avail) == 1) {
            avail *= 1024;
            break;
        }
    fclose(f);
    if (avail > 0 && want > avail)
        usage_error(std::to_string(p) + " machines need " + std::to_string(pairs) + " TCP connections, about " +
                    std::to_string((long long)(want / (1 << 30)) + 1) + " GiB, and this machine has " +
                    std::to_string((long long)(avail / (1 << 30))) + " GiB available");
}

net_options network_options(const options &o)
{
    return {o.rate, o.latency, o.buffer, o.host_queue_packets,
            o.host_queue == "sparse-first", o.socket_lookup == "hash", o.tcp.gso_clumps,
            o.tcp.small_queues && o.tsq_until == "receiver"};
}

/* --topology, checked for what the simulator takes: one rank a machine, two
 * machines or more, links within its limits (tree_net.h). */
tc_topology *load_topology(const options &o)
{
    tc_topology *topo = nullptr;
    if (tc_topology_load(o.topology.c_str(), TC_FORMAT_AUTO, &topo) != TC_OK)
        usage_error(tc_error_message());
    const int p = tc_topology_num_machines(topo);
    for (int r = 0; r < p; r++)
        if (tc_topology_machine_slots(topo, r) != 1)
            usage_error("machine '" + std::string(tc_topology_node_name(topo, tc_topology_machine_node(topo, r))) +
                        "' has " + std::to_string(tc_topology_machine_slots(topo, r)) +
                        " slots; the packet simulator runs one rank a machine");
    if (p < 2) usage_error("the topology has fewer than 2 machines");
    if (std::string why = tree_net_check(topo, network_options(o)); !why.empty()) usage_error(why);
    return topo;
}

/* The TCP behaviours a run models, as JSON fields: one list for the
 * results and --print-settings. */
std::string tcp_behaviours_json(const options &o)
{
    const std::pair<const char *, bool> flags[] = {
        {"small_queues", o.tcp.small_queues},   {"forward_retransmits", o.tcp.forward_retransmits},
        {"timeout_keeps_ssthresh", o.tcp.timeout_keeps_ssthresh}, {"rack_recovery", o.tcp.rack_recovery}, {"rack_ties", o.tcp.rack_ties}, {"reo_window", o.tcp.reo_window}, {"timer_ticks", o.tcp.timer_ticks},
        {"linux_cubic", o.linux_cubic},         {"count_delivered", o.tcp.count_delivered},
        {"linux_hystart", o.tcp.linux_hystart}, {"hystart_rounds", o.tcp.hystart_rounds}, {"linux_rto", o.tcp.linux_rto},
        {"linux_tlp", o.tcp.linux_tlp},         {"probe_small_queues", o.tcp.probe_small_queues}, {"linux_prr", o.tcp.linux_prr},
        {"sack_compression", o.tcp.sack_compression}, {"ack_rtt", o.tcp.ack_rtt},
        {"tsq_gso", o.tcp.tsq_gso},             {"window_in_packets", o.tcp.window_in_packets},
        {"gso_clumps", o.tcp.gso_clumps},       {"linux_receive", o.tcp.linux_receive}};
    std::string json;
    for (const auto &[name, on] : flags) json += std::string(json.empty() ? "" : ", ") + "\"" + name + "\": " + (on ? "true" : "false");
    return json + ", \"hystart_ack_delta_us\": " + std::to_string(o.tcp.hystart_ack_delta_us) + ", \"tsq_until\": \"" +
           (o.tcp.small_queues ? o.tsq_until : "none") + "\"";
}

/* The host's cores as a run models them, as JSON fields (likewise) */
std::string host_json(const options &o)
{
    char poll[32], slice[32], freezes[32], softirq[32];
    snprintf(poll, sizeof poll, "%.6g", o.yield_poll);
    snprintf(slice, sizeof slice, "%.6g", o.cpu_slice);
    snprintf(freezes, sizeof freezes, "%.6g", o.host_freezes);
    snprintf(softirq, sizeof softirq, "%.6g", o.host_softirq);
    return "\"host_cores\": " + std::to_string(o.host_cores) + ", \"idle_wakes\": " + (o.idle_wakes ? "true" : "false") +
           ", \"barrier_spins\": " + (o.barrier_spins ? "true" : "false") + ", \"idle_yield\": " +
           (o.idle_yield ? "true" : "false") + ", \"yield_poll\": " + poll + ", \"cpu_slice\": " + slice +
           ", \"host_freezes\": " + freezes + ", \"host_softirq\": " + softirq;
}

}  // namespace

int main(int argc, char **argv)
{
    options o = parse(argc, argv);
    if (o.print_settings) {   /* what a result's settings say, from the one place that decides them */
        if (!o.topology.empty()) load_topology(o);   /* and whether it takes the topology */
        printf("{\"ns3\": \"%d.%d\", \"congestion\": \"%s\", \"mss\": %lld, \"delayed_ack_s\": %.9g, \"rto_min_s\": %.9g, "
               "\"loss_probes\": %s, \"lost_retransmits\": %s, %s, \"sndbuf\": %lld, \"rcvbuf\": %lld, "
               "\"buffer_packets\": %d, \"host_queue\": \"%s\", \"host_queue_packets\": %d, \"rendezvous\": \"%s\", "
               "\"connect\": \"%s\", %s}\n",
               NS3_VERSION_MAJOR, NS3_VERSION_MINOR, o.congestion.c_str(), o.mss, o.delayed_ack, o.rto_min,
               o.tcp.probes ? "true" : "false", o.tcp.lost_retransmits ? "true" : "false", tcp_behaviours_json(o).c_str(),
               o.sndbuf, o.rcvbuf, o.buffer, o.host_queue.c_str(), o.host_queue_packets, o.rendezvous.c_str(), o.connect.c_str(),
               host_json(o).c_str());
        return 0;
    }
    double wall0 = wall_now();
    tc_topology *topo = load_topology(o);
    const int p = tc_topology_num_machines(topo);
    const double default_rate = network_options(o).rate_bps;
    tc_topology *plan_topo = topo;
    if (!o.plan_topology.empty()) {
        if (tc_topology_load(o.plan_topology.c_str(), TC_FORMAT_AUTO, &plan_topo) != TC_OK)
            usage_error(tc_error_message());
        if (tc_topology_num_machines(plan_topo) != p)
            usage_error("--plan-topology has " + std::to_string(tc_topology_num_machines(plan_topo)) +
                        " machines, --topology " + std::to_string(p));
    }

    /* each size's schedule */
    std::vector<size_plan> plans;
    long long largest = 0;
    for (long long block : o.blocks) {
        plans.push_back(plan_size(o, plan_topo, p, block, default_rate));
        largest = std::max(largest, block);
    }
    const size_t sizes = plans.size();

    /* the data: every rank's own buffers when checked, else one pair shared */
    const double buffer_bytes = 2.0 * p * (double)p * (double)largest;
    const bool check = o.check == 1 || (o.check == -1 && buffer_bytes <= (double)(1LL << 30));
    if (check && buffer_bytes > 8.0 * (1LL << 30))
        usage_error("--check needs " + std::to_string((long long)(buffer_bytes / (1 << 20))) +
                    " MiB of buffers (more than 8 GiB); run without it");
    const size_t span = (size_t)p * (size_t)largest;
    std::vector<std::vector<unsigned char>> sbuf(check ? p : 1, std::vector<unsigned char>(span)),
        rbuf(check ? p : 1, std::vector<unsigned char>(span));

    /* the network */
    tcp_defaults(o);
    tree_net net;
    std::string why = tree_net_build(topo, network_options(o), net);
    if (!why.empty()) usage_error(why);
    mpi_options mo;
    mo.move_data = check;
    mo.tcp = o.tcp;
    mo.tcp.sndbuf_auto = o.sndbuf == 0;
    mo.corrupt_message = o.corrupt_message;
    mo.rendezvous = o.rendezvous == "put" ? rendezvous_kind::put : rendezvous_kind::copy;
    mo.connect = CONNECT_MODES.at(o.connect);
    mo.host_cores = o.host_cores;
    mo.cpu_slice = o.cpu_slice;
    mo.idle_wakes = o.idle_wakes;
    mo.barrier_spins = o.barrier_spins;
    mo.idle_yield = o.idle_yield;
    mo.yield_poll = o.yield_poll;
    mo.host_freezes = o.host_freezes;
    mo.host_softirq = o.host_softirq;
    mo.seed = o.seed;
    sim_world_init(&net, mo);
    /* the connections any size's schedule uses (the MPI's own: every pair) */
    std::vector<char> need((size_t)p * p, 0);
    for (const size_plan &pl : plans) {
        if (!pl.sched) {
            std::fill(need.begin(), need.end(), 1);
            continue;
        }
        const tc_op *ops = tc_schedule_ops(pl.sched);
        for (int64_t k = 0; k < tc_schedule_num_ops(pl.sched); k++) {
            int a = ops[k].src < ops[k].dst ? ops[k].src : ops[k].dst, b = ops[k].src ^ ops[k].dst ^ a;
            if (a != b) need[(size_t)a * p + b] = 1;
        }
        for (int64_t k = 0; k < tc_schedule_num_syncs(pl.sched); k++) {
            const tc_sync &y = tc_schedule_syncs(pl.sched)[k];
            int a = ops[y.after].src, b = ops[y.before].src;
            if (a > b) std::swap(a, b);
            if (a != b) need[(size_t)a * p + b] = 1;
        }
    }
    check_memory(need, p);
    double connect_s = sim_connect(need, p);
    const unsigned long long connect_drops = net.drops_switch + net.drops_host + net.drops_device;
    reset_counts(net);   /* what follows counts the calls only, not the handshakes */

    /* the ranks: each size's warm-ups and timed calls, the sizes in turn */
    const int per = o.warmup + o.repetitions, calls = per * (int)sizes;
    std::vector<std::vector<double>> dt(calls, std::vector<double>(p, 0));
    std::vector<int> done(calls, 0);   /* ranks through each call */
    std::vector<long long> bad_bytes(sizes, 0);
    std::vector<double> rate_to((size_t)p * p, 0);
    const bool paced = std::any_of(plans.begin(), plans.end(), [](const size_plan &pl) { return pl.paced; });
    for (int r = 0; paced && r < p; r++) tc_pace_rates(plan_topo, r, default_rate, &rate_to[(size_t)r * p]);
    const double bound = (double)tc_topology_alltoall_load(topo);
    double wall_mark = wall0;
    /* a size's JSON line, once every rank is through its last call; its
     * counters then start again from zero for the next size */
    auto report = [&](size_t b) {
        const size_plan &pl = plans[b];
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        const sim_stats &ss = sim_get_stats();
        printf("{\"algorithm\": \"%s\", \"machines\": %d, \"block\": %lld, \"schedule\": \"%s\", \"paced\": %s, "
               "\"pace_lead\": %.6g, \"times\": [",
               o.algorithm.c_str(), p, pl.block, pl.sched ? tc_schedule_algorithm(pl.sched) : pl.native_choice,
               pl.paced ? "true" : "false", pl.lead);
        for (int k = o.warmup; k < per; k++) {
            const std::vector<double> &t = dt[b * per + k];
            printf("%s%.9g", k > o.warmup ? ", " : "", *std::max_element(t.begin(), t.end()));
        }
        printf("], \"warmup_times\": [");
        for (int k = 0; k < o.warmup; k++) {
            const std::vector<double> &t = dt[b * per + k];
            printf("%s%.9g", k ? ", " : "", *std::max_element(t.begin(), t.end()));
        }
        const double now = wall_now();
        const probing_tcp_hystart hy = probing_tcp_hystart_counts();
        printf("], \"bottleneck_load\": %.0f, \"checked\": %s, \"bad_bytes\": %lld, \"drops_switch\": %llu, "
               "\"drops_host\": %llu, \"drops_device\": %llu, \"messages\": %llu, \"fragments\": %llu, \"rendezvous\": %llu, "
               "\"wire_bytes\": %llu, \"tcp_timeouts\": %llu, \"tcp_recoveries\": %llu, \"tcp_loss_probes\": %llu, \"tcp_loss_probes_held\": %llu, \"tcp_lost_retransmits\": %llu, \"tcp_timeout_lost_retransmits\": %llu, \"tcp_rack_lost\": %llu, \"tcp_rack_ties\": %llu, \"tcp_reo_timeouts\": %llu, \"tcp_sack_reorder\": %llu, \"tcp_counted_before\": %llu, \"tcp_hystart_exits\": %llu, \"tcp_recovery_timeouts\": %llu, \"tcp_recovery_s\": %.6g, \"tcp_floor_timeouts\": %llu, \"tcp_repeat_timeouts\": %llu, \"tcp_acks_compressed\": %llu, \"tcp_acks_at_read\": %llu, \"tcp_tsq_releases\": %llu, \"reads_waited\": %llu, \"reads_late\": %llu, \"connect_s\": %.6g, \"connect_drops\": %llu, \"native_choice\": \"%s\", \"wall_s\": %.3f, "
               "\"max_rss_mib\": %.1f, \"rendezvous_protocol\": \"%s\", \"connect\": \"%s\", \"connections_before\": %zu, "
               "\"connections_at_first_message\": %zu, \"skew\": %.9g, \"seed\": %llu, ",
               bound, check ? "true" : "false", bad_bytes[b], (unsigned long long)net.drops_switch,
               (unsigned long long)net.drops_host, (unsigned long long)net.drops_device, (unsigned long long)ss.messages, (unsigned long long)ss.fragments,
               (unsigned long long)ss.rendezvous, (unsigned long long)ss.wire_bytes, (unsigned long long)ss.timeouts, (unsigned long long)ss.recoveries,
               (unsigned long long)probing_tcp_probes(), (unsigned long long)probing_tcp_probes_held(), (unsigned long long)probing_tcp_lost_retransmits(), (unsigned long long)probing_tcp_timeout_lost_retransmits(),
               (unsigned long long)probing_tcp_rack_lost(), (unsigned long long)probing_tcp_rack_ties(), (unsigned long long)probing_tcp_reo_timeouts(), (unsigned long long)probing_tcp_sack_reorder(), (unsigned long long)probing_tcp_counted_before(),
               (unsigned long long)hy.exits, (unsigned long long)ss.recovery_timeouts, ss.recovery_s,
               (unsigned long long)probing_tcp_floor_timeouts(), (unsigned long long)probing_tcp_repeat_timeouts(), (unsigned long long)probing_tcp_acks_compressed(), (unsigned long long)probing_tcp_acks_at_read(),
               (unsigned long long)probing_tcp_tsq_releases(), (unsigned long long)ss.reads_waited, (unsigned long long)ss.reads_late, connect_s, connect_drops, pl.native_choice,
               now - wall_mark, ru.ru_maxrss / 1024.0, o.rendezvous.c_str(), o.connect.c_str(), sim_connections_before_run(),
               sim_connections_in_run(), o.skew, o.seed);
        printf("\"tcp_hystart_train\": %llu, \"tcp_hystart_train_cwnd\": %llu, \"tcp_hystart_delay\": %llu, "
               "\"tcp_hystart_delay_cwnd\": %llu, \"drops_by_port\": {", (unsigned long long)hy.train, (unsigned long long)hy.train_cwnd,
               (unsigned long long)hy.delay, (unsigned long long)hy.delay_cwnd);
        /* the switch ports that dropped most, most first */
        std::vector<const port_drops *> worst;
        for (const auto &pd : net.ports)
            if (pd.drops) worst.push_back(&pd);
        std::sort(worst.begin(), worst.end(), [](const port_drops *a, const port_drops *b) { return a->drops > b->drops; });
        for (size_t k = 0; k < worst.size() && k < 12; k++)
            printf("%s\"%s\": %llu", k ? ", " : "", worst[k]->port.c_str(), (unsigned long long)worst[k]->drops);
        printf("}, \"ports_dropping\": %zu, \"drops_unplaced\": %llu, \"host_queue_peak\": %llu, "
               "\"host_queue_peers_peak\": %llu, \"host_segments\": %llu, \"host_gso_packets\": %llu, "
               "\"host_freeze_count\": %llu, \"host_freeze_held_in\": %llu, \"host_freeze_held_out\": %llu, "
               "\"host_softirq_frames\": %llu, ",
               worst.size(), (unsigned long long)net.drops_unplaced, (unsigned long long)net.host_queue_peak,
               (unsigned long long)net.host_queue_peers_peak, (unsigned long long)net.host_gso.segments,
               (unsigned long long)net.host_gso.packets, (unsigned long long)g_freezes.count,
               (unsigned long long)g_freezes.held_in, (unsigned long long)g_freezes.held_out,
               (unsigned long long)g_softirqs.frames);
        print_bins("host_gso_sizes", net.host_gso);   /* the GSO packets by their segments */
        printf(", ");
        print_bins("host_clumps", net.host_clumps);   /* gso_clumps: a flow's frames leaving a machine together */
        printf(", \"host_clump_max\": %llu, %s, %s}\n", (unsigned long long)net.host_clump_max,
               tcp_behaviours_json(o).c_str(), host_json(o).c_str());
        fflush(stdout);
        wall_mark = now;
        reset_counts(net);
    };
    if (o.progress) {   /* long runs: where the simulated clock is, every simulated second */
        static double started;
        started = wall0;
        static std::function<void()> tick;
        tick = [] {
            if (wall_now() - started > 30)
                fprintf(stderr, "topocoll-packet: at %.0f s simulated, %.0f s of wall time\n",
                        Simulator::Now().GetSeconds(), wall_now() - started);
            Simulator::Schedule(Seconds(1), +[] { tick(); });
        };
        Simulator::Schedule(Seconds(1), +[] { tick(); });
    }
    if (!o.trace.empty()) {
        const std::string err = event_trace_open(o.trace);
        if (!err.empty()) {
            fprintf(stderr, "topocoll-packet: error: %s\n", err.c_str());
            return 1;
        }
        event_trace_tcp(o.trace_tcp);
    }
    sim_run_ranks([&](int me) {
        for (size_t b = 0; b < sizes; b++) {
            const size_plan &pl = plans[b];
            tcx_state st{};
            if (pl.sched && tcx_state_init(&st, &pl.tables, 0) != MPI_SUCCESS) {
                fprintf(stderr, "topocoll-packet: executor setup failed\n");
                exit(3);
            }
            st.pace.rate_to = pl.paced ? &rate_to[(size_t)me * p] : nullptr;
            st.pace.lead = pl.lead;
            st.pace.lead_share = o.pace_lead >= 0 ? 0 : o.pace_lead_share >= 0 ? o.pace_lead_share / 100 : TC_DEFAULT_PACE_LEAD_SHARE;
            st.pace.piece_bytes = (int)o.piece_size;
            st.nap = o.nap > 0 ? sim_sleep : nullptr;   /* none: the executor's blocking waits, woken on completion */
            exec_trace_ctx tctx{me, 0};
            if (event_tracing()) {
                st.trace = exec_trace;
                st.trace_ctx = &tctx;
            }
            st.nap_max = o.nap;
            unsigned char *s = sbuf[check ? me : 0].data(), *rv = rbuf[check ? me : 0].data();
            const long long m = pl.block;
            for (int k = 0; k < per; k++) {   /* k: the call at this size, c: in the run */
                const int c = (int)b * per + k;
                if (check) {
                    for (int d = 0; d < p; d++)
                        for (long long i = 0; i < m; i++) s[(size_t)d * m + i] = pattern(me, d, i, k);
                    memset(rv, 0xEE, (size_t)p * m);
                }
                /* this rank leaves it late: with --starts, timed call k as line k
                 * (cycled), the warm-ups as the last lines; else by --skew (the
                 * same draws at each size) */
                const int line = pl.start_lines ? ((k - o.warmup) % pl.start_lines + pl.start_lines) % pl.start_lines : 0;
                sim_barrier(pl.start_lines ? pl.starts[(size_t)line * p + (size_t)me]
                            : o.skew > 0 ? o.skew * uniform(o.seed, k, me) : 0);
                double t0 = SIM_Wtime();
                tctx.call = c;
                if (me == 0) event_trace("call %d %lld %s", c, m, k < o.warmup ? "untimed" : "timed");
                if (me == 0 && o.progress && wall_now() - wall0 > 5)   /* long runs only */
                    fprintf(stderr, "topocoll-packet: %lld B: call %d of %d (%s) starts at %.3f s simulated, %.1f s of wall time\n",
                            m, k + 1, per, k < o.warmup ? "warm-up" : "timed", t0, wall_now() - wall0);
                if (me == 0 && o.give_up > 0) {   /* a call too slow to matter: stop, say how far it got */
                    static std::function<void(int)> give_up;
                    give_up = [&, p, m](int call) {
                        if (done[call] == p) return;
                        printf("{\"algorithm\": \"%s\", \"machines\": %d, \"block\": %lld, \"times\": [], "
                               "\"gave_up\": {\"call\": %d, \"after_s\": %.6g, \"ranks_done\": %d}, \"drops_switch\": %llu, "
                               "\"tcp_timeouts\": %llu, \"connect_s\": %.6g, \"connect_drops\": %llu, \"wall_s\": %.3f}\n",
                               o.algorithm.c_str(), p, m, call % per + 1, o.give_up, done[call],
                               (unsigned long long)net.drops_switch, (unsigned long long)sim_get_stats().timeouts,
                               connect_s, connect_drops, wall_now() - wall_mark);
                        fflush(stdout);
                        _Exit(0);
                    };
                    Simulator::Schedule(Seconds(o.give_up), +[](int call) { give_up(call); }, c);
                }
                if (pl.native && !pl.sched) native_openmpi_run(pl.native, me, p, (const char *)s, (char *)rv, m);
                else if (tcx_alltoall(&st, s, (int)m, MPI_BYTE, rv, (int)m, MPI_BYTE) != MPI_SUCCESS) {
                    fprintf(stderr, "topocoll-packet: the executor failed on rank %d\n", me);
                    exit(3);
                }
                dt[c][me] = SIM_Wtime() - t0;
                if (check)
                    for (int from = 0; from < p; from++)
                        for (long long i = 0; i < m; i++)
                            if (rv[(size_t)from * m + i] != pattern(from, me, i, k)) bad_bytes[b]++;
                if (++done[c] == p && k == per - 1 && b + 1 < sizes) report(b);   /* the last size: below */
            }
            if (pl.sched) tcx_state_free(&st);
        }
    }, 256 * 1024);
    report(sizes - 1);   /* after the simulation: its last ACKs and timers counted */
    if (!event_trace_close()) {
        fprintf(stderr, "topocoll-packet: error: writing the trace %s failed\n", o.trace.c_str());
        return 1;
    }

    Simulator::Destroy();
    long long bad = 0;
    for (size_t b = 0; b < sizes; b++) {
        bad += bad_bytes[b];
        free(plans[b].starts);
        if (plans[b].sched) tc_schedule_destroy(plans[b].sched);
    }
    if (plan_topo != topo) tc_topology_destroy(plan_topo);
    tc_topology_destroy(topo);
    return bad ? 1 : 0;
}
