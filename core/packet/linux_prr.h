/* A fast recovery's window as Linux's proportional rate reduction sets it
 * (tcp_cwnd_reduction, linux_prr.cc), for the simulator's sockets
 * (probing_tcp.cc).  ns-3 3.37's TcpPrrRecovery differs in three ways that
 * matter on a congested tree:
 *  - order: Linux marks an ACK's losses (RACK) before it sizes the window,
 *    so the window is the pipe after them plus PRR's allowance.  The
 *    simulator's RACK runs after ns-3's ACK processing, so with ns-3's PRR
 *    every segment it found lost went out on top of the allowance: a burst
 *    of retransmissions into the full port that dropped the originals.
 *  - the reference window: Linux reduces from the window before the
 *    recovery (prior_cwnd), ns-3 from the data outstanding then.
 *  - the slow-start bound (below ssthresh): Linux lets the window catch up
 *    on what PRR held back (prr_delivered - prr_out) on every ACK, plus a
 *    segment when the ACK moved snd_una and marked nothing lost; ns-3 only
 *    after a retransmission was acknowledged, else by what the ACK delivered.
 * Linux counts segments, a short one as one, and so does this (the
 * windows are ns-3's bytes); an ACK that delivers nothing leaves the window
 * as it was. */
#ifndef TOPOCOLL_LINUX_PRR_H
#define TOPOCOLL_LINUX_PRR_H

#include <functional>

#include "ns3/internet-module.h"

namespace topocoll {

class LinuxPrr : public ns3::TcpRecoveryOps {
  public:
    static ns3::TypeId GetTypeId();
    std::string GetName() const override { return "LinuxPrr"; }
    void EnterRecovery(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t dupAckCount, uint32_t unAckDataCount,
                       uint32_t deliveredBytes) override;
    void DoRecovery(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t deliveredBytes) override;
    void ExitRecovery(ns3::Ptr<ns3::TcpSocketState> tcb) override;
    void UpdateBytesSent(uint32_t bytesSent) override;
    ns3::Ptr<ns3::TcpRecoveryOps> Fork() override { return ns3::CopyObject<LinuxPrr>(this); }

    /* what the socket knows of the ACK being processed, once it has marked
     * the ACK's losses and set tcb's bytes in flight after them */
    struct ack_facts {
        bool una_advanced;   /* it acknowledged new data (FLAG_SND_UNA_ADVANCED) */
        bool newly_lost;     /* it marked segments lost (rate_sample's losses) */
    };
    /* the socket's loss marking for this ACK, run before the window is
     * sized (tcp_fastretrans_alert before tcp_cong_control); none: nothing
     * marked, tcb's bytes in flight as they are */
    std::function<ack_facts()> before;

  private:
    uint64_t prr_delivered = 0;   /* segments delivered since the recovery began */
    uint64_t prr_out = 0;         /* segments sent since */
    uint64_t prior_cwnd = 0;      /* the window as the recovery began, bytes */
};

}  // namespace topocoll

#endif
