/* TCP with a tail loss probe (probing_tcp.h says why).
 *
 * The probe follows Linux's (tcp_schedule_loss_probe, tcp_send_loss_probe,
 * as in 6.1; the emulated cluster runs 6.18): while the connection is in order
 * and has data in flight, a probe is due 2 x SRTT after the last send or
 * ACK (plus the 200 ms delayed-ACK allowance when one segment is in flight,
 * else 2 ms), or at the retransmission timeout's time if that comes first
 * (linux_tlp: the probe goes in its place and restarts it; one probe
 * outstanding at a time); it sends new
 * data if there is some (passing small queues as any new data must:
 * probe_small_queues), else the last segment again.  Its ACK carries
 * SACK blocks above the hole, and with a duplicate-ACK threshold of 1 (set by
 * the caller: the simulated tree never reorders a flow's packets, so a hole
 * below SACKed data is a loss, as RACK concludes) fast recovery repairs the
 * tail instead of a timeout.
 *
 * A lost retransmission (lost_retransmits): ns-3 3.37 retransmits a
 * segment once per recovery (RFC 6675's NextSeg skips one already
 * retransmitted) and leaves a lost retransmission to the timeout.  Linux's
 * RACK (tcp_rack_detect_loss) marks any segment lost once a segment sent
 * after it has been delivered, less a reordering window that is 0 during a
 * recovery on a connection that has seen no reordering (tcp_rack_reo_wnd;
 * the simulated tree never reorders).  Here, while the connection recovers
 * (fast recovery or after a timeout), every ACK finds the latest send time
 * of a segment it acknowledges or that is SACKed, and every retransmitted,
 * unSACKed segment last sent before that goes again as the window allows
 * (the emulated cluster's counters and the simulator's:
 * docs/results/2026-11-26-packet-validation.md).  Segments sent in one
 * instant are ordered as they went, as Linux's tcp_skb_sent_after orders
 * them by sequence within a transmit loop (rack_ties).  A departure: Linux
 * moves that clock only for segments newly SACKed or acknowledged, and not
 * for a resent one delivered sooner than the least RTT after its resend
 * (tcp_rack_advance); here every ACK
 * takes every segment SACKed so far.  Modelled, it skipped 5 SACKs in 6
 * jobs and moved nothing beyond a run's noise
 * (docs/results/2026-12-02-packet-retransmits-lost-again.md).
 *
 * The same rule for first transmissions (rack_recovery): during a fast
 * recovery ns-3 marks a segment lost only below a SACKed one, so a
 * message's lost tail, with nothing sent after it, came back a segment a
 * partial ACK, each such ACK held by the receiver's 40 ms delayed ACK.
 * RACK marks the whole tail lost once a retransmission sent after it is
 * delivered, and it goes again at once
 * (docs/results/2026-11-28-packet-rack-recovery.md).
 *
 * Segments delivered (count_delivered): Linux grows the window by what an
 * ACK newly delivers (tcp_ack's acked_sacked), a segment counted once, when
 * it is first SACKed or acknowledged.  ns-3 hands the congestion control
 * every segment below the new cumulative ACK, also those SACKed before; the
 * first ACK after a timeout, for the resent head, thus counted the flight
 * SACKed in the failed recovery, and slow start took the window from one
 * segment to several in one step, into ports still full
 * (docs/results/2026-11-28-packet-delivered.md).
 *
 * TCP small queues (small_queues): probing_tcp.h.  The socket counts the
 * bytes of its segments in its machine's queue (the queue tells it); its
 * AvailableWindow is none while they are over the limit, and the queue's
 * report of one leaving sends again. */
#include "probing_tcp.h"

#include "event_trace.h"
#include "linux_cubic.h"
#include "linux_prr.h"
#include "linux_receive.h"

#include <algorithm>
#include <list>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

using namespace ns3;

namespace {

/* g_tsq_releases: sockets small queues held back, sent again as their frames left (Linux's tcp_tsq_handler) */
uint64_t g_tsq_releases = 0, g_probes = 0, g_probes_held = 0, g_lost_retransmits = 0, g_timeout_lost_retransmits = 0, g_rack_lost = 0, g_rack_ties = 0, g_floor_timeouts = 0, g_counted_before = 0, g_repeat_timeouts = 0, g_acks_compressed = 0,
         g_acks_at_read = 0, g_reo_timeouts = 0, g_sack_reorder = 0;
probing_tcp_hystart g_hystart;   /* HyStart's exits, and by kind as the kernel counts them */
small_queue_owner *g_sender = nullptr;   /* the socket whose data segment is on its way down the stack */

/* g_sender for the scope of one data segment's send (ns-3 queues it synchronously) */
struct sending {
    explicit sending(small_queue_owner *s) { g_sender = s; }
    ~sending() { g_sender = nullptr; }
};

/* ns-3 3.37's TcpTxBuffer marks only its first segment lost again
 * (MarkHeadAsLost); RACK needs any.  Its scoreboard is private, so these
 * name the members through explicit instantiation (where access is not
 * checked), and mark_lost below keeps the buffer's byte counts as
 * MarkHeadAsLost does. */
template <typename Tag, typename Tag::type M> struct Grant {
    friend typename Tag::type member(Tag) { return M; }
};
struct SentList { using type = std::list<TcpTxItem *> TcpTxBuffer::*; friend type member(SentList); };
struct RetransBytes { using type = uint32_t TcpTxBuffer::*; friend type member(RetransBytes); };
struct LostBytes { using type = uint32_t TcpTxBuffer::*; friend type member(LostBytes); };
struct ItemLost { using type = bool TcpTxItem::*; friend type member(ItemLost); };
template struct Grant<SentList, &TcpTxBuffer::m_sentList>;
template struct Grant<RetransBytes, &TcpTxBuffer::m_retrans>;
template struct Grant<LostBytes, &TcpTxBuffer::m_lostOut>;
template struct Grant<ItemLost, &TcpTxItem::m_lost>;
struct SackedBytes { using type = uint32_t TcpTxBuffer::*; friend type member(SackedBytes); };
struct SentBytes { using type = uint32_t TcpTxBuffer::*; friend type member(SentBytes); };
template struct Grant<SackedBytes, &TcpTxBuffer::m_sackedOut>;
template struct Grant<SentBytes, &TcpTxBuffer::m_sentSize>;

const std::list<TcpTxItem *> &sent_list(TcpTxBuffer &b) { return b.*member(SentList()); }

/* check_scoreboard: the buffer's byte counts against its segments', "" when
 * they agree */
std::string scoreboard_error(TcpTxBuffer &b)
{
    uint32_t sent = 0, sacked = 0, lost = 0, again = 0;
    for (TcpTxItem *item : sent_list(b)) {
        const uint32_t size = item->GetPacket()->GetSize();
        sent += size;
        if (item->IsSacked()) sacked += size;
        if (item->*member(ItemLost())) lost += size;
        if (item->IsRetrans()) again += size;
    }
    const uint32_t counts[] = {b.*member(SentBytes()), b.*member(SackedBytes()), b.*member(LostBytes()),
                               b.*member(RetransBytes())};
    const uint32_t held[] = {sent, sacked, lost, again};
    const char *what[] = {"sent", "SACKed", "lost", "resent"};
    for (int k = 0; k < 4; k++)
        if (counts[k] != held[k])
            return std::to_string(counts[k]) + " bytes counted " + what[k] + ", its segments hold " +
                   std::to_string(held[k]) + " from " + std::to_string(b.HeadSequence().GetValue());
    return "";
}

/* A segment RACK finds lost (a retransmission again, or a first transmission):
 * NextSeg's rule 1 sends it once more. */
void mark_lost(TcpTxBuffer &b, TcpTxItem *item)
{
    const uint32_t size = item->GetPacket()->GetSize();
    if (item->m_retrans) {
        item->m_retrans = false;
        b.*member(RetransBytes()) -= size;
    }
    if (!(item->*member(ItemLost()))) {
        item->*member(ItemLost()) = true;
        b.*member(LostBytes()) += size;
    }
}

/* A node's TCP finding a packet's socket by a hash: ns-3's demultiplexer
 * walks the node's whole list of endpoints for every packet (one or two a
 * peer), and at 1,024 machines that walk was 80 % of the run (perf).  Every
 * socket here is a ProbingTcp, which enters its endpoint when it connects,
 * is forked from a listener or listens, and leaves when disposed (the
 * simulation never closes a connection before its end); a packet with no
 * connected endpoint goes to the listener on its port, as ns-3's own lookup
 * would take it, and without one to ns-3's lookup. */
struct ConnKey {
    uint64_t a, b;
    bool operator==(const ConnKey &o) const { return a == o.a && b == o.b; }
};
struct ConnHash {
    size_t operator()(const ConnKey &k) const { return std::hash<uint64_t>()(k.a * 0x9E3779B97F4A7C15ull ^ k.b); }
};
ConnKey conn_key(Ipv4Address local, uint16_t lport, Ipv4Address peer, uint16_t pport)
{
    return {(uint64_t)local.Get() << 16 | lport, (uint64_t)peer.Get() << 16 | pport};
}

class FastTcpL4 : public TcpL4Protocol {
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("topocoll::FastTcpL4").SetParent<TcpL4Protocol>().SetGroupName("Internet").AddConstructor<FastTcpL4>();
        return tid;
    }
    IpL4Protocol::RxStatus Receive(Ptr<Packet> p, const Ipv4Header &ip, Ptr<Ipv4Interface> iface) override
    {
        TcpHeader th;
        if (p->PeekHeader(th)) {
            Ipv4EndPoint *ep = nullptr;
            auto c = connected.find(conn_key(ip.GetDestination(), th.GetDestinationPort(), ip.GetSource(), th.GetSourcePort()));
            if (c != connected.end()) ep = c->second;
            else if (auto l = listening.find(th.GetDestinationPort()); l != listening.end()) ep = l->second;
            if (ep && ep->IsRxEnabled()) {
                ep->ForwardUp(p, ip, th.GetSourcePort(), iface);
                return IpL4Protocol::RX_OK;
            }
        }
        return TcpL4Protocol::Receive(p, ip, iface);
    }
    using TcpL4Protocol::Receive;

    std::unordered_map<ConnKey, Ipv4EndPoint *, ConnHash> connected;
    std::unordered_map<uint16_t, Ipv4EndPoint *> listening;   /* bound to any address */
};
NS_OBJECT_ENSURE_REGISTERED(FastTcpL4);

class ProbingTcp : public TcpSocketBase, public small_queue_owner {
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("topocoll::ProbingTcp").SetParent<TcpSocketBase>().SetGroupName("Internet").AddConstructor<ProbingTcp>();
        return tid;
    }
    probing_tcp_options opt;

    void queued(uint32_t bytes) override { in_queue += bytes; }
    uint32_t gso_follow() const override { return in_gso_packet() ? gso_left - 1 : 0; }
    void left(uint32_t bytes) override
    {
        in_queue -= std::min(bytes, in_queue);
        if (throttled && in_queue < small_queue_limit(gso_segments())) {
            throttled = false;
            g_tsq_releases++;
            Simulator::ScheduleNow(&ProbingTcp::send_again, Ptr<ProbingTcp>(this));
        }
    }

  protected:
    Ptr<TcpSocketBase> Fork() override
    {
        Ptr<ProbingTcp> s = CopyObject<ProbingTcp>(this);
        s->bind_congestion_control();
        s->key_set = s->listens = false;
        s->in_queue = 0;
        s->throttled = false;
        s->held = s->dup_acks = 0;
        s->held_timer = EventId();
        s->traced_state = TcpSocketState::CA_OPEN;
        s->rx_on = s->in_receive = false;
        s->read_during = s->copied = 0;
        return s;
    }

    void DoDispose() override
    {
        held_timer.Cancel();
        reo_timer.Cancel();
        leave();
        small_queue_forget(this);
        TcpSocketBase::DoDispose();
    }

    void CompleteFork(Ptr<Packet> p, const TcpHeader &h, const Address &from, const Address &to) override
    {
        TcpSocketBase::CompleteFork(p, h, from, to);
        enter();
    }

    uint32_t SendDataPacket(SequenceNumber32 seq, uint32_t maxSize, bool withAck) override
    {
        /* an empty segment: NextSeg's new data with the peer's window full
         * (nothing_in_receive_window), which a fast recovery's first
         * retransmission (DoRetransmit) also takes; Linux's recovery then
         * sends nothing (tcp_xmit_retransmit_queue: nothing marked lost) */
        if (maxSize == 0) return 0;
        restart_after_idle();
        sending scope(opt.small_queues ? this : nullptr);
        const bool again = seq < m_tcb->m_highTxMark.Get();
        uint32_t n = TcpSocketBase::SendDataPacket(seq, maxSize, withAck);
        if (n > 0 && gso_left > 0) gso_left--;
        note_sent(seq, n, again);
        /* ns-3 keeps the pipe (m_bytesInFlight) as it stood before this
         * segment, and SendPendingData's next CA_EVENT_TX_START test reads
         * that: where arm() did not read it again (outside the open state,
         * or without probes) a burst from an empty pipe told the congestion
         * control twice that sending restarted after idle, and Linux's
         * cubic moved its curve on twice.  Linux's packets_in_flight is
         * current. */
        BytesInFlight();
        if (opt.linux_rto && n > 0 && again && seq == m_txBuffer->HeadSequence() &&
            m_tcb->m_congState == TcpSocketState::CA_RECOVERY)   /* tcp_xmit_retransmit_queue's rearm_timer */
            restart_rto();
        validate_cwnd();
        if (n > 0 && seq + n >= m_tcb->m_highTxMark.Get()) {
            last_seq = seq;
            last_len = n;
        }
        last_send = Simulator::Now();
        arm();
        return n;
    }
    /* SACK compression (sack_compression): an ACK an out-of-order segment
     * calls for passes through hold_sack() */
    void ReceivedData(Ptr<Packet> p, const TcpHeader &h) override
    {
        const bool linux_rx = p->GetSize() > 0 && rx_ready();
        const SequenceNumber32 before = m_tcb->m_rxBuffer->NextRxSequence();
        if (linux_rx) {
            m_delAckMaxCount = UINT32_MAX;   /* ns-3 ACKs out of order data, and sets the timer for the rest */
            in_receive = true;
        }
        out_of_order = opt.sack_compression && p->GetSize() > 0 && h.GetSequenceNumber() > before;
        TcpSocketBase::ReceivedData(p, h);
        out_of_order = false;
        if (!linux_rx) return;
        in_receive = false;
        if (m_tcb->m_rxBuffer->NextRxSequence() > before) {   /* in order: tcp_event_data_recv, __tcp_ack_snd_check */
            rx.grow(rx_held());
            if (m_delAckEvent.IsRunning() && rx.ack_now(rx_unacked(), rx_held())) SendEmptyPacket(TcpHeader::ACK);
        }
        const uint64_t read = read_during;   /* the application read as the segment came: after it */
        read_during = 0;
        if (read > 0) after_read(read);
    }
    /* linux_receive: the window a segment carries, as tcp_select_window */
    uint16_t AdvertisedWindowSize(bool scale) const override
    {
        if (!scale || !rx_ready()) return TcpSocketBase::AdvertisedWindowSize(scale);
        const uint64_t w = rx.advertise(rx_unacked(), rx_held());
        rcv_wup = m_tcb->m_rxBuffer->NextRxSequence();
        return (uint16_t)std::min<uint64_t>(w >> m_rcvWindShift, 65535);
    }
    Ptr<Packet> Recv(uint32_t max_size, uint32_t flags) override
    {
        Ptr<Packet> p = TcpSocketBase::Recv(max_size, flags);
        if (p && p->GetSize() > 0 && rx_on) {
            if (in_receive) read_during += p->GetSize();   /* the kernel's test runs before the read */
            else after_read(p->GetSize());
        }
        return p;
    }
    void SendEmptyPacket(uint8_t flags) override
    {
        if (out_of_order && flags == TcpHeader::ACK && hold_sack()) return;
        if (flags & TcpHeader::ACK) acks_sent();
        const Time rto = m_rto;
        TcpSocketBase::SendEmptyPacket(flags);
        /* ns-3 sets the RTO again whenever the socket sends an ACK (linux_rto:
         * EstimateRtt says why not) */
        if (opt.linux_rto && !(flags & (TcpHeader::SYN | TcpHeader::FIN))) m_rto = rto;
    }
    void ReceivedAck(Ptr<Packet> p, const TcpHeader &h) override
    {
        if (p->GetSize() == 0) trace_ack();
        const Time rtt = opt.ack_rtt || opt.reo_window ? rtt_of(h) : Time(-1);
        if (rtt.IsPositive() && (min_rtt.IsNegative() || rtt < min_rtt)) min_rtt = rtt;
        ack_rtt = opt.ack_rtt ? rtt : Time(-1);
        forget_below(m_txBuffer->HeadSequence());
        note_reordering(h);
        const uint32_t sacked = note_acknowledged(h.GetAckNumber());
        const SequenceNumber32 una = m_txBuffer->HeadSequence();
        const uint32_t sacked_bytes = m_txBuffer->GetSacked();
        sacked_below = opt.count_delivered ? sacked : 0;
        ack_una = una;
        ack_lost = m_txBuffer->GetLost();
        TcpSocketBase::ReceivedAck(p, h);
        sacked_below = 0;
        const bool acked = m_txBuffer->HeadSequence() > una;
        /* Linux gives up on a connection after tcp_retries2 timeouts without
         * progress; ns-3 3.37 counts its DataRetries over the connection's
         * life (never reset by an ACK), so a long lossy run ended at its 15th
         * timeout.  An ACK of new data starts the count again. */
        if (acked) m_dataRetrCount = m_dataRetries;
        if (opt.linux_rto) linux_rto_after_ack(acked, m_txBuffer->GetSacked() > sacked_bytes);
        find_lost();
        if (opt.reo_window)   /* newly acknowledged or SACKed: what Linux's rate reduction counts delivered */
            reo_check(note_rack_rtt(), (m_txBuffer->HeadSequence() - una) + m_txBuffer->GetSacked() - sacked_bytes);
        if (opt.sndbuf_auto) grow_sndbuf();
        arm();
        trace_state();
        check_scoreboard("an ACK");
    }
    /* check_scoreboard: stop the run at a mismatch, naming the connection */
    void check_scoreboard(const char *after)
    {
        if (!opt.check_scoreboard) return;
        const std::string why = scoreboard_error(*m_txBuffer);
        if (why.empty()) return;
        fprintf(stderr, "topocoll-packet: error: TCP scoreboard out of step on %s after %s at %.9f s: %s\n",
                conn_name().c_str(), after, Simulator::Now().GetSeconds(), why.c_str());
        exit(3);
    }
    /* Linux's RTO (linux_rto): tcp_set_rto's srtt + max(4 x rttvar, the
     * minimum), in whole ticks (usecs_to_jiffies rounds up), where ns-3
     * takes max(the minimum, srtt + 4 x rttvar).  Linux sets it from a
     * round-trip sample, which (with timestamps, as the testbed's kernel
     * runs) an ACK gives when it acknowledges or SACKs new data; that also
     * ends a timeout's doubling (icsk_backoff).  ns-3 sets its own formula
     * at every ACK of new data (NewAck, which arms the timer with it) and
     * whenever the socket sends an ACK (SendEmptyPacket), undoing the
     * doubling while the peer's data keeps arriving; an ACK that brings
     * nothing new leaves Linux's timer as it was. */
    Time rto_at_ack;          /* the RTO as the segment arrived, as EstimateRtt finds it: after
                                 what ReceivedAck set for this ACK, before NewAck and SendEmptyPacket, */
    bool rto_noted = false;   /* when it did */
    void EstimateRtt(const TcpHeader &h) override
    {
        rto_at_ack = m_rto;
        rto_noted = true;
        TcpSocketBase::EstimateRtt(h);
    }
    void linux_rto_after_ack(bool acked, bool sacked)
    {
        const bool noted = rto_noted;
        rto_noted = false;
        if (!acked && !sacked) {
            if (noted) m_rto = rto_at_ack;
            return;
        }
        if (m_rtt->GetEstimate().IsZero()) return;
        const int64_t rto = (m_rtt->GetEstimate() + Max(m_rtt->GetVariation() * 4, m_minRto)).GetNanoSeconds();
        m_rto = NanoSeconds(linux_ticks(rto) * LINUX_TICK_NS);
        if (acked && m_retxEvent.IsRunning()) restart_rto();   /* tcp_rearm_rto, where NewAck armed ns-3's */
    }
    /* timer_ticks: the retransmission timer, due now by ns-3's clock, runs
     * on the tick the kernel's timer wheel runs it (linux_wheel_run_ns) */
    int64_t rto_run_ns = -1;   /* when the timer put off to its tick runs */
    int64_t rto_tick_ns(int64_t due_ns) const { return linux_wheel_run_ns(due_ns, m_rto.Get().GetNanoSeconds() / LINUX_TICK_NS); }
    bool put_off_to_tick()
    {
        const int64_t now = Simulator::Now().GetNanoSeconds();
        if (now == rto_run_ns) return false;
        rto_run_ns = rto_tick_ns(now);
        m_retxEvent = Simulator::Schedule(NanoSeconds(rto_run_ns - now), &ProbingTcp::ReTxTimeout, this);
        return true;
    }
    /* Linux's tcp_enter_loss sets the slow-start threshold again only from
     * an orderly state (or once a recovery has reached its point); a
     * timeout in the middle of a fast recovery keeps the threshold that
     * recovery set.  ns-3 sets it again from the window of that moment,
     * which the recovery has shrunk to the segments in flight, so it fell to
     * 2 segments after most timeouts (most of them end a failed recovery). */
    void ReTxTimeout() override
    {
        if (opt.timer_ticks && put_off_to_tick()) return;
        const bool keep = opt.timeout_keeps_ssthresh && m_tcb->m_congState == TcpSocketState::CA_RECOVERY;
        const uint32_t ssthresh = m_tcb->m_ssThresh;
        const uint32_t retries = m_dataRetrCount;
        const bool again = m_tcb->m_congState == TcpSocketState::CA_LOSS;   /* not recovered from the last one */
        const uint64_t lost_again = retransmits_out();   /* before ns-3's timeout clears their flags */
        TcpSocketBase::ReTxTimeout();
        trace_state();
        if (keep) m_tcb->m_ssThresh = ssthresh;
        if (m_dataRetrCount == retries) return;   /* nothing was resent */
        g_timeout_lost_retransmits += lost_again;
        if (m_tcb->m_ssThresh <= 2 * m_tcb->m_segmentSize) g_floor_timeouts++;
        if (again) g_repeat_timeouts++;
        if (event_tracing() && m_endPoint) event_trace("timeout %s %s", conn_name().c_str(), again ? "repeat" : "first");
    }
    /* A timeout marks every segment out lost, and Linux counts each
     * retransmission among them as lost again (tcp_timeout_mark_lost,
     * tcp_mark_skb_lost): the segments resent since RACK last marked them
     * (its mark_lost clears m_retrans) and not SACKed.  A departure: Linux
     * leaves out segments sent within RACK's last RTT (other than the
     * first); here a timeout counts them all. */
    uint64_t retransmits_out()
    {
        const uint32_t mss = m_tcb->m_segmentSize;
        uint64_t n = 0;
        each_sent([&](TcpTxItem *item, SequenceNumber32, SequenceNumber32) {
            if (item->m_retrans && !item->IsSacked()) n += (item->GetSeqSize() + mss - 1) / mss;
            return true;
        });
        return n;
    }
    uint32_t AvailableWindow() const override
    {
        const uint32_t w = TcpSocketBase::AvailableWindow();
        if (w > 0 && !opt.forward_retransmits && only_forward_retransmits_left()) return 0;
        if (w > 0 && nothing_in_receive_window()) return 0;
        if (w == 0 || !opt.small_queues) return w;
        if (in_gso_packet()) return w;   /* the rest of a GSO packet that passed */
        if (opt.gso_clumps && tso_defer(w)) return 0;   /* the next ACK sends again */
        /* A departure: Linux checks a fast recovery's first resend here too
         * (tcp_xmit_retransmit_queue); ns-3 sends it from EnterRecovery
         * (DoRetransmit), past this.  Held here as well (a scratch change),
         * the validation's contested points did not move
         * (docs/results/2026-12-05-packet-small-queues-in-the-network.md). */
        const uint32_t k = gso_segments();
        if (small_queues_pass(k)) {
            if (opt.tsq_gso) {
                gso_left = k;
                gso_at = Simulator::Now();
                if (m_tcb->m_nextTxSequence >= m_tcb->m_highTxMark) gso_start = m_tcb->m_nextTxSequence;
            }
            return w;
        }
        throttled = true;
        return 0;
    }

  public:
    /* Linux's tcp_is_cwnd_limited: the window limited sending in the
     * current window of data, or, in slow start, is under twice the most
     * that was outstanding; its congestion control grows the window only
     * then (ns-3 grows it on every acknowledgement, also of a connection
     * the application keeps below it: one message a call, say) */
    bool cwnd_limited() const
    {
        return limited || (m_tcb->m_cWnd < m_tcb->m_ssThresh && m_tcb->m_cWnd.Get() < 2 * max_out);
    }
    SequenceNumber32 ack_una;   /* the ACK being processed: snd_una before it, */
    uint32_t ack_lost = 0;      /* and the bytes marked lost */
    /* the socket's parts of its congestion control and recovery, bound to it
     * (again in a forked socket) */
    void bind_congestion_control()
    {
        if (Ptr<topocoll::LinuxPrr> r = DynamicCast<topocoll::LinuxPrr>(m_recoveryOps))
            r->before = [this] {
                mark_rack_lost();
                BytesInFlight();   /* sets the tcb's, which the window is sized from */
                return topocoll::LinuxPrr::ack_facts{m_txBuffer->HeadSequence() > ack_una, m_txBuffer->GetLost() > ack_lost};
            };
        if (Ptr<topocoll::LinuxCubic> c = DynamicCast<topocoll::LinuxCubic>(m_congestionControl)) {
            c->may_grow = [this] { return cwnd_limited(); };
            c->linux_hystart = opt.linux_hystart;
            c->hystart_ack_delta = MicroSeconds(opt.hystart_ack_delta_us);
            c->rounds_below_low_window = opt.hystart_rounds;
            c->pacing_rate = [this] { return pacing_rate(); };
            c->hystart_exit = [](bool train, bool delay, uint32_t cwnd) {
                g_hystart.exits++;
                if (train) g_hystart.train++, g_hystart.train_cwnd += cwnd;
                if (delay) g_hystart.delay++, g_hystart.delay_cwnd += cwnd;
            };
            if (opt.ack_rtt)
                c->rtt_sample = [this] {
                    const Time t = ack_rtt;
                    ack_rtt = Time(-1);   /* one sample an ACK, however often ns-3 reports it */
                    return t;
                };
            c->newly_delivered = [this](uint32_t acked) {
                const uint32_t again = std::min(acked, sacked_below);
                sacked_below -= again;
                g_counted_before += again;
                return acked - again;
            };
        }
    }
    int Connect(const Address &address) override
    {
        int rc = TcpSocketBase::Connect(address);
        enter();
        return rc;
    }
    int Listen() override
    {
        int rc = TcpSocketBase::Listen();
        Ptr<FastTcpL4> l4 = DynamicCast<FastTcpL4>(m_tcp);
        if (rc == 0 && l4 && m_endPoint && m_endPoint->GetLocalAddress() == Ipv4Address::GetAny()) {
            l4->listening[m_endPoint->GetLocalPort()] = m_endPoint;
            listens = true;
        }
        return rc;
    }

  private:
    uint32_t in_queue = 0;           /* bytes of its segments in its machine's queue */
    mutable bool throttled = false;  /* held back by them: send when one leaves */
    mutable uint32_t gso_left = 0;   /* segments of the GSO packet that passed them, */
    mutable Time gso_at;             /* at this instant (tsq_gso) */
    mutable SequenceNumber32 gso_start;   /* where the latest GSO packet of new data began (tsq_gso) */
    /* Linux's tcp_rtx_queue_empty_or_single_skb: small queues hold back
     * nothing while what is outstanding is one skb, which a GSO packet is
     * (tsq_gso: all of it sent in the latest GSO packet of new data; a
     * departure: Linux's SACK processing and resends split skbs, which this
     * does not follow); else one segment */
    bool single_skb_out() const
    {
        if (m_txBuffer->BytesInFlight() <= m_tcb->m_segmentSize) return true;
        return opt.tsq_gso && m_txBuffer->HeadSequence() >= gso_start;
    }
    bool in_gso_packet() const { return gso_left > 0 && gso_at == Simulator::Now(); }
    /* tcp_small_queue_check: a packet of `segments` may join the machine's
     * queue (nothing is held back while one skb is out:
     * tcp_rtx_queue_empty_or_single_skb) */
    bool small_queues_pass(uint32_t segments) const
    {
        return in_queue < small_queue_limit(segments) || single_skb_out();
    }

    /* ns-3's NextSeg offers new data while what was sent (SACKed
     * included) is no more than the peer's window, a segment of the window
     * left: none when it is exactly the window, and sending that empty
     * segment crashes ns-3 (TcpRateLinux::SkbSent).  Only a receive window
     * smaller than the flight can meet it (linux_receive). */
    bool nothing_in_receive_window() const
    {
        if ((uint32_t)(m_tcb->m_highTxMark.Get() - m_txBuffer->HeadSequence()) < m_rWnd.Get()) return false;
        SequenceNumber32 next, high;
        const bool rule3 = m_sackEnabled && m_tcb->m_congState == TcpSocketState::CA_RECOVERY;
        return m_txBuffer->NextSeg(&next, &high, rule3) && high == next;
    }

    /* linux_receive's state: the receiver (linux_receive.h), started once
     * the connection is (rx_on); the stream's point the window was last
     * advertised from (rcv_wup); ReceivedData running (in_receive) and the
     * bytes the application read meanwhile; all bytes read */
    mutable topocoll::linux_receive rx;
    mutable bool rx_on = false;
    mutable SequenceNumber32 rcv_wup;
    bool in_receive = false;
    uint64_t read_during = 0, copied = 0;
    bool rx_ready() const
    {
        if (!opt.linux_receive || m_state == CLOSED || m_state == LISTEN || m_state == SYN_SENT || m_state == SYN_RCVD)
            return false;
        if (!rx_on) {
            rx.init(m_tcb->m_segmentSize, LINUX_SEGMENT_TRUESIZE, m_rcvWindShift, m_tcb->m_rxBuffer->MaxBufferSize(),
                    Simulator::Now().GetNanoSeconds());
            rcv_wup = m_tcb->m_rxBuffer->NextRxSequence();
            rx_on = true;
        }
        return true;
    }
    uint64_t rx_held() const { return m_tcb->m_rxBuffer->Size() + read_during; }
    uint64_t rx_unacked() const
    {
        const int64_t d = (int64_t)(m_tcb->m_rxBuffer->NextRxSequence() - rcv_wup);
        return d > 0 ? (uint64_t)d : 0;
    }
    /* the application read `n` bytes: the buffer grows (tcp_rcv_space_adjust)
     * and an ACK waiting for the read goes (tcp_cleanup_rbuf) */
    void after_read(uint64_t n)
    {
        copied += n;
        rx.adjust(copied, Simulator::Now().GetNanoSeconds(), m_rtt->GetEstimate().GetNanoSeconds());
        if (!rx.ack_after_read(m_delAckEvent.IsRunning(), rx_unacked(), rx_held(), n)) return;
        g_acks_at_read++;
        SendEmptyPacket(TcpHeader::ACK);
    }

    /* SACK compression's state (tcp_sock's compressed_ack, dup_ack_counter,
     * compressed_ack_rcv_nxt) */
    bool out_of_order = false;       /* ReceivedData is handling an out-of-order segment */
    uint32_t held = 0, dup_acks = 0;
    SequenceNumber32 held_at;
    EventId held_timer;
    bool hold_sack()
    {
        if (held >= LINUX_COMP_SACK_NR) return false;
        const SequenceNumber32 next = m_tcb->m_rxBuffer->NextRxSequence();
        if (next != held_at) {
            held_at = next;
            dup_acks = 0;
        }
        if (dup_acks < LINUX_FASTRETRANS_THRESH) {   /* the sender's fast retransmit needs them */
            dup_acks++;
            return false;
        }
        held++;
        if (!held_timer.IsRunning()) {
            /* Linux takes the smaller of srtt and the receiver's own RTT
             * estimate, which ns-3 lacks: srtt alone (the longest wait
             * before one) */
            const Time srtt = m_rtt->GetEstimate();
            const Time longest = NanoSeconds(LINUX_COMP_SACK_DELAY_NS);
            const Time delay = srtt.IsZero() ? longest : Min(longest, srtt / 20);
            held_timer = Simulator::Schedule(delay, &ProbingTcp::send_held, Ptr<ProbingTcp>(this));
        }
        return true;
    }
    /* the timer runs only while ACKs are held: every ACK sent cancels it */
    void send_held()
    {
        held--;   /* tcp_compressed_ack_kick: this one goes */
        if (may_send()) SendEmptyPacket(TcpHeader::ACK);
        else held = 0;
    }
    /* tcp_event_ack_sent: a pure ACK went, carrying what was held.  Linux
     * also counts a data segment, which carries SACK blocks there; ns-3's
     * data segments carry none, so a held ACK still goes when they leave. */
    void acks_sent()
    {
        g_acks_compressed += held;
        held = 0;
        held_timer.Cancel();
    }

    /* The pacing rate in bytes a second as tcp_update_pacing_rate sets it:
     * cwnd x MSS / SRTT, x 2 below half the slow-start threshold, else x 1.2;
     * 0 before an RTT is measured */
    double pacing_rate() const
    {
        const uint64_t mss = m_tcb->m_segmentSize, cwnd = m_tcb->m_cWnd.Get() / mss;
        const double srtt = m_rtt->GetEstimate().GetSeconds();
        if (srtt <= 0) return 0;
        const double ratio = cwnd < m_tcb->m_ssThresh.Get() / mss / 2 ? 2.0 : 1.2;
        return ratio * (double)(cwnd * mss) / srtt;
    }
    /* The segments of the GSO packet Linux's tcp_write_xmit would build
     * now (tsq_gso; else 1): tcp_tso_autosize's count (1/1024 s at the
     * pacing rate plus gso_max_size >> (the least RTT in us >>
     * tcp_tso_rtt_log), at most gso_max_size, at least tcp_min_tso_segs),
     * at most half the window (tcp_cwnd_test), the window left and the data */
    uint32_t gso_segments() const
    {
        if (!opt.tsq_gso) return 1;
        const uint64_t mss = m_tcb->m_segmentSize;
        const uint64_t autosize = gso_segments_full();
        const uint64_t cwnd = m_tcb->m_cWnd.Get() / mss, flight = (m_txBuffer->BytesInFlight() + mss - 1) / mss;
        const uint64_t unsent = (m_txBuffer->SizeFromSequence(m_tcb->m_nextTxSequence) + mss - 1) / mss;
        const uint64_t k = std::min({autosize, std::max<uint64_t>(cwnd / 2, 1), cwnd > flight ? cwnd - flight : 1, unsent});
        return (uint32_t)std::max<uint64_t>(k, 1);
    }
    uint32_t gso_segments_full() const   /* tcp_tso_autosize's count alone */
    {
        const uint64_t mss = m_tcb->m_segmentSize;
        uint64_t bytes = (uint64_t)pacing_rate() >> LINUX_PACING_SHIFT;
        const uint64_t shift = m_tcb->m_minRtt == Time::Max() ? 0 : (uint64_t)m_tcb->m_minRtt.GetMicroSeconds() >> LINUX_TSO_RTT_LOG;
        if (shift < 32) bytes += LINUX_GSO_MAX_SIZE >> shift;
        return (uint32_t)std::max<uint64_t>(std::min<uint64_t>(bytes, LINUX_GSO_MAX_SIZE) / mss, LINUX_MIN_TSO_SEGS);
    }
    /* Linux's tcp_tso_should_defer (tcp_tso_win_divisor 3), with `room`
     * bytes of window left: outside a recovery, within 1 ms of the last
     * send and with more than a segment to send, a packet that would be
     * smaller than a full GSO packet and a third of the window waits for
     * the next ACK if it is due within min(srtt / 2, 1 ms) (the oldest
     * segment out sent a smoothed RTT ago) */
    bool tso_defer(uint32_t room) const
    {
        const Time now = Simulator::Now();
        const uint64_t mss = m_tcb->m_segmentSize;
        if (m_tcb->m_congState >= TcpSocketState::CA_RECOVERY || last_send.IsNegative() ||
            now - last_send > MilliSeconds(1) || m_txBuffer->SizeFromSequence(m_tcb->m_nextTxSequence) <= mss)
            return false;
        const uint32_t k = gso_segments_full();
        if (room >= k * mss || room >= std::min<uint64_t>(m_rWnd.Get(), m_tcb->m_cWnd.Get()) / 3) return false;
        const std::list<TcpTxItem *> &sent = sent_list(*m_txBuffer);
        if (sent.empty()) return false;
        const Time srtt = m_rtt->GetEstimate();
        return sent.front()->GetLastSent() + srtt - now <= std::min(srtt / 2, MilliSeconds(1));
    }
    /* tcp_small_queue_check's limit in bytes of packets, for a GSO packet
     * of `segments`: max(2 x its truesize, the pacing rate >> 10), doubled
     * in a recovery (tcp_xmit_retransmit_queue's factor 1).  A departure:
     * the packet's truesize is taken as that many one-segment skbs' (the
     * kernel's GSO packet shares one head, about 850 bytes less a segment) */
    uint32_t small_queue_limit(uint32_t segments) const
    {
        const uint64_t mss = m_tcb->m_segmentSize;
        const uint64_t truesize = std::max<uint64_t>(2 * (uint64_t)segments * LINUX_SEGMENT_TRUESIZE,
                                                     (uint64_t)pacing_rate() >> LINUX_PACING_SHIFT) * (in_order() ? 1 : 2);
        return (uint32_t)(truesize * (mss + TCP_IP_HEADERS) / LINUX_SEGMENT_TRUESIZE);   /* a full packet's truesize */
    }
    bool may_send() const { return m_state == ESTABLISHED || m_state == CLOSE_WAIT; }   /* its state lets it send */
    void send_again()
    {
        if (may_send()) SendPendingData(m_connected);
    }

    /* --trace-tcp's lines (event_trace.h) */
    int traced_state = TcpSocketState::CA_OPEN;
    std::string conn_name() const
    {
        return probing_tcp_conn_name(m_endPoint->GetLocalAddress(), m_endPoint->GetLocalPort(),
                                     m_endPoint->GetPeerAddress(), m_endPoint->GetPeerPort());
    }
    void trace_tcp(const char *what, const std::string &rest = "") const
    {
        if (event_tracing_tcp() && m_endPoint)
            event_trace("tcp %s %s%s", conn_name().c_str(), what, rest.c_str());
    }
    void trace_resend(SequenceNumber32 seq, uint32_t bytes) const
    {
        trace_tcp("resend", " " + std::to_string(seq.GetValue()) + " " + std::to_string(bytes));
    }
    void trace_ack() const
    {
        if (!event_tracing_tcp()) return;
        const uint32_t mss = m_tcb->m_segmentSize, ssthresh = m_tcb->m_ssThresh.Get();
        trace_tcp("ack", " " + std::to_string(m_txBuffer->HeadSequence().GetValue()) + " " +
                             std::to_string(m_tcb->m_cWnd.Get() / mss) + " " +
                             (ssthresh >= 1u << 30 ? std::string("inf") : std::to_string(ssthresh / mss)));
    }
    void trace_state()
    {
        static const char *const names[] = {"open", "disorder", "cwr", "recovery", "loss"};
        const int now = m_tcb->m_congState.Get();
        if (now == traced_state || now < 0 || now > TcpSocketState::CA_LOSS) return;
        traced_state = now;
        trace_tcp("state", std::string(" ") + names[now]);
    }

    EventId probe_event;
    bool tlp_out = false;            /* a probe sent (linux_tlp); outstanding until the first */
    SequenceNumber32 tlp_high;       /* unacknowledged byte reaches the highest sent with it */
    ConnKey key{0, 0};               /* its FastTcpL4 entry, */
    bool key_set = false, listens = false;   /* if it has one */

    void enter()
    {
        Ptr<FastTcpL4> l4 = DynamicCast<FastTcpL4>(m_tcp);
        if (key_set || !l4 || !m_endPoint || m_endPoint->GetPeerPort() == 0) return;
        key = conn_key(m_endPoint->GetLocalAddress(), m_endPoint->GetLocalPort(), m_endPoint->GetPeerAddress(),
                       m_endPoint->GetPeerPort());
        l4->connected[key] = m_endPoint;
        key_set = true;
    }
    void leave()
    {
        Ptr<FastTcpL4> l4 = DynamicCast<FastTcpL4>(m_tcp);
        if (l4 && key_set) l4->connected.erase(key);
        if (l4 && listens && m_endPoint) l4->listening.erase(m_endPoint->GetLocalPort());
        key_set = listens = false;
    }
    /* The ACK's round-trip sample as Linux's congestion control gets it
     * (tcp_clean_rtx_queue's ca_rtt_us): since the latest send among the
     * segments it newly SACKs that were never sent again (last_sackt), else
     * among those it newly acknowledges, and none if one of those was sent
     * again (Karn's rule; here also one marked lost and not yet resent);
     * negative: none.  ns-3 hands the congestion control its smoothed RTT
     * instead, at every call (several for one ACK, and for ACKs that give
     * Linux no sample), and HyStart's ACK train ended slow starts early:
     * at 24 segments on average where the kernel's end at 30 (pairwise,
     * 2 x 8, 256 KB; docs/results/2026-12-01-packet-send-buffers.md). */
    Time ack_rtt = Time(-1);
    Time rtt_of(const TcpHeader &h)
    {
        const SequenceNumber32 ack = h.GetAckNumber();
        const TcpOptionSack::SackList blocks = sack_blocks(h);
        Time acked = Time(-1), sacked = Time(-1);
        bool retransmitted = false;
        each_sent([&](TcpTxItem *item, SequenceNumber32 seq, SequenceNumber32 end) {
            const bool again = item->m_retrans || item->*member(ItemLost());
            if (end <= ack) {
                if (again) retransmitted = true;
                else if (!item->IsSacked()) acked = std::max(acked, item->GetLastSent());
            } else if (!item->IsSacked() && !again && in_blocks(blocks, seq, end)) {
                sacked = std::max(sacked, item->GetLastSent());
            }
            return true;
        });
        const Time sent = sacked.IsPositive() ? sacked : retransmitted ? Time(-1) : acked;
        return sent.IsPositive() ? Simulator::Now() - sent : Time(-1);
    }
    /* f(segment, where it starts, where it ends) for each segment sent and
     * not yet acknowledged, in order, while f returns true */
    template <typename F> void each_sent(F f)
    {
        SequenceNumber32 seq = m_txBuffer->HeadSequence();
        for (TcpTxItem *item : sent_list(*m_txBuffer)) {
            const SequenceNumber32 end = seq + item->GetSeqSize();
            if (!f(item, seq, end)) return;
            seq = end;
        }
    }
    static TcpOptionSack::SackList sack_blocks(const TcpHeader &h)
    {
        if (!h.HasOption(TcpOption::SACK)) return {};
        return DynamicCast<const TcpOptionSack>(h.GetOption(TcpOption::SACK))->GetSackList();
    }
    static bool in_blocks(const TcpOptionSack::SackList &blocks, SequenceNumber32 seq, SequenceNumber32 end)
    {
        for (const auto &b : blocks)
            if (b.first <= seq && end <= b.second) return true;
        return false;
    }

    /* Segments ever sent again (Linux's sticky TCPCB_RETRANS; ns-3 clears
     * m_retrans at a timeout and mark_lost clears it), as ranges above the
     * first unacknowledged byte */
    std::vector<std::pair<SequenceNumber32, SequenceNumber32>> resent;
    /* the records of a segment of `bytes` sent from `seq` (none if 0), sent
     * again or not: the trace's resend line, the ranges ever resent, its
     * place in the send order */
    void note_sent(SequenceNumber32 seq, uint32_t bytes, bool again)
    {
        check_scoreboard("a send");
        if (bytes == 0) return;
        if (again) {
            trace_resend(seq, bytes);
            resent.emplace_back(seq, seq + bytes);
        }
        if (opt.rack_ties) send_order[seq.GetValue()] = ++sends;
    }
    /* what those records hold below `head`, acknowledged before: gone (the
     * send order's keys are the stream's first 4 GiB, ns-3's first sequence
     * number being 0) */
    void forget_below(SequenceNumber32 head)
    {
        resent.erase(std::remove_if(resent.begin(), resent.end(), [&](const auto &r) { return r.second <= head; }), resent.end());
        send_order.erase(send_order.begin(), send_order.lower_bound(head.GetValue()));
        sacked_seen.erase(sacked_seen.begin(), sacked_seen.lower_bound(head.GetValue()));
    }
    bool ever_resent(SequenceNumber32 seq, SequenceNumber32 end) const
    {
        for (const auto &r : resent)
            if (r.first < end && seq < r.second) return true;
        return false;
    }

    /* Reordering as Linux infers it (tcp_sacktag_one, tcp_clean_rtx_queue,
     * tcp_check_sack_reordering), counted: an ACK that newly SACKs or
     * acknowledges a segment never sent again that starts below the highest
     * SACKed one.  The tree keeps each flow in order, so only a SACK come
     * late (an ACK carries three blocks) could count; the emulated cluster
     * reorders, and its kernel then keeps RACK's reordering window for the
     * connection's life, which is not modelled
     * (docs/results/2026-12-05-packet-reordering.md). */
    void note_reordering(const TcpHeader &h)
    {
        const SequenceNumber32 head = m_txBuffer->HeadSequence(), ack = h.GetAckNumber();
        if (m_txBuffer->GetSacked() == 0) return;
        SequenceNumber32 fack = head;   /* tcp_highest_sack_seq: where the highest SACKed segment starts */
        each_sent([&](TcpTxItem *item, SequenceNumber32 seq, SequenceNumber32) {
            if (item->IsSacked()) fack = seq;
            return true;
        });
        const TcpOptionSack::SackList blocks = sack_blocks(h);
        each_sent([&](TcpTxItem *item, SequenceNumber32 seq, SequenceNumber32 end) {
            if (seq >= fack) return false;
            if (!item->IsSacked() && (end <= ack || in_blocks(blocks, seq, end)) && !ever_resent(seq, end)) {
                g_sack_reorder++;
                return false;
            }
            return true;
        });
    }

    Time delivered_sent = Seconds(-1);   /* RACK's clock: the latest send time of a segment delivered, */
    uint64_t delivered_order = 0;        /* and that send's place in the connection's sends (rack_ties) */
    /* Each send's place in the connection's sends, by where the segment
     * starts (its last send), above the first unacknowledged byte: RACK's
     * ties (rack_ties) are ordered by it.  Linux orders segments stamped
     * alike by sequence (tcp_skb_sent_after), which within one of its
     * transmit loops is the order they went (resends first, in sequence,
     * then new data).  This simulator's instants also join sends that
     * Linux stamps apart: the new data a duplicate ACK sends (limited
     * transmit) and the resend the next ACK of the same instant starts a
     * recovery with, which by sequence would be taken as sent after that
     * data and found lost as soon as the data is SACKed. */
    std::map<uint32_t, uint64_t> send_order;
    uint64_t sends = 0;
    uint64_t order_of(SequenceNumber32 seq) const   /* 0 without rack_ties: nothing is recorded */
    {
        const auto it = send_order.find(seq.GetValue());
        return it == send_order.end() ? 0 : it->second;
    }
    /* whether a segment sent at `t` (its send's place `order`) went after
     * one sent at `t0` (`order0`): Linux's tcp_skb_sent_after (rack_ties),
     * else strictly later */
    bool sent_after(Time t, uint64_t order, Time t0, uint64_t order0) const
    {
        return t > t0 || (opt.rack_ties && t == t0 && order > order0);
    }
    void note_delivered(TcpTxItem *item, SequenceNumber32 start)
    {
        const uint64_t order = order_of(start);
        if (sent_after(item->GetLastSent(), order, delivered_sent, delivered_order))
            delivered_sent = item->GetLastSent(), delivered_order = order;
    }
    void note_sacked()
    {
        each_sent([&](TcpTxItem *item, SequenceNumber32 seq, SequenceNumber32) {
            if (item->IsSacked()) note_delivered(item, seq);
            return true;
        });
    }
    uint32_t sacked_below = 0;           /* segments the ACK in hand acknowledges that were SACKed before */

    /* Before ns-3 drops what an ACK acknowledges: when those segments were
     * last sent (RACK's clock), and how many segments of them were SACKed
     * before (returned). */
    uint32_t note_acknowledged(SequenceNumber32 ack)
    {
        const uint32_t mss = m_tcb->m_segmentSize;
        uint32_t sacked = 0;
        acked_last_sent = Seconds(-1);
        each_sent([&](TcpTxItem *item, SequenceNumber32 seq, SequenceNumber32 end) {
            if (end > ack) return false;
            note_delivered(item, seq);
            if (item->IsSacked()) sacked += (item->GetSeqSize() + mss - 1) / mss;
            else acked_last_sent = item->GetLastSent();
            return true;
        });
        return sacked;
    }

    /* RACK while the connection recovers: an unSACKed segment last sent
     * before one since delivered is lost; a retransmission (lost_retransmits)
     * in a fast recovery or after a timeout, a first transmission
     * (rack_recovery) in a fast recovery (after a timeout all are). */
    /* f(item) for each segment not SACKed that went before the latest one
     * delivered: those RACK may find lost */
    template <typename F> void for_each_sent_before_delivered(F f)
    {
        each_sent([&](TcpTxItem *item, SequenceNumber32 seq, SequenceNumber32) {
            if (!item->IsSacked() && sent_after(delivered_sent, delivered_order, item->GetLastSent(), order_of(seq)))
                f(item);
            return true;
        });
    }
    /* marks what RACK finds lost on this ACK; whether it found any */
    bool mark_rack_lost()
    {
        const auto state = m_tcb->m_congState.Get();
        if (!(opt.lost_retransmits || opt.rack_recovery) ||
            (state != TcpSocketState::CA_RECOVERY && state != TcpSocketState::CA_LOSS)) return false;
        note_sacked();
        uint64_t again = 0, first = 0;
        const bool firsts = opt.rack_recovery && state == TcpSocketState::CA_RECOVERY;
        for_each_sent_before_delivered([&](TcpTxItem *item) {
            if (item->m_retrans && opt.lost_retransmits) again++;
            else if (!item->m_retrans && firsts && !(item->*member(ItemLost()))) first++;
            else return;
            g_rack_ties += item->GetLastSent() == delivered_sent;
            mark_lost(*m_txBuffer, item);
        });
        g_lost_retransmits += again;
        g_rack_lost += first;
        return again || first;
    }
    /* reo_window: before a recovery, RACK's reordering window and timer
     * (probing_tcp.h).  On an ACK in the open or disorder state with data
     * SACKed: each unSACKed segment sent before the latest one delivered is
     * lost once RACK's RTT and the window have passed since it went (so at
     * once if it went a window or more before the segment that RTT was
     * taken from); any lost starts the recovery now, else the timer is set
     * again from an ACK that delivered anything (tcp_rack_advance marks
     * RACK advanced for every segment delivered, and tcp_rack_mark_lost
     * runs then). */
    EventId reo_timer;
    /* RACK's RTT (tcp_rack_advance): the round trip of the last segment an
     * ACK delivered, in the order Linux takes them, those it newly SACKs by
     * sequence (tcp_sacktag_write_queue), then those it acknowledges that
     * were not SACKed (tcp_clean_rtx_queue); where that one went before
     * the latest one delivered, the holes sent in between wait longer */
    Time rack_rtt = Seconds(-1);
    Time acked_last_sent = Seconds(-1);   /* the ACK in hand's last acknowledged segment not SACKed, when sent */
    std::set<uint32_t> sacked_seen;       /* where the segments SACKed by earlier ACKs start */
    /* RACK's RTT after the ACK in hand; whether it delivered anything */
    bool note_rack_rtt()
    {
        Time last = Seconds(-1);
        each_sent([&](TcpTxItem *item, SequenceNumber32 seq, SequenceNumber32) {
            if (item->IsSacked() && sacked_seen.insert(seq.GetValue()).second) last = item->GetLastSent();
            return true;
        });
        if (!acked_last_sent.IsNegative()) last = acked_last_sent;
        if (last.IsNegative()) return false;
        rack_rtt = Simulator::Now() - last;
        return true;
    }
    Time min_rtt = Seconds(-1);   /* the least of the ACKs' own round trips (ns-3's m_minRtt counts timestamps' whole ms) */
    bool before_recovery() const
    {
        const auto state = m_tcb->m_congState.Get();
        return state == TcpSocketState::CA_OPEN || state == TcpSocketState::CA_DISORDER;
    }
    void reo_check(bool delivered, uint32_t delivered_bytes)
    {
        if (!before_recovery() || m_txBuffer->GetSacked() == 0) {
            reo_timer.Cancel();
            return;
        }
        note_sacked();
        Time wait = Seconds(-1);
        if (reo_mark_lost(min_rtt.IsPositive() ? std::min(min_rtt / 4, m_rtt->GetEstimate()) : Time(0), wait))
            return reo_recover(std::max<uint32_t>(delivered_bytes, m_tcb->m_segmentSize));
        if (wait.IsNegative() || (!delivered && reo_timer.IsRunning())) return;
        /* expires at jiffies + usecs_to_jiffies(wait + 2 ms) (tcp_rack_mark_lost;
         * 6.1 added two whole ticks instead), and runs on the tick after
         * (timer_ticks: 4-8 ms for a wait of microseconds) or on that one */
        const int64_t now = Simulator::Now().GetNanoSeconds();
        const int64_t ticks = linux_timeout_ticks(wait.GetNanoSeconds());
        reo_timer.Cancel();
        reo_timer = Simulator::Schedule(NanoSeconds(opt.timer_ticks ? linux_timer_ns(now, ticks)
                                                                    : (now / LINUX_TICK_NS + ticks) * LINUX_TICK_NS - now),
                                        &ProbingTcp::reo_timeout, this);
    }
    void reo_timeout()   /* every hole before the latest delivered is lost now */
    {
        Time wait;
        if (!before_recovery() || !reo_mark_lost(Time(0), wait)) return;
        g_reo_timeouts++;
        reo_recover(m_tcb->m_segmentSize);   /* tcp_rack_reo_timeout: tcp_cwnd_reduction(sk, 1, ...) */
    }
    /* marks lost each segment not yet marked, sent before the latest one
     * delivered, that went RACK's RTT and `window` or more ago
     * (tcp_rack_detect_loss); whether any, and (`wait`) the longest the
     * others have left */
    bool reo_mark_lost(Time window, Time &wait)
    {
        bool lost = false;
        const Time now = Simulator::Now();
        for_each_sent_before_delivered([&](TcpTxItem *item) {
            if (item->*member(ItemLost())) return;
            /* rack_rtt is set: the ACK that SACKed the data this runs for took it (note_rack_rtt) */
            const Time remaining = rack_rtt + window - (now - item->GetLastSent());
            if (remaining <= Time(0)) {
                mark_lost(*m_txBuffer, item);
                lost = true;
            } else {
                wait = std::max(wait, remaining);
            }
        });
        return lost;
    }
    /* from the open or disorder state, the rate reduction sized as Linux's
     * from what was `delivered` (bytes): by the ACK in hand, or a segment
     * at the timer; from none, the window as it was sent a burst of resends */
    void reo_recover(uint32_t delivered)
    {
        reo_timer.Cancel();
        EnterRecovery(delivered);
        SendPendingData(true);
        arm();
        trace_state();
    }
    void find_lost()
    {
        if (mark_rack_lost())
            SendPendingData(true);   /* as Linux does: they go again within the window (RFC 6675's NextSeg, rule 1) */
    }

    void grow_sndbuf()
    {
        const uint32_t want = probing_tcp_sndbuf(m_tcb->m_cWnd.Get() / m_tcb->m_segmentSize, m_tcb->m_segmentSize);
        if (want > m_txBuffer->MaxBufferSize()) {
            SetSndBufSize(want);
            if (GetTxAvailable() > 0) NotifySend(GetTxAvailable());
        }
    }

    Time last_send = Seconds(-1);
    SequenceNumber32 last_seq;       /* the highest segment sent: where it starts, */
    uint32_t last_len = 0;           /* and its bytes */

    /* tcp_cwnd_validate, after each segment sent: whether the window is
     * full, remembered until a window of data has been acknowledged */
    bool limited = false;
    uint32_t max_out = 0;            /* bytes outstanding when last noted */
    SequenceNumber32 usage_end;      /* the end of the window it is noted for */
    void validate_cwnd()
    {
        const uint32_t out = m_tcb->m_highTxMark.Get() - m_txBuffer->HeadSequence();
        /* full once no full segment fits: ns-3 sends none into less (its
         * silly-window rule), and Linux counts the window in packets
         * (tcp_cwnd_validate); tested to the byte, a window cut by a
         * fraction (cubic's beta, 3/4 after idle) would never fill */
        const uint32_t short_of_full = m_tcb->m_segmentSize - 1;
        const bool full = m_txBuffer->BytesInFlight() + short_of_full >= m_tcb->m_cWnd.Get();
        if (m_txBuffer->HeadSequence() >= usage_end || full || (!limited && out > max_out)) {
            limited = full;
            max_out = out;
            usage_end = m_tcb->m_highTxMark;
        }
    }

    /* Linux's slow start after idle (net.ipv4.tcp_slow_start_after_idle,
     * on by default; tcp_cwnd_restart): a connection that sent nothing for
     * an RTO with nothing in flight halves its window for every RTO idle,
     * down to the initial window, and keeps a slow-start threshold of at
     * least 3/4 of the window it had (tcp_current_ssthresh); in whole
     * segments with window_in_packets, else in bytes.  ns-3 keeps the
     * window, and an MPI connection idles between the messages of a pair. */
    void restart_after_idle()
    {
        if (!opt.probes || last_send.IsNegative() || BytesInFlight() != 0) return;
        Time rto = m_rto.Get(), idle = Simulator::Now() - last_send;
        if (rto.IsZero() || idle <= rto) return;
        const uint32_t unit = opt.window_in_packets ? m_tcb->m_segmentSize : 1;
        uint32_t cwnd = m_tcb->m_cWnd.Get() / unit;
        const uint32_t restart = std::min(m_tcb->m_initialCWnd * m_tcb->m_segmentSize / unit, cwnd);
        m_tcb->m_ssThresh = std::max(m_tcb->m_ssThresh.Get(), (opt.window_in_packets ? (cwnd >> 1) + (cwnd >> 2) : cwnd / 4 * 3) * unit);
        for (int64_t k = idle.GetNanoSeconds() / rto.GetNanoSeconds(); k > 0 && cwnd > restart; k--) cwnd >>= 1;
        m_tcb->m_cWnd = std::max(cwnd, restart) * unit;
    }

    /* In a fast recovery, SendPendingData's NextSeg would find only rule
     * 3's segment: NextSeg without rule 3 finds nothing (nothing marked
     * lost and not yet resent, no new data); a window of none ends the
     * sending there. */
    bool only_forward_retransmits_left() const
    {
        SequenceNumber32 seq, high;
        return m_tcb->m_congState == TcpSocketState::CA_RECOVERY && !m_txBuffer->NextSeg(&seq, &high, false);
    }

    bool in_order() const
    {
        return m_tcb->m_congState == TcpSocketState::CA_OPEN || m_tcb->m_congState == TcpSocketState::CA_DISORDER;
    }

    void arm()
    {
        probe_event.Cancel();
        if (!opt.probes || !may_probe() || BytesInFlight() == 0 || !m_retxEvent.IsRunning()) return;
        Time srtt = m_rtt->GetEstimate();
        if (srtt.IsZero()) return;
        Time pto = 2 * srtt + (BytesInFlight() <= m_tcb->m_segmentSize ? MilliSeconds(200) : MilliSeconds(2));
        Time rto_left = Simulator::GetDelayLeft(m_retxEvent);
        if (opt.timer_ticks) {
            /* tcp_schedule_loss_probe: the probe's jiffies, on the tick after,
             * or with the RTO where that runs first (same instant: the probe,
             * scheduled before the RTO's run, goes first and restarts it) */
            const int64_t now = Simulator::Now().GetNanoSeconds(), left = rto_left.GetNanoSeconds();
            const int64_t rto_run = rto_run_ns == now + left ? left : rto_tick_ns(now + left) - now;
            const int64_t probe_in = linux_timer_ns(now, linux_ticks(pto.GetNanoSeconds()));
            if (probe_in >= rto_run && !opt.linux_tlp) return;
            probe_event = Simulator::Schedule(NanoSeconds(std::min(probe_in, rto_run)), &ProbingTcp::probe, this);
            return;
        }
        if (pto >= rto_left) {
            if (!opt.linux_tlp || rto_left <= NanoSeconds(1)) return;
            pto = rto_left - NanoSeconds(1);   /* the probe goes in the RTO's place */
        }
        probe_event = Simulator::Schedule(pto, &ProbingTcp::probe, this);
    }

    /* Linux probes in the open state (and CWR, which ns-3 enters only for
     * ECN), not in disorder */
    bool may_probe() const
    {
        if (!opt.linux_tlp) return in_order();
        return m_tcb->m_congState == TcpSocketState::CA_OPEN || m_tcb->m_congState == TcpSocketState::CA_CWR;
    }

    /* the retransmission timer started again from now, as Linux's tcp_rearm_rto */
    void restart_rto()
    {
        m_retxEvent.Cancel();
        m_retxEvent = Simulator::Schedule(m_rto, &ProbingTcp::ReTxTimeout, this);
    }

    void probe()
    {
        if (!may_probe() || BytesInFlight() == 0) return;
        if (opt.linux_tlp && tlp_out && tlp_high > m_txBuffer->HeadSequence()) return;   /* one outstanding: the RTO stays */
        sending scope(opt.small_queues ? this : nullptr);
        const uint32_t mss = m_tcb->m_segmentSize;
        /* new data, if any, from the highest sequence sent (tcp_send_head):
         * ns-3's next sequence can sit inside the window after a resend,
         * and a send from there can join a SACKed segment with one not
         * SACKed, putting ns-3's count of SACKed bytes out of step */
        const SequenceNumber32 high = m_tcb->m_highTxMark;
        if (m_txBuffer->SizeFromSequence(high) > 0) {
            if (opt.probe_small_queues && !small_queues_pass(1)) {   /* probe_small_queues */
                throttled = true;   /* a frame leaving sends again (tcp_tsq_handler) */
                g_probes_held++;
                return;
            }
            const uint32_t n = TcpSocketBase::SendDataPacket(high, mss, true);
            note_sent(high, n, false);
            m_tcb->m_nextTxSequence = std::max(m_tcb->m_nextTxSequence.Get(), high + n);
        } else if (last_len > 0 && last_seq >= m_txBuffer->HeadSequence()) {
            /* the last segment again, on the boundaries it was sent with
             * (sent at highTxMark - MSS instead, across two of ns-3's
             * segments, it left a 256-machine run with a connection that
             * never sent again; the first unacknowledged segment instead
             * drew duplicate ACKs that started needless recoveries).  A
             * departure: Linux sends no such probe while the segment's
             * frame is still in its machine's queue (skb_still_in_host_queue;
             * the testbed's kernel counts 4-5 a job at linear 64 KB on
             * 2 x 8 / 32, its TCPSpuriousRtxHostQueues) */
            note_sent(last_seq, TcpSocketBase::SendDataPacket(last_seq, last_len, true), true);
        } else {
            return;   /* nothing to send: the RTO stays */
        }
        g_probes++;
        if (opt.linux_tlp) {   /* tcp_send_loss_probe's tcp_rearm_rto */
            restart_rto();
            tlp_out = true;
            tlp_high = m_tcb->m_highTxMark;
        }
    }
};

}  // namespace

uint32_t probing_tcp_sndbuf(uint64_t segments, uint32_t mss)
{
    return (uint32_t)std::min(std::max<uint64_t>(segments, 10) * LINUX_SNDBUF_PER_SEGMENT * mss / LINUX_SENDQ_TRUESIZE_PER_SEGMENT,
                              LINUX_SNDBUF_MAX);
}

small_queue_owner *probing_tcp_sender() { return g_sender; }

Ptr<Socket> probing_tcp_socket(Ptr<Node> node, const probing_tcp_options &o)
{
    Ptr<TcpL4Protocol> l4 = node->GetObject<TcpL4Protocol>();
    TypeIdValue cc, rec, rtt;
    l4->GetAttribute("SocketType", cc);
    l4->GetAttribute("RecoveryType", rec);
    l4->GetAttribute("RttEstimatorType", rtt);
    ObjectFactory f;
    Ptr<ProbingTcp> s = CreateObject<ProbingTcp>();
    s->opt = o;
    s->SetNode(node);
    s->SetTcp(l4);
    f.SetTypeId(rtt.Get());
    s->SetRtt(f.Create<RttEstimator>());
    f.SetTypeId(cc.Get());
    s->SetCongestionControlAlgorithm(f.Create<TcpCongestionOps>());
    if (o.linux_prr) {
        s->SetRecoveryAlgorithm(CreateObject<topocoll::LinuxPrr>());
    } else {
        f.SetTypeId(rec.Get());
        s->SetRecoveryAlgorithm(f.Create<TcpRecoveryOps>());
    }
    s->bind_congestion_control();
    l4->AddSocket(s);
    return s;
}

const char *probing_tcp_l4(bool hash) { return hash ? "topocoll::FastTcpL4" : "ns3::TcpL4Protocol"; }

std::string probing_tcp_conn_name(Ipv4Address local, uint16_t local_port, Ipv4Address peer, uint16_t peer_port)
{
    std::ostringstream s;
    local.Print(s);
    s << ":" << local_port << "->";
    peer.Print(s);
    s << ":" << peer_port;
    return s.str();
}
uint64_t probing_tcp_probes() { return g_probes; }
uint64_t probing_tcp_probes_held() { return g_probes_held; }
uint64_t probing_tcp_lost_retransmits() { return g_lost_retransmits; }
uint64_t probing_tcp_timeout_lost_retransmits() { return g_timeout_lost_retransmits; }
uint64_t probing_tcp_rack_lost() { return g_rack_lost; }
uint64_t probing_tcp_rack_ties() { return g_rack_ties; }
uint64_t probing_tcp_reo_timeouts() { return g_reo_timeouts; }
uint64_t probing_tcp_sack_reorder() { return g_sack_reorder; }
uint64_t probing_tcp_counted_before() { return g_counted_before; }
probing_tcp_hystart probing_tcp_hystart_counts() { return g_hystart; }
uint64_t probing_tcp_floor_timeouts() { return g_floor_timeouts; }
uint64_t probing_tcp_repeat_timeouts() { return g_repeat_timeouts; }
uint64_t probing_tcp_acks_compressed() { return g_acks_compressed; }
uint64_t probing_tcp_acks_at_read() { return g_acks_at_read; }
uint64_t probing_tcp_tsq_releases() { return g_tsq_releases; }
void probing_tcp_reset()
{
    g_tsq_releases = g_probes = g_probes_held = g_lost_retransmits = g_timeout_lost_retransmits = g_rack_lost = g_rack_ties = g_floor_timeouts = g_counted_before = g_repeat_timeouts = g_acks_compressed = g_acks_at_read = g_reo_timeouts = g_sack_reorder = 0;
    g_hystart = {};
}
