/* --trace FILE: a line for each call's start, each executor event, each TCP
 * timeout and each dropped packet, with the simulated time, so that where a
 * call's time goes can be read beside the emulated cluster's kernel trace and
 * the PMPI library's TOPOCOLL_TRACE (scripts/timeline.py reads them).  The
 * format, a line an event:
 *   SECONDS call INDEX BLOCK timed|untimed   (rank 0 leaves the barrier)
 *   SECONDS exec RANK INDEX OP start|done|notify PEER
 *                                            (the executor's, as TOPOCOLL_TRACE's
 *                                            lines: a send to PEER starts, its
 *                                            step's sends are done, its syncs leave;
 *                                            none for the MPI's own algorithm)
 *   SECONDS timeout LOCAL->PEER first|repeat (repeat: the connection had
 *                                            timed out and not recovered since)
 *   SECONDS drop PORT                         (a switch port "s0->s1", "host", or "unplaced":
 *                                            a switch's, at no port)
 * and with --trace-tcp, a connection's own events (LOCAL the side that sends):
 *   SECONDS tcp LOCAL->PEER ack UNA CWND SSTHRESH
 *                                            (an ACK without data reaching it, as it arrives:
 *                                            the first unacknowledged byte, the window and the
 *                                            slow-start threshold in segments, "inf" before a
 *                                            loss sets one; the kernel's tcp_probe, its data_len 0)
 *   SECONDS tcp LOCAL->PEER resend SEQ BYTES  (a segment sent again: a recovery's, a timeout's, a
 *                                            loss probe's, its first byte's sequence number and its
 *                                            data; the kernel's tcp_retransmit_skb, without the two)
 *   SECONDS tcp LOCAL->PEER lost WHERE SEQ BYTES
 *                                            (a segment of the connection dropped by a switch port's or
 *                                            a machine's queue, WHERE as the drop line's PORT, an ACK
 *                                            with 0 bytes; beside that line)
 *   SECONDS tcp LOCAL->PEER state NAME        (its congestion state changed to open, disorder, cwr,
 *                                            recovery or loss; the kernel's tcp_cong_state_set)
 * INDEX counts the calls of the run from 0, untimed ones too. */
#ifndef TOPOCOLL_EVENT_TRACE_H
#define TOPOCOLL_EVENT_TRACE_H

#include <string>

/* Start writing to PATH; an error message, or "" */
std::string event_trace_open(const std::string &path);
bool event_tracing();
/* --trace-tcp: the sockets write their tcp lines too (only while tracing) */
void event_trace_tcp(bool on);
bool event_tracing_tcp();
/* One line: the current simulated time, then the printf-formatted rest */
void event_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Flush and close; false if anything failed to be written */
bool event_trace_close();

#endif
