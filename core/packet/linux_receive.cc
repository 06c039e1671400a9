/* A receiver's window and ACKs as Linux's (linux_receive.h says where it
 * departs from the kernel). */
#include "linux_receive.h"

#include <algorithm>

namespace topocoll {

void linux_receive::init(uint32_t mss_, uint32_t truesize_, unsigned wscale_, uint64_t room, int64_t now_ns)
{
    mss = mss_ ? mss_ : 1;
    truesize = std::max(truesize_, mss);
    wscale = wscale_;
    rcvbuf_max = std::max(LINUX_RMEM_DEFAULT, std::min(LINUX_RMEM_MAX, space_from_win(room)));
    rcvbuf = LINUX_RMEM_DEFAULT;
    window_clamp = win_from_space(rcvbuf);
    rcv_wnd = rcv_ssthresh = std::min(LINUX_SYN_WINDOW, window_clamp);   /* tcp_init_buffer_space */
    space = std::min<uint64_t>(rcv_ssthresh, LINUX_INIT_CWND * mss);
    space_copied = 0;
    space_time_ns = now_ns;
}

uint64_t linux_receive::win_from_space(uint64_t bytes) const { return bytes * mss / truesize; }
uint64_t linux_receive::space_from_win(uint64_t win) const { return (win * truesize + mss - 1) / mss; }
uint64_t linux_receive::memory(uint64_t held) const { return (held + mss - 1) / mss * truesize; }
uint64_t linux_receive::tcp_space(uint64_t held) const
{
    const uint64_t mem = memory(held);
    return mem >= rcvbuf ? 0 : win_from_space(rcvbuf - mem);
}
uint64_t linux_receive::align(uint64_t win) const
{
    const uint64_t unit = uint64_t(1) << wscale;
    return (win + unit - 1) / unit * unit;
}

uint64_t linux_receive::select(uint64_t held) const
{
    const uint64_t allowed = win_from_space(rcvbuf), full = std::min(window_clamp, allowed);
    const uint64_t free = tcp_space(held);
    if (free < full / 2 && (free < allowed / 16 || free < mss)) return 0;
    return align(std::min(free, rcv_ssthresh));   /* not rounded away by the shift */
}

uint64_t linux_receive::advertise(uint64_t unacked, uint64_t held)
{
    const uint64_t cur = rcv_wnd > unacked ? rcv_wnd - unacked : 0;
    uint64_t w = select(held);
    if (w < cur) w = align(cur);   /* the right edge never moves back (net.ipv4.tcp_shrink_window 0) */
    rcv_wnd = std::min<uint64_t>(w, uint64_t(65535) << wscale);
    return rcv_wnd;
}

void linux_receive::grow(uint64_t held)
{
    const uint64_t top = std::min(window_clamp, tcp_space(held));
    if (top > rcv_ssthresh) rcv_ssthresh += std::min<uint64_t>(top - rcv_ssthresh, 2 * (uint64_t)mss);
}

/* The kernel's test also passes when the application has read everything
 * (rcv_nxt - copied_seq < SO_RCVLOWAT); at the test the segment just
 * received is unread, so only the window decides. */
bool linux_receive::ack_now(uint64_t unacked, uint64_t held) const { return unacked > mss && select(held) >= rcv_wnd; }

void linux_receive::adjust(uint64_t copied, int64_t now_ns, int64_t rtt_ns)
{
    if (rtt_ns <= 0 || now_ns - space_time_ns < rtt_ns) return;
    const uint64_t c = copied - space_copied;
    if (c > space) {
        uint64_t rcvwin = 2 * c + 16 * (uint64_t)mss;   /* to ride out losses */
        rcvwin += 2 * (rcvwin * (c - space) / std::max<uint64_t>(space, 1));   /* and a sender speeding up */
        const uint64_t b = std::min(space_from_win(rcvwin), rcvbuf_max);
        if (b > rcvbuf) {
            rcvbuf = b;
            window_clamp = win_from_space(b);
        }
        space = c;
    }
    space_copied = copied;
    space_time_ns = now_ns;
}

bool linux_receive::ack_after_read(bool ack_pending, uint64_t unacked, uint64_t held, uint64_t copied) const
{
    if (ack_pending && unacked > mss) return true;   /* the every-second-segment ACK input did not send */
    if (copied == 0) return false;
    const uint64_t now = rcv_wnd > unacked ? rcv_wnd - unacked : 0;
    if (2 * now > window_clamp) return false;
    const uint64_t w = select(held);
    return w > 0 && w >= 2 * now;   /* the read opened the window "significantly" */
}

}  // namespace topocoll
