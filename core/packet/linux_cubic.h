/* CUBIC's congestion avoidance as Linux's tcp_cubic runs it (linux_cubic.cc).
 * ns-3 3.37's TcpCubic follows the cubic curve alone: after a loss at a
 * window of W segments it holds near 0.7 W for K = cbrt(0.3 W / 0.4)
 * seconds (1.3 s at W = 3), where Linux (tcp_friendliness, on by default)
 * grows the window at least as fast as Reno would, about half a segment a
 * round trip, and a round trip on a switched cluster is milliseconds. */
#ifndef TOPOCOLL_LINUX_CUBIC_H
#define TOPOCOLL_LINUX_CUBIC_H

#include <functional>

#include "ns3/internet-module.h"

namespace topocoll {

/* HyStart's ACK train ends at a gap longer than this between two ACKs
 * (tcp_cubic's module parameter hystart_ack_delta_us, its default) */
constexpr uint32_t LINUX_HYSTART_ACK_DELTA_US = 2000;

/* HyStart is ns-3's (TcpCubic's), or with linux_hystart Linux's: a slow
 * start from a window of 16 segments ends where a round's ACKs have come
 * in a train, none more than 2 ms after the last, for longer than half of
 * (the least RTT + min(1 ms, 4 x 64 KB at the pacing rate)), or where the
 * least of a round's first 8 RTT samples exceeds the least RTT by
 * clamp(least RTT / 8, 4 ms, 16 ms); once a connection's, until a timeout;
 * with no RTT sample taken in the first second of an avoidance epoch
 * (tcp_cubic's cubictcp_acked and hystart_update).  ns-3's train must last
 * the whole least RTT, its delay threshold is the least RTT again (at
 * least 4 ms), and it takes samples 10 ms after an epoch began, which left
 * its least RTT that of a quiet network and ended more slow starts early.
 * Slow start is Linux's
 * tcp_slow_start: the window grows by the segments acknowledged up to the
 * slow-start threshold and the rest go to congestion avoidance (ns-3's
 * TcpCubic adds them all, so one ACK for a run of segments took the window
 * far past the threshold).  The window's growth in congestion avoidance,
 * the threshold after a loss and the epoch are Linux's: the larger of the
 * cubic curve's growth and Reno's (an estimate of the window Reno would
 * have, one segment more for every
 * 8 (1 + b) / 3 (1 - b) / 8 windows acknowledged, b = 717/1024), fast
 * convergence, a clamp of 20 acknowledgements a segment before the first
 * loss, and an epoch moved on by the time the connection idled. */
class LinuxCubic : public ns3::TcpCubic {
  public:
    static ns3::TypeId GetTypeId();
    std::string GetName() const override { return "LinuxCubic"; }
    void IncreaseWindow(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t segmentsAcked) override;
    void PktsAcked(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t segmentsAcked, const ns3::Time &rtt) override;
    uint32_t GetSsThresh(ns3::Ptr<const ns3::TcpSocketState> tcb, uint32_t bytesInFlight) override;
    void CongestionStateSet(ns3::Ptr<ns3::TcpSocketState> tcb,
                            const ns3::TcpSocketState::TcpCongState_t newState) override;
    void CwndEvent(ns3::Ptr<ns3::TcpSocketState> tcb, const ns3::TcpSocketState::TcpCAEvent_t event) override;
    ns3::Ptr<ns3::TcpCongestionOps> Fork() override { return ns3::CopyObject<LinuxCubic>(this); }

    /* whether the window may grow (the socket's tcp_is_cwnd_limited); none: always */
    std::function<bool()> may_grow;
    /* of the segments ns-3 counts acknowledged, how many the ACK newly
     * delivered (the socket's count, probing_tcp.cc); none: all of them */
    std::function<uint32_t(uint32_t)> newly_delivered;
    /* HyStart as Linux's (above), else ns-3's */
    bool linux_hystart = false;
    /* Linux's HyStart begins its rounds below the low window too, so a train
     * already long when the window reaches 16 segments ends the slow start
     * there (Linux 6.14 on and the stable kernels, "tcp_cubic: fix incorrect
     * HyStart round start detection"; the testbed's 6.18); else a round
     * begins at the low window, as in Linux 5.8-6.13, and no slow start
     * ends below 17 */
    bool rounds_below_low_window = false;
    /* Linux's HyStart: the longest gap between two ACKs of a train */
    ns3::Time hystart_ack_delta = ns3::MicroSeconds(LINUX_HYSTART_ACK_DELTA_US);
    /* a slow start HyStart ended (Linux's), for the run's counters: by the
     * ACK train, by the delay (both can on one ACK, as Linux counts them:
     * TCPHystartTrainDetect, TCPHystartDelayDetect), the window then in segments */
    std::function<void(bool train, bool delay, uint32_t cwnd)> hystart_exit;
    /* the ACK's round-trip sample as Linux's gets it (negative: the ACK
     * gave none), once an ACK; none: the RTT ns-3 passes (its smoothed one) */
    std::function<ns3::Time()> rtt_sample;
    /* the socket's pacing rate, bytes a second (HyStart's ACK allowance); none: 0 */
    std::function<double()> pacing_rate;

  private:
    void reset();
    /* bictcp_update's cnt, the curve read one minimum round trip ahead */
    uint32_t acks_per_segment(uint32_t cwnd, uint32_t acked, ns3::Time min_rtt);

    uint32_t last_max = 0;          /* window (segments) at the last loss, after fast convergence */
    double origin = 0, k = 0;       /* the curve's plateau (segments) and when it reaches it (s) */
    bool in_epoch = false;
    ns3::Time epoch_start, last_ack;
    uint32_t ack_cnt = 0;           /* segments acknowledged towards Reno's next segment */
    uint32_t reno_cwnd = 0;         /* Reno's window (segments) since the epoch began */
    uint32_t cwnd_cnt = 0;          /* segments acknowledged towards the next segment of window */
    uint32_t cnt = 2;               /* acknowledged segments a segment of window, last computed */
    uint32_t cached_cwnd = 0;       /* the window it was computed for, and when */
    ns3::Time cached_at;

    /* Linux's HyStart (bictcp's fields of the same names) */
    void hystart_reset(ns3::Ptr<const ns3::TcpSocketState> tcb);
    void hystart_update(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t delay_us);
    bool found = false, round_begun = false;
    uint32_t delay_min_us = 0;      /* the least RTT sample since the last timeout */
    uint32_t curr_rtt_us = ~0u;     /* the least of this round's first samples */
    uint32_t sample_cnt = 0;
    ns3::Time round_start, train_last;
    ns3::SequenceNumber32 end_seq;  /* the round ends once this is acknowledged */
};

}  // namespace topocoll

#endif
