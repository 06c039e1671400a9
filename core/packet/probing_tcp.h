/* TCP as Linux recovers a lost tail (probing_tcp.cc): ns-3 3.37's TCP has
 * SACK and PRR but neither tail loss probes (TLP) nor RACK, so a message
 * whose last segments are dropped waits for the 200 ms retransmission
 * timeout where Linux probes after two round trips and recovers. */
#ifndef TOPOCOLL_PROBING_TCP_H
#define TOPOCOLL_PROBING_TCP_H

#include <cstdint>

#include "ns3/internet-module.h"

/* A connected-socket factory for a node: the subclass below, with the
 * node's TCP defaults (congestion control, recovery, RTT estimator). */
ns3::Ptr<ns3::Socket> probing_tcp_socket(ns3::Ptr<ns3::Node> node, bool probes, bool lost_retransmits,
                                         bool sndbuf_auto);
/* Linux's send buffer for a window of `segments` (tcp_sndbuf_expand), in
 * bytes of data: 2 x per_mss bytes of memory a segment of the window (at
 * least 10), a queued segment of mss bytes taking LINUX_TRUESIZE_PER_SEGMENT
 * of memory, up to net.ipv4.tcp_wmem's maximum.  The constants were
 * measured on the emulated cluster's kernel (6.18 on this machine, TSO and GSO
 * off) with ss -m: the buffer is 46,080 bytes up to a window of 10 segments
 * and grows by 4,608 a segment; a send queue of n segments holds about
 * n x 1,560 bytes. */
constexpr uint64_t LINUX_SNDBUF_PER_SEGMENT = 2 * 2304;
constexpr uint64_t LINUX_TRUESIZE_PER_SEGMENT = 1560;
constexpr uint64_t LINUX_SNDBUF_MAX = 4194304;   /* net.ipv4.tcp_wmem's maximum */
uint32_t probing_tcp_sndbuf(uint64_t segments, uint32_t mss);
/* The TCP protocol to install on every node (InternetStackHelper::SetTcp):
 * ns-3's, finding a connected socket by a hash rather than a walk; or
 * ns-3's own (hash false). */
const char *probing_tcp_l4(bool hash);
uint64_t probing_tcp_probes();   /* probes sent, all sockets, since the last reset */
uint64_t probing_tcp_lost_retransmits();   /* lost retransmissions found and sent again, likewise */
void probing_tcp_reset();

#endif
