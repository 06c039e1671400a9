/* MPI point-to-point over the simulated network (sim_mpi.cc): simulated
 * ranks as coroutines, messages as an MPI over TCP moves them. */
#ifndef TOPOCOLL_SIM_MPI_IMPL_H
#define TOPOCOLL_SIM_MPI_IMPL_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tree_net.h"

/* How the simulated MPI moves a message (Open MPI 4.1's ob1 over its TCP
 * BTL, by default): one TCP connection a pair of machines carries both
 * ways; a message of up to eager_limit bytes (its header included) goes at
 * once and its send completes when its last byte is in the socket; a longer
 * one sends its first fragment, waits for the receiver to match it and
 * answer, then the rest in fragments of max_send bytes. */
struct mpi_options {
    int header_bytes = 32;           /* each fragment's headers (ob1 + BTL) */
    long long eager_limit = 65536;   /* btl_tcp_eager_limit */
    long long max_send = 131072;     /* btl_tcp_max_send_size */
    bool move_data = false;          /* carry the bytes themselves (for checking them) */
    bool loss_probes = true;         /* TCP probes a lost tail as Linux does (probing_tcp.h) */
    long long corrupt_message = 0;   /* for testing the check: flip a byte of the k-th message with data */
    double stall_seconds = 1000;     /* no request completing for this long (simulated): stuck, stop */
};

struct sim_stats {
    uint64_t messages = 0, fragments = 0, rendezvous = 0, wire_bytes = 0;
    uint64_t timeouts = 0, recoveries = 0;   /* TCP: retransmission timeouts, fast recoveries */
};

/* The simulated world: a rank on each machine of net (rank r on machine r). */
void sim_world_init(tree_net *net, const mpi_options &o);
/* Open the TCP connections of the pairs of machines that will talk
 * (need[a * m + b], a < b); then run ns-3 until they are up.  Returns the
 * simulated time it took. */
double sim_connect(const std::vector<char> &need, int machines);
/* Run body(rank) as every rank's program, from the current simulated time
 * until all have returned; stack_bytes a rank. */
void sim_run_ranks(const std::function<void(int)> &body, size_t stack_bytes);
/* In a rank's program: every rank waits here until all have come. */
void sim_barrier();
/* In a rank's program: pass simulated time. */
void sim_sleep(double seconds);
const sim_stats &sim_get_stats();
void sim_reset_stats();

#endif
