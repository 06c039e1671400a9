/* A receiver's window and ACKs as Linux's (tcp_input.c, tcp_output.c),
 * for ProbingTcp's --linux-receive.  ns-3 advertises what its receive
 * buffer has free (the simulator's is 4 MiB) and ACKs every second in-order
 * segment.  Linux's receive buffer starts at tcp_rmem's default and grows
 * as the application reads (tcp_rcv_space_adjust), the window it advertises
 * grows two segments a segment received up to what the buffer has free
 * (tcp_grow_window, __tcp_select_window) and never shrinks; and a receiver
 * ACKs at once past a full segment only while that window would not shrink
 * (__tcp_ack_snd_check): with data left unread, the ACK waits for the
 * application's read (tcp_cleanup_rbuf) or the delayed-ACK timer, and then
 * covers everything received, a stretch ACK.
 *
 * Departures: memory is counted a segment at a time at
 * LINUX_SEGMENT_TRUESIZE (the kernel counts each skb's truesize, and the
 * window's share of it, scaling_ratio, from the skbs it has seen); quick
 * ACKs are left out (a connection carrying data both ways, as an MPI
 * job's do, is in the kernel's ping-pong mode, where they are off); the
 * receiver's RTT for the buffer's growth is the socket's smoothed RTT (the
 * kernel's rcv_rtt_est measures it from timestamps). */
#ifndef TOPOCOLL_LINUX_RECEIVE_H
#define TOPOCOLL_LINUX_RECEIVE_H

#include <cstdint>

namespace topocoll {

/* net.ipv4.tcp_rmem on the emulated cluster's kernel (6.18): the default and
 * the most autotuning grows a receive buffer to */
constexpr uint64_t LINUX_RMEM_DEFAULT = 131072;
constexpr uint64_t LINUX_RMEM_MAX = 33554432;
/* the window a SYN offers (unscaled) and the segments of the first
 * measure of the application's reads (TCP_INIT_CWND) */
constexpr uint64_t LINUX_SYN_WINDOW = 65535;
constexpr uint64_t LINUX_INIT_CWND = 10;

struct linux_receive {
    uint32_t mss = 1448, truesize = 2304;
    unsigned wscale = 0;             /* the window's shift on the wire */
    uint64_t rcvbuf = LINUX_RMEM_DEFAULT, rcvbuf_max = LINUX_RMEM_MAX;
    uint64_t window_clamp = 0, rcv_ssthresh = 0, rcv_wnd = 0;
    uint64_t space = 0, space_copied = 0;   /* tcp_sock's rcvq_space: bytes read in the last measure, */
    int64_t space_time_ns = 0;       /* the read count and time it began at */

    /* `room`: the bytes the simulator's own receive buffer takes, which
     * caps the window */
    void init(uint32_t mss, uint32_t truesize, unsigned wscale, uint64_t room, int64_t now_ns);
    /* a window's bytes from memory and back (tcp_win_from_space, tcp_space_from_win) */
    uint64_t win_from_space(uint64_t bytes) const;
    uint64_t space_from_win(uint64_t win) const;
    /* the memory `held` bytes in the receive queues take, and the window
     * the rest of the buffer gives (the kernel's tcp_space) */
    uint64_t memory(uint64_t held) const;
    uint64_t tcp_space(uint64_t held) const;
    /* a window rounded up to what the shift carries */
    uint64_t align(uint64_t win) const;
    /* __tcp_select_window: the window with `held` bytes queued (unread or out of order) */
    uint64_t select(uint64_t held) const;
    /* tcp_select_window, as a segment goes: the window it carries, which
     * never moves its right edge back (`unacked`: received since the last
     * one, rcv_nxt - rcv_wup); the caller sets rcv_wup to rcv_nxt */
    uint64_t advertise(uint64_t unacked, uint64_t held);
    /* tcp_grow_window, for an in-order segment */
    void grow(uint64_t held);
    /* __tcp_ack_snd_check's first test: ACK at once */
    bool ack_now(uint64_t unacked, uint64_t held) const;
    /* tcp_rcv_space_adjust, after a read: `copied` all bytes read so far */
    void adjust(uint64_t copied, int64_t now_ns, int64_t rtt_ns);
    /* tcp_cleanup_rbuf, after a read of `copied` bytes: ACK now */
    bool ack_after_read(bool ack_pending, uint64_t unacked, uint64_t held, uint64_t copied) const;
};

}  // namespace topocoll

#endif
