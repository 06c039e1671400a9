/* CUBIC's congestion avoidance as Linux's tcp_cubic runs it (linux_cubic.h).
 * The constants are Linux's: b = 717/1024, C = 410/1024 segments a second
 * cubed, fast convergence on, tcp_friendliness on. */
#include "linux_cubic.h"
#include "probing_tcp.h"

#include <algorithm>
#include <cmath>

using namespace ns3;

namespace topocoll {

NS_OBJECT_ENSURE_REGISTERED(LinuxCubic);

namespace {
constexpr uint32_t BETA = 717, BETA_SCALE = 1024;   /* the window kept after a loss: BETA / BETA_SCALE */
constexpr double C = 410.0 / 1024;                 /* the curve's scale, segments / s^3 */
/* Reno's window grows a segment for every (cwnd * RENO_SCALE) >> 3
 * segments acknowledged: 8 (1 + b) / 3 (1 - b), in Linux's integers */
constexpr uint32_t RENO_SCALE = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
constexpr uint32_t FIRST_EPOCH_CLAMP = 20;         /* before any loss, at most 20 ACKs a segment */
/* Linux recomputes the curve at most every 1/32 s while the window stays */
const Time RECOMPUTE = MicroSeconds(1000000 / 32);
/* HyStart's constants (tcp_cubic's module parameters' defaults) */
constexpr uint32_t HYSTART_LOW_WINDOW = 16;        /* segments */
constexpr uint32_t HYSTART_MIN_SAMPLES = 8;
constexpr uint32_t HYSTART_DELAY_MIN_US = 4000, HYSTART_DELAY_MAX_US = 16000;
const Time SAMPLES_SKIPPED = Seconds(1);           /* after an epoch begins: cubictcp_acked's HZ */
}  // namespace

TypeId LinuxCubic::GetTypeId()
{
    static TypeId tid = TypeId("topocoll::LinuxCubic").SetParent<TcpCubic>().AddConstructor<LinuxCubic>();
    return tid;
}

void LinuxCubic::reset()
{
    last_max = 0;
    in_epoch = false;
    ack_cnt = reno_cwnd = cwnd_cnt = 0;
    cached_cwnd = 0;
}

uint32_t LinuxCubic::acks_per_segment(uint32_t cwnd, uint32_t acked, Time min_rtt)
{
    ack_cnt += acked;
    const Time now = Simulator::Now();
    if (in_epoch && cwnd == cached_cwnd && now - cached_at <= RECOMPUTE) return cnt;
    cached_cwnd = cwnd;
    cached_at = now;
    if (!in_epoch) {
        in_epoch = true;
        epoch_start = now;
        ack_cnt = acked;
        reno_cwnd = cwnd;
        if (last_max <= cwnd) {
            k = 0;
            origin = cwnd;
        } else {
            k = std::cbrt((last_max - cwnd) / C);
            origin = last_max;
        }
    }
    /* where the curve is one minimum round trip from now */
    const double t = (now - epoch_start + min_rtt).GetSeconds();
    const uint32_t delta = (uint32_t)(C * std::pow(std::fabs(t - k), 3));
    const double target = t < k ? origin - delta : origin + delta;
    cnt = target > cwnd ? (uint32_t)(cwnd / (target - cwnd)) : 100 * cwnd;
    if (last_max == 0 && cnt > FIRST_EPOCH_CLAMP) cnt = FIRST_EPOCH_CLAMP;
    /* the TCP-friendly region: no slower than Reno */
    const uint32_t per_reno_segment = std::max<uint32_t>((cwnd * RENO_SCALE) >> 3, 1);
    while (ack_cnt > per_reno_segment) {
        ack_cnt -= per_reno_segment;
        reno_cwnd++;
    }
    if (reno_cwnd > cwnd) cnt = std::min(cnt, cwnd / (reno_cwnd - cwnd));
    cnt = std::max<uint32_t>(cnt, 2);
    return cnt;
}

void LinuxCubic::IncreaseWindow(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked)
{
    if (may_grow && !may_grow()) return;
    if (newly_delivered) segmentsAcked = newly_delivered(segmentsAcked);
    if (tcb->m_cWnd < tcb->m_ssThresh) {   /* slow start: ns-3's (and its HyStart) up to the threshold */
        const uint32_t mss = tcb->m_segmentSize;
        const uint64_t room = ((uint64_t)tcb->m_ssThresh.Get() - tcb->m_cWnd.Get() + mss - 1) / mss;
        const uint32_t used = (uint32_t)std::min<uint64_t>(segmentsAcked, room);
        TcpCubic::IncreaseWindow(tcb, used);
        tcb->m_cWnd = std::min(tcb->m_cWnd.Get(), tcb->m_ssThresh.Get());
        segmentsAcked -= used;
        if (tcb->m_cWnd < tcb->m_ssThresh) return;
    }
    if (segmentsAcked == 0) return;
    const uint32_t cwnd = tcb->GetCwndInSegments();
    const uint32_t w = acks_per_segment(cwnd, segmentsAcked, tcb->m_minRtt == Time::Max() ? Time(0) : tcb->m_minRtt);
    /* tcp_cong_avoid_ai: credit gathered at a larger w is spent gently */
    uint32_t grow = 0;
    if (cwnd_cnt >= w) {
        cwnd_cnt = 0;
        grow = 1;
    }
    cwnd_cnt += segmentsAcked;
    if (cwnd_cnt >= w) {
        grow += cwnd_cnt / w;
        cwnd_cnt -= (cwnd_cnt / w) * w;
    }
    tcb->m_cWnd = tcb->m_cWnd.Get() + grow * tcb->m_segmentSize;
}

void LinuxCubic::PktsAcked(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked, const Time &rtt)
{
    last_ack = Simulator::Now();
    if (!linux_hystart) {
        TcpCubic::PktsAcked(tcb, segmentsAcked, rtt);
        return;
    }
    /* cubictcp_acked takes the ACK's own sample (rtt_sample); ns-3 passes
     * its smoothed RTT, and with every call, several for one ACK */
    const Time sample = rtt_sample ? rtt_sample() : rtt;
    if (!sample.IsStrictlyPositive()) return;
    if (in_epoch && last_ack - epoch_start < SAMPLES_SKIPPED) return;
    const uint32_t delay = std::max<uint32_t>(1, (uint32_t)sample.GetMicroSeconds());
    if (delay_min_us == 0 || delay < delay_min_us) delay_min_us = delay;
    if (!found && tcb->m_cWnd < tcb->m_ssThresh) hystart_update(tcb, delay);
}

void LinuxCubic::hystart_reset(Ptr<const TcpSocketState> tcb)
{
    round_start = train_last = Simulator::Now();
    end_seq = tcb->m_highTxMark;
    curr_rtt_us = ~0u;
    sample_cnt = 0;
    round_begun = true;
}

void LinuxCubic::hystart_update(Ptr<TcpSocketState> tcb, uint32_t delay_us)
{
    /* below the low window nothing is tested; whether a round begins there
     * is the difference between Linux 5.8-6.13 and 6.14 (rounds_below_low_window) */
    const bool below = tcb->GetCwndInSegments() < HYSTART_LOW_WINDOW;
    if (below && !rounds_below_low_window) return;
    if (!round_begun || tcb->m_lastAckedSeq > end_seq) hystart_reset(tcb);
    if (below) return;
    const Time now = Simulator::Now();
    bool train = false, delay = false;
    if (now - train_last <= hystart_ack_delta) {   /* the ACK train */
        train_last = now;
        const double rate = pacing_rate ? pacing_rate() : 0;   /* hystart_ack_delay */
        const double ack_delay_us = rate > 0 ? std::min(1000.0, (double)LINUX_GSO_MAX_SIZE * 4 * 1e6 / rate) : 0;
        train = (double)(now - round_start).GetMicroSeconds() > (delay_min_us + ack_delay_us) / 2;
    }
    curr_rtt_us = std::min(curr_rtt_us, delay_us);   /* the delay */
    if (sample_cnt < HYSTART_MIN_SAMPLES)
        sample_cnt++;
    else
        delay = curr_rtt_us > delay_min_us + std::clamp(delay_min_us >> 3, HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
    if (train || delay) {
        found = true;
        tcb->m_ssThresh = tcb->m_cWnd;
        if (hystart_exit) hystart_exit(train, delay, tcb->GetCwndInSegments());
    }
}

uint32_t LinuxCubic::GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t)
{
    const uint32_t cwnd = tcb->GetCwndInSegments();
    in_epoch = false;
    last_max = cwnd < last_max ? cwnd * (BETA_SCALE + BETA) / (2 * BETA_SCALE) : cwnd;   /* fast convergence */
    return std::max<uint32_t>(cwnd * BETA / BETA_SCALE, 2) * tcb->m_segmentSize;
}

void LinuxCubic::CongestionStateSet(Ptr<TcpSocketState> tcb, const TcpSocketState::TcpCongState_t newState)
{
    TcpCubic::CongestionStateSet(tcb, newState);
    if (newState == TcpSocketState::CA_LOSS) {   /* a timeout forgets the curve and HyStart's state, as Linux's does */
        reset();
        found = false;
        delay_min_us = 0;
        hystart_reset(tcb);
    }
}

void LinuxCubic::CwndEvent(Ptr<TcpSocketState> tcb, const TcpSocketState::TcpCAEvent_t event)
{
    TcpCubic::CwndEvent(tcb, event);
    /* sending again after nothing was in flight: the curve idled too.
     * Linux moves the epoch on by the time since the last send; this by the
     * time since the last acknowledgement, a round trip less. */
    if (event == TcpSocketState::CA_EVENT_TX_START && in_epoch && !last_ack.IsZero()) {
        const Time now = Simulator::Now();
        epoch_start = std::min(epoch_start + (now - last_ack), now);
    }
}

}  // namespace topocoll
