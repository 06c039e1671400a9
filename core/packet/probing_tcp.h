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
ns3::Ptr<ns3::Socket> probing_tcp_socket(ns3::Ptr<ns3::Node> node, bool probes, bool lost_retransmits);
/* The TCP protocol to install on every node (InternetStackHelper::SetTcp):
 * ns-3's, finding a connected socket by a hash rather than a walk; or
 * ns-3's own (hash false). */
const char *probing_tcp_l4(bool hash);
uint64_t probing_tcp_probes();   /* probes sent, all sockets, since the last reset */
uint64_t probing_tcp_lost_retransmits();   /* lost retransmissions found and sent again, likewise */
void probing_tcp_reset();

#endif
