/* TCP as Linux recovers a lost tail (probing_tcp.cc): ns-3 3.37's TCP has
 * SACK and PRR but neither tail loss probes (TLP) nor RACK, so a message
 * whose last segments are dropped waits for the 200 ms retransmission
 * timeout where Linux probes after two round trips and recovers. */
#ifndef TOPOCOLL_PROBING_TCP_H
#define TOPOCOLL_PROBING_TCP_H

#include <cstdint>
#include <string>

#include "linux_cubic.h"
#include "ns3/internet-module.h"

/* What the sockets do as Linux's do (each can be set to ns-3's own to measure it). */
struct probing_tcp_options {
    bool probes = true;             /* tail loss probes */
    bool lost_retransmits = true;   /* RACK finds a lost retransmission */
    bool rack_recovery = true;      /* and, in a fast recovery, a lost first transmission (probing_tcp.cc) */
    /* RACK's clock orders segments sent at one instant (one transmit loop
     * stamps them alike, in the kernel as here) as they went: Linux by
     * sequence (tcp_skb_sent_after), its order within a loop; here by the
     * order of sending (probing_tcp.cc says why); off: only a segment
     * sent strictly earlier than one delivered is lost, so a lost
     * retransmission sent with a segment that arrived waits for the timeout.
     * Linux's, yet off by default: on, a third of the timeouts go, but the
     * grid moves away (59 of 64 against 62 pooled; held out 3 of 5 against
     * 4: docs/results/2026-12-02-packet-retransmits-lost-again.md) */
    bool rack_ties = false;
    /* Before a recovery, RACK's reordering window as Linux's
     * (tcp_rack_reo_wnd, tcp_rack_detect_loss, tcp_rack_mark_lost): with
     * fewer than three segments SACKed (tp->reordering), a hole is lost
     * once RACK's RTT (the last segment delivered's) and a quarter of the
     * least RTT (at most the smoothed RTT) have passed since it went; else
     * at the reordering timer, which each ACK that delivers anything sets
     * again to its wait plus 2 ms in whole jiffies (usecs_to_jiffies), or at
     * the third segment SACKed.  The recovery it starts sizes its window as
     * if a segment was delivered (tcp_rack_reo_timeout).  Off: the first
     * SACK above a hole starts the recovery (ns-3's duplicate-ACK threshold
     * at 1).  Linux's, yet off by default: see docs/packet.md. */
    bool reo_window = false;
    bool sndbuf_auto = true;        /* the send buffer grows with the window */
    /* After every ACK and every segment sent, ns-3's counts of a
     * connection's SACKed, lost and resent bytes are checked against its
     * segments (ns-3 checks them only in debug builds); a mismatch stops the
     * run (exit 3).  Off by default: it walks the window each time. */
    bool check_scoreboard = false;
    bool small_queues = true;       /* TCP small queues: below */
    /* TCP small queues check a GSO packet at a time, as Linux's
     * tcp_write_xmit does: its segments go out in GSO packets of up to
     * tcp_tso_autosize's count (at most half the window, the window left
     * and the data), the limit is checked before each with twice its
     * truesize, and the packet goes whole.  This simulator's segments go
     * singly; checked a segment at a time (off), a connection whose share
     * of its machine's queue was spent sends a segment as one leaves and
     * rarely fills its window, so (tcp_is_cwnd_limited) its window stops
     * growing after slow start.  On, the windows come to the kernel's, but
     * the validation grid moves away: off by default
     * (docs/results/2026-12-01-packet-gso-queues.md). */
    bool tsq_gso = false;
    /* With tsq_gso, GSO packets built and sent as the testbed's kernel
     * does: a packet smaller than a full one and a third of the window
     * waits for an ACK due within min(srtt / 2, 1 ms)
     * (tcp_tso_should_defer); the machine's queue sends its segments
     * together and shapes as the testbed's tbf over its htb, switch ports
     * as its tbf (tree_net.cc).  The packets come to the kernel's; off by
     * default (docs/results/2026-12-02-packet-gso-clumps.md,
     * docs/results/2026-12-05-packet-probe-from-the-top.md). */
    bool gso_clumps = false;
    /* A restart after idle halving the window and keeping 3/4 of it as
     * the threshold in whole segments, as Linux counts them
     * (tcp_cwnd_restart, tcp_current_ssthresh); off, to the byte.  Either
     * way a window is full when no full segment fits in it (Linux's
     * tcp_cwnd_validate: packets in flight >= snd_cwnd; ns-3 sends no
     * segment into less), so it grows in congestion avoidance.  Off by
     * default (docs/results/2026-12-01-packet-gso-queues.md,
     * docs/results/2026-12-03-packet-full-windows.md). */
    bool window_in_packets = false;
    /* RFC 6675's NextSeg rule 3, which ns-3 follows: in a fast recovery with
     * no segment marked lost left to resend and no new data, resend the
     * first segment still in flight, not known lost.  Linux does not (its
     * tcp_xmit_retransmit_queue resends only segments marked lost).  At a
     * message's tail it resends whole windows of segments still on their
     * way, and RACK's clock then takes the originals' SACKs for the resends'
     * (docs/results/2026-11-27-packet-forward-retransmits.md). */
    bool forward_retransmits = false;
    /* a timeout during a fast recovery keeps the slow-start threshold that
     * recovery set, as Linux's tcp_enter_loss does; ns-3 sets it again from
     * the shrunken window (probing_tcp.cc) */
    bool timeout_keeps_ssthresh = true;
    /* the congestion control (Linux's cubic) is told the segments an ACK
     * newly delivers, as Linux's tcp_ack counts them; ns-3 counts again the
     * ones SACKed before (probing_tcp.cc) */
    bool count_delivered = true;
    /* the congestion control (Linux's cubic) runs Linux's HyStart, else
     * ns-3's (linux_cubic.h; its exits come to the testbed kernel's count,
     * docs/results/2026-11-29-packet-host-cores.md) */
    bool linux_hystart = true;
    /* Linux's HyStart begins its rounds below its low window, as Linux 6.14
     * on (linux_cubic.h): the testbed's kernel ends most first slow starts
     * at 16 segments, as this does, where rounds begun at the low window
     * end them at 18-22; off by default: on, the validation grid moves
     * away (docs/results/2026-12-05-packet-hystart-rounds.md) */
    bool hystart_rounds = false;
    /* Linux's HyStart takes each ACK's own round-trip sample (probing_tcp.cc:
     * rtt_of), as Linux's cubic does; else the RTT ns-3 hands the congestion
     * control, its smoothed one */
    bool ack_rtt = true;
    /* Linux's HyStart: the longest gap between two ACKs of a train, us (the
     * kernel's tcp_cubic hystart_ack_delta_us; on the testbed at 100 Mbit/s
     * a trunk connection's ACKs come about that far apart,
     * docs/results/2026-12-03-packet-rates.md) */
    uint32_t hystart_ack_delta_us = topocoll::LINUX_HYSTART_ACK_DELTA_US;
    /* the retransmission timer as Linux's: srtt + max(4 x rttvar, the
     * minimum) in whole ticks of LINUX_TICK_NS, and restarted when a fast
     * recovery resends the first unacknowledged segment
     * (tcp_xmit_retransmit_queue); ns-3's is max(the minimum, srtt +
     * 4 x rttvar), restarted only by an ACK of new data.  Its timeouts
     * came 20-40 ms earlier in a call than the kernel's
     * (docs/results/2026-11-28-packet-timeline.md). */
    bool linux_rto = true;
    /* the tail loss probe's timer as Linux's (tcp_schedule_loss_probe,
     * tcp_send_loss_probe): armed only in order (not in disorder), at the
     * RTO's time where that comes first (the probe then goes in the RTO's
     * place), one probe outstanding until an ACK covers it, and the RTO
     * restarted from the probe; otherwise a probe due after the RTO is not
     * armed and the RTO fires */
    bool linux_tlp = true;
    /* a probe's new data passes small queues as any new data must
     * (tcp_send_loss_probe sends it through tcp_write_xmit, whose
     * tcp_small_queue_check holds it back): a connection over its share of
     * the queue sends no probe then, the RTO stays, and a frame leaving
     * sends again as the window allows; off, the probe goes regardless */
    bool probe_small_queues = true;
    /* TCP's timers run when Linux's timer wheel runs them: a timer set for
     * whole 4 ms jiffies (the loss probe's 2 x srtt plus its margin rounded
     * up, as usecs_to_jiffies does; the RTO; the reordering timer) runs on
     * the tick after the jiffy it expires in (the wheel files a timer a
     * bucket late so that none runs early: calc_index), between that many
     * and one more ticks after it was set, and one of 63 jiffies or more
     * on the next multiple of 8 (the wheel's next level); off: the probe and
     * the RTO at their time to the nanosecond, the reordering timer on the
     * tick it expires */
    bool timer_ticks = false;
    /* a fast recovery's window as Linux's proportional rate reduction sizes
     * it, after the ACK's losses are marked (linux_prr.h); else ns-3's
     * TcpPrrRecovery, before the simulator's RACK marks them */
    bool linux_prr = true;
    /* the receiver compresses SACKs as Linux's (__tcp_ack_snd_check): of
     * the ACKs out-of-order segments call for at one point of the stream,
     * the first few go at once, the rest wait up to srtt / 20 and go as
     * one (the limits: LINUX_COMP_SACK_* and LINUX_FASTRETRANS_THRESH
     * below); ns-3 ACKs every out-of-order segment at once */
    bool sack_compression = true;
    /* The receiver's window and ACKs as Linux's (linux_receive.h): a
     * receive buffer from tcp_rmem's default that grows as the application
     * reads, a window grown a segment at a time, and an ACK past a full
     * segment at once only while that window would not shrink, else at the
     * application's next read (a stretch ACK) or the delayed-ACK timer; off:
     * ns-3's, a fixed buffer (--rcvbuf) and an ACK every second segment */
    bool linux_receive = false;
};

/* SACK compression's limits: ACKs held at most (net.ipv4.tcp_comp_sack_nr),
 * the longest they wait (tcp_comp_sack_delay_ns), and the duplicate ACKs
 * that go at once first (TCP_FASTRETRANS_THRESH) */
constexpr uint32_t LINUX_COMP_SACK_NR = 44;
constexpr int64_t LINUX_COMP_SACK_DELAY_NS = 1000000;
constexpr uint32_t LINUX_FASTRETRANS_THRESH = 3;
/* A jiffy of the emulated cluster's kernel (HZ 250), in which Linux counts its RTO */
constexpr int64_t LINUX_TICK_NS = 4000000;
/* whole ticks in `ns`, rounded up (usecs_to_jiffies) */
constexpr int64_t linux_ticks(int64_t ns) { return (ns + LINUX_TICK_NS - 1) / LINUX_TICK_NS; }
/* the least a RACK or loss-probe timer waits beyond its own time (TCP_TIMEOUT_MIN_US) */
constexpr int64_t LINUX_TIMEOUT_MIN_NS = 2000000;
/* the ticks Linux (6.18, as the testbed runs) sets such a timer for: its wait
 * plus 2 ms in whole ticks (usecs_to_jiffies); it fires on the last of them */
constexpr int64_t linux_timeout_ticks(int64_t wait_ns) { return linux_ticks(wait_ns + LINUX_TIMEOUT_MIN_NS); }
/* the instant (ns) a Linux timer set `ticks` jiffies ahead and expiring in
 * the jiffy holding `expiry_ns` runs (timer_ticks): the timer wheel files it
 * in the bucket past its expiry at its level's granularity, a jiffy below 63
 * jiffies ahead, 8 below 504, 64 beyond (calc_wheel_index, calc_index) */
constexpr int64_t linux_wheel_run_ns(int64_t expiry_ns, int64_t ticks)
{
    int shift = 0;
    for (int64_t start = 63; ticks >= start && shift < 21; start <<= 3) shift += 3;
    return ((((expiry_ns / LINUX_TICK_NS) >> shift) + 1) << shift) * LINUX_TICK_NS;
}
/* how long from `now_ns` a Linux timer set for `ticks` jiffies runs: on
 * the tick after jiffies + ticks (timer_ticks) */
constexpr int64_t linux_timer_ns(int64_t now_ns, int64_t ticks)
{
    return linux_wheel_run_ns(now_ns + ticks * LINUX_TICK_NS, ticks) - now_ns;
}
static_assert(linux_timer_ns(1000000, 1) == 7000000 && linux_timer_ns(0, 1) == 8000000 &&
                  linux_timer_ns(0, 50) == 204000000 && linux_timer_ns(0, 100) == 416000000,
              "a timer set for a jiffy runs one to two ticks later; one of 100, on the next 8");
static_assert(linux_timeout_ticks(2000) == 1 && linux_timeout_ticks(2000000) == 1 && linux_timeout_ticks(2000001) == 2,
              "a wait of microseconds fires within a tick (0-4 ms), one over 2 ms within two");
/* A connected-socket factory for a node: the subclass below, with the
 * node's TCP defaults (congestion control, recovery, RTT estimator). */
ns3::Ptr<ns3::Socket> probing_tcp_socket(ns3::Ptr<ns3::Node> node, const probing_tcp_options &o);

/* Linux's TCP small queues (tcp_small_queue_check): a socket stops handing
 * its machine's egress queue data while that queue holds more of its
 * segments' memory than max(2 segments' truesize, 1/1024 s of its pacing
 * rate) (twice that in a recovery, where Linux retransmits with double the
 * limit), unless at most one segment is unacknowledged, and sends again as
 * they leave for the wire.  Without it every window waits in the machine's
 * queue, where a retransmission queues behind its own connection's backlog.
 * The queue reports its packets through this interface: the socket whose
 * data segment is being queued (null for anything else), then when each
 * packet of it leaves. */
struct small_queue_owner {
    virtual void queued(uint32_t bytes) = 0;
    virtual void left(uint32_t bytes) = 0;
    /* segments of the GSO packet being queued still to come after this one
     * (tsq_gso; else 0): the queue keeps them together (gso_clumps) */
    virtual uint32_t gso_follow() const { return 0; }
    virtual ~small_queue_owner() = default;
};
small_queue_owner *probing_tcp_sender();
/* a socket going away: its segments still on their way no longer report to it (tree_net.cc) */
void small_queue_forget(const small_queue_owner *s);
/* A one-segment skb's truesize (tcp_sndbuf_expand's per_mss: 1448 bytes of
 * data, headers, skb_shared_info, rounded to a power of two, plus sk_buff):
 * this simulator's segments are single, where the kernel's GSO builds larger
 * skbs and splits them under the queue (a departure: docs/packet.md). */
constexpr uint32_t LINUX_SEGMENT_TRUESIZE = 2304;
constexpr uint32_t TCP_IP_HEADERS = 40;   /* a segment's IPv4 and TCP headers, without timestamps */
/* GSO's sizes (tcp_tso_autosize): the testbed's devices' gso_max_size,
 * net.ipv4.tcp_tso_rtt_log, net.ipv4.tcp_min_tso_segs; and the pacing
 * rate's shift (sk_pacing_shift: 1/1024 s of it), which also sizes TCP
 * small queues' limit */
constexpr uint32_t LINUX_GSO_MAX_SIZE = 65536;
constexpr unsigned LINUX_TSO_RTT_LOG = 9;
constexpr uint32_t LINUX_MIN_TSO_SEGS = 2;
constexpr unsigned LINUX_PACING_SHIFT = 10;
/* Linux's send buffer for a window of `segments` (tcp_sndbuf_expand), in
 * bytes of data: 2 x per_mss bytes of memory a segment of the window (at
 * least 10), a queued segment of mss bytes taking LINUX_SENDQ_TRUESIZE_PER_SEGMENT
 * of memory, up to net.ipv4.tcp_wmem's maximum.  The constants were
 * measured on the emulated cluster's kernel (6.18 on this machine, TSO and GSO
 * off) with ss -m: the buffer is 46,080 bytes up to a window of 10 segments
 * and grows by 4,608 a segment; a send queue of n segments holds about
 * n x 1,560 bytes. */
constexpr uint64_t LINUX_SNDBUF_PER_SEGMENT = 2 * LINUX_SEGMENT_TRUESIZE;
constexpr uint64_t LINUX_SENDQ_TRUESIZE_PER_SEGMENT = 1560;
constexpr uint64_t LINUX_SNDBUF_MAX = 4194304;   /* net.ipv4.tcp_wmem's maximum */
uint32_t probing_tcp_sndbuf(uint64_t segments, uint32_t mss);
/* The TCP protocol to install on every node (InternetStackHelper::SetTcp):
 * ns-3's, finding a connected socket by a hash rather than a walk; or
 * ns-3's own (hash false). */
const char *probing_tcp_l4(bool hash);
/* A connection as the traces name it, LOCAL:PORT->PEER:PORT (event_trace.h) */
std::string probing_tcp_conn_name(ns3::Ipv4Address local, uint16_t local_port, ns3::Ipv4Address peer, uint16_t peer_port);
uint64_t probing_tcp_probes();   /* probes sent, all sockets, since the last reset */
uint64_t probing_tcp_probes_held();   /* probes of new data small queues held back (probe_small_queues), likewise */
uint64_t probing_tcp_lost_retransmits();   /* lost retransmissions found and sent again, likewise */
/* retransmitted segments still out when a timeout marks everything lost,
 * likewise: Linux's TCPLostRetransmit counts these too (tcp_timeout_mark_lost
 * calls tcp_mark_skb_lost), where probing_tcp_lost_retransmits counts
 * RACK's finds only */
uint64_t probing_tcp_timeout_lost_retransmits();
uint64_t probing_tcp_rack_lost();   /* first transmissions RACK found lost in a fast recovery, likewise */
uint64_t probing_tcp_sack_reorder();   /* ACKs from which Linux would infer reordering (its TCPSACKReorder) */
uint64_t probing_tcp_reo_timeouts();   /* recoveries the reordering timer started (reo_window) */
uint64_t probing_tcp_rack_ties();   /* of the segments RACK found lost, those sent in the instant of the one delivered (rack_ties) */
/* slow starts Linux's HyStart ended, likewise; and as the kernel counts
 * them (TCPHystartTrainDetect, -TrainCwnd, -DelayDetect, -DelayCwnd): by
 * the ACK train, by the delay (one exit can count in both), and the
 * windows then summed, in segments */
struct probing_tcp_hystart {
    uint64_t exits = 0, train = 0, train_cwnd = 0, delay = 0, delay_cwnd = 0;
};
probing_tcp_hystart probing_tcp_hystart_counts();
uint64_t probing_tcp_counted_before();   /* acknowledged segments SACKed before, not counted again to the window, likewise */
uint64_t probing_tcp_floor_timeouts();   /* timeouts after which the slow-start threshold is at its floor, 2 segments */
uint64_t probing_tcp_repeat_timeouts();   /* timeouts of a connection not recovered from its last one (its backed-off RTO) */
uint64_t probing_tcp_acks_compressed();   /* ACKs SACK compression did not send (Linux's TCPAckCompressed), likewise */
uint64_t probing_tcp_tsq_releases();   /* sockets small queues held back, sent again once their frames left, likewise */
uint64_t probing_tcp_acks_at_read();   /* ACKs the application's read sent (linux_receive: tcp_cleanup_rbuf), likewise */
void probing_tcp_reset();

#endif
