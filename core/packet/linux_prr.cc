/* Linux's proportional rate reduction (linux_prr.h says where it departs
 * from ns-3's TcpPrrRecovery). */
#include "linux_prr.h"

#include <algorithm>

using namespace ns3;

namespace topocoll {

NS_OBJECT_ENSURE_REGISTERED(LinuxPrr);

TypeId LinuxPrr::GetTypeId()
{
    static TypeId tid = TypeId("topocoll::LinuxPrr").SetParent<TcpRecoveryOps>().SetGroupName("Internet").AddConstructor<LinuxPrr>();
    return tid;
}

/* tcp_init_cwnd_reduction: ns-3 has set ssthresh, the window is still the
 * one before the recovery */
void LinuxPrr::EnterRecovery(Ptr<TcpSocketState> tcb, uint32_t, uint32_t, uint32_t deliveredBytes)
{
    prior_cwnd = std::max<uint64_t>(tcb->m_cWnd.Get(), 1);
    prr_delivered = prr_out = 0;
    DoRecovery(tcb, deliveredBytes);
}

/* tcp_cwnd_reduction, after the ACK's losses are marked.  Linux counts
 * segments: what was delivered or sent, a segment each however short (a
 * message's last), and the windows in whole segments; so does this (in
 * bytes the proportional share rounded up to a part of a segment, which
 * the sender does not send) */
void LinuxPrr::DoRecovery(Ptr<TcpSocketState> tcb, uint32_t deliveredBytes)
{
    const ack_facts ack = before ? before() : ack_facts{false, false};
    if (deliveredBytes == 0 || prior_cwnd == 0) return;
    const uint64_t mss = tcb->m_segmentSize;
    auto segments = [mss](uint64_t bytes) { return (int64_t)((bytes + mss - 1) / mss); };
    const int64_t ssthresh = (int64_t)(tcb->m_ssThresh.Get() / mss), prior = std::max<int64_t>((int64_t)(prior_cwnd / mss), 1);
    const int64_t in_flight = segments(tcb->m_bytesInFlight.Get()), delivered = segments(deliveredBytes);
    prr_delivered += delivered;
    int64_t send;
    if (in_flight > ssthresh) {   /* proportional: ssthresh / prior_cwnd of what was delivered, rounded up */
        send = (ssthresh * (int64_t)prr_delivered + prior - 1) / prior - (int64_t)prr_out;
    } else {                      /* slow-start bound: catch up, at most back to ssthresh */
        send = std::max<int64_t>((int64_t)prr_delivered - (int64_t)prr_out, delivered);
        if (ack.una_advanced && !ack.newly_lost) send++;
        send = std::min<int64_t>(send, ssthresh - in_flight);
    }
    send = std::max<int64_t>(send, prr_out == 0 ? 1 : 0);   /* the fast retransmit goes */
    tcb->m_cWnd = (uint32_t)std::min<uint64_t>(tcb->m_bytesInFlight.Get() + (uint64_t)send * mss, UINT32_MAX);
    tcb->m_cWndInfl = tcb->m_cWnd;
}

/* ns-3 calls this for every segment it sends in a recovery */
void LinuxPrr::UpdateBytesSent(uint32_t)
{
    prr_out++;
}

/* ns-3 has set the window to ssthresh (tcp_end_cwnd_reduction) */
void LinuxPrr::ExitRecovery(Ptr<TcpSocketState> tcb)
{
    tcb->m_cWndInfl = tcb->m_cWnd;
}

}  // namespace topocoll
