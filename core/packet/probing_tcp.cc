/* TCP with a tail loss probe (probing_tcp.h says why).
 *
 * The probe follows Linux 6.1 (tcp_schedule_loss_probe, tcp_send_loss_probe,
 * the kernel the emulated cluster runs): while the connection is in order
 * and has data in flight, a probe is due 2 x SRTT after the last send or
 * ACK (plus the 200 ms delayed-ACK allowance when one segment is in flight,
 * else 2 ms), unless the retransmission timeout comes first; it sends new
 * data if there is some, else the last segment again.  Its ACK carries
 * SACK blocks above the hole, and with a duplicate-ACK threshold of 1 (set by
 * the caller: the simulated tree never reorders a flow's packets, so a hole
 * below SACKed data is a loss, as RACK concludes) fast recovery repairs the
 * tail instead of a timeout. */
#include "probing_tcp.h"

using namespace ns3;

namespace {

uint64_t g_probes = 0;

class ProbingTcp : public TcpSocketBase {
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("topocoll::ProbingTcp").SetParent<TcpSocketBase>().SetGroupName("Internet").AddConstructor<ProbingTcp>();
        return tid;
    }
    bool probes = true;

  protected:
    Ptr<TcpSocketBase> Fork() override { return CopyObject<ProbingTcp>(this); }

    uint32_t SendDataPacket(SequenceNumber32 seq, uint32_t maxSize, bool withAck) override
    {
        restart_after_idle();
        uint32_t n = TcpSocketBase::SendDataPacket(seq, maxSize, withAck);
        if (n > 0 && seq + n >= m_tcb->m_highTxMark.Get()) {
            last_seq = seq;
            last_len = n;
        }
        last_send = Simulator::Now();
        arm();
        return n;
    }
    void ReceivedAck(Ptr<Packet> p, const TcpHeader &h) override
    {
        TcpSocketBase::ReceivedAck(p, h);
        arm();
    }

  private:
    EventId probe_event;
    Time last_send = Seconds(-1);
    SequenceNumber32 last_seq;       /* the highest segment sent: where it starts, */
    uint32_t last_len = 0;           /* and its bytes */

    /* Linux's slow start after idle (net.ipv4.tcp_slow_start_after_idle,
     * on by default; tcp_cwnd_restart): a connection that sent nothing for
     * an RTO with nothing in flight halves its window for every RTO idle,
     * down to the initial window.  ns-3 keeps the window, and an MPI
     * connection idles between the messages of a pair. */
    void restart_after_idle()
    {
        if (!probes || last_send.IsNegative() || BytesInFlight() != 0) return;
        Time rto = m_rto.Get(), idle = Simulator::Now() - last_send;
        if (rto.IsZero() || idle <= rto) return;
        uint32_t restart = std::min(m_tcb->m_initialCWnd * m_tcb->m_segmentSize, m_tcb->m_cWnd.Get());
        uint32_t cwnd = m_tcb->m_cWnd.Get();
        m_tcb->m_ssThresh = std::max(m_tcb->m_ssThresh.Get(), cwnd / 4 * 3);
        for (int64_t k = idle.GetNanoSeconds() / rto.GetNanoSeconds(); k > 0 && cwnd > restart; k--) cwnd >>= 1;
        m_tcb->m_cWnd = std::max(cwnd, restart);
    }

    bool in_order() const
    {
        return m_tcb->m_congState == TcpSocketState::CA_OPEN || m_tcb->m_congState == TcpSocketState::CA_DISORDER;
    }

    void arm()
    {
        probe_event.Cancel();
        if (!probes || !in_order() || BytesInFlight() == 0 || !m_retxEvent.IsRunning()) return;
        Time srtt = m_rtt->GetEstimate();
        if (srtt.IsZero()) return;
        Time pto = 2 * srtt + (BytesInFlight() <= m_tcb->m_segmentSize ? MilliSeconds(200) : MilliSeconds(2));
        Time rto_left = Simulator::GetDelayLeft(m_retxEvent);
        if (pto >= rto_left) return;
        probe_event = Simulator::Schedule(pto, &ProbingTcp::probe, this);
    }

    void probe()
    {
        if (!in_order() || BytesInFlight() == 0) return;
        g_probes++;
        const uint32_t mss = m_tcb->m_segmentSize;
        SequenceNumber32 next = m_tcb->m_nextTxSequence;
        if (m_txBuffer->SizeFromSequence(next) > 0) {
            TcpSocketBase::SendDataPacket(next, mss, true);
            m_tcb->m_nextTxSequence += std::min(mss, m_txBuffer->SizeFromSequence(next));
        } else if (last_len > 0 && last_seq >= m_txBuffer->HeadSequence()) {
            /* the last segment again, on the boundaries it was sent with
             * (sent at highTxMark - MSS instead, across two of ns-3's
             * segments, it left a 256-machine run with a connection that
             * never sent again; the first unacknowledged segment instead
             * drew duplicate ACKs that started needless recoveries) */
            TcpSocketBase::SendDataPacket(last_seq, last_len, true);
        }
    }
};

}  // namespace

Ptr<Socket> probing_tcp_socket(Ptr<Node> node, bool probes)
{
    Ptr<TcpL4Protocol> l4 = node->GetObject<TcpL4Protocol>();
    TypeIdValue cc, rec, rtt;
    l4->GetAttribute("SocketType", cc);
    l4->GetAttribute("RecoveryType", rec);
    l4->GetAttribute("RttEstimatorType", rtt);
    ObjectFactory f;
    Ptr<ProbingTcp> s = CreateObject<ProbingTcp>();
    s->probes = probes;
    s->SetNode(node);
    s->SetTcp(l4);
    f.SetTypeId(rtt.Get());
    s->SetRtt(f.Create<RttEstimator>());
    f.SetTypeId(cc.Get());
    s->SetCongestionControlAlgorithm(f.Create<TcpCongestionOps>());
    f.SetTypeId(rec.Get());
    s->SetRecoveryAlgorithm(f.Create<TcpRecoveryOps>());
    l4->AddSocket(s);
    return s;
}

uint64_t probing_tcp_probes() { return g_probes; }
void probing_tcp_reset() { g_probes = 0; }
