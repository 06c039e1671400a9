/* MPI point-to-point over the simulated network (sim_mpi.cc): simulated
 * ranks as coroutines, messages as an MPI over TCP moves them. */
#ifndef TOPOCOLL_SIM_MPI_IMPL_H
#define TOPOCOLL_SIM_MPI_IMPL_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "probing_tcp.h"
#include "tree_net.h"

/* How the simulated MPI moves a message: Open MPI 4.1's ob1 over its TCP
 * BTL, whose sizes follow (ompi/mca/pml/ob1/pml_ob1_hdr.h,
 * opal/mca/btl/tcp/btl_tcp_hdr.h).  One TCP connection a pair of machines
 * carries both ways, each way's fragments in order.  A message of up to
 * eager_limit less ob1's largest header (56 bytes) goes at once (a match
 * header) and its send completes when its last byte is in the socket.  A
 * longer one takes a rendezvous:
 *  - put (the TCP BTL's default flags include put, and it needs no memory
 *    registration, so ob1 takes its RDMA protocol): the sender sends a
 *    rendezvous header without data; the receiver, once the header has
 *    met a posted receive, answers with a put request, queued behind
 *    whatever its own side of the connection is still writing; the sender
 *    then writes the whole message as one put fragment, its send complete
 *    when that is in the socket, and a FIN after it, which completes the
 *    receive.  Measured on the emulated cluster (two machines exchanging
 *    128 KB: 20.3 ms, the two puts one after the other, each side's put
 *    request waiting behind its own put; 11.0 ms with
 *    btl_tcp_flags=send,inplace,need-ack,need-csum);
 *  - copy (the BTL without put): the header carries the first
 *    rndv_eager_limit bytes, the receiver acknowledges, the sender writes
 *    the rest in fragments of max_send bytes. */
enum class rendezvous_kind { put, copy };
/* When a pair's TCP connection opens (mpi_options::connect) */
enum class connect_mode { eager, lazy, init };
struct mpi_options {
    long long eager_limit = 65536;   /* btl_tcp_eager_limit (with headers) */
    long long max_send = 131072;     /* btl_tcp_max_send_size */
    rendezvous_kind rendezvous = rendezvous_kind::put;
    bool move_data = false;          /* carry the bytes themselves (for checking them) */
    probing_tcp_options tcp;         /* what TCP does as Linux's does (probing_tcp.h) */
    long long corrupt_message = 0;   /* for testing the check: flip a byte of the k-th message with data */
    double stall_seconds = 1000;     /* no request completing for this long (simulated): stuck, stop */
    /* The host's CPU (sim_mpi.cc, "the host's cores"): 0, every rank on a
     * core of its own, acting the moment something arrives; n > 0, all ranks
     * on one host of n cores (the emulated cluster's), taking turns of about
     * cpu_slice each (drawn from seed) and acting only in their turns
     * (an idle rank yielding its turn: idle_yield). */
    int host_cores = 0;
    double cpu_slice = 0.5e-3;
    /* With the host's cores: a paced rank waiting for its link clock wakes
     * every TCX_IDLE_NAP to drive progress (tc_exec_pace.c), as the
     * testbed's executor does; off, it sleeps to the deadline in one go
     * (without the host's cores a rank reads the moment data arrives) */
    bool idle_wakes = true;
    /* With the host's cores: a rank leaving the barrier late (sim_barrier)
     * spins in it, wanting a core and reading in its turns, as a rank in
     * Open MPI's barrier does; off, it sleeps off its core until it leaves */
    bool barrier_spins = false;
    /* With the host's cores: a rank waiting in an MPI call whose progress
     * poll finds nothing gives its core up (Open MPI's
     * mpi_yield_when_idle, which the testbed sets: its ranks are
     * oversubscribed), so a rank that has something to do runs within a
     * round of polls of yield_poll each; off, the rank on a core keeps it
     * for its whole turn */
    bool idle_yield = true;
    double yield_poll = 2.3e-6;
    /* With the host's cores: the percentage of the time the hypervisor
     * holds each core stopped (0: never), in gaps drawn from those measured
     * on this machine's vCPUs (sim_mpi.cc, "the host's freezes"): the rank
     * on a frozen core stops, and so does the network processing of the
     * machines it serves (tree_net.h, host_freezes) */
    double host_freezes = 0;
    /* With the host's cores: the seconds of a core each frame a machine
     * takes in costs the host's network processing (0: none), run ahead
     * of the rank on that core (sim_mpi.cc, "the host's network
     * processing"; tree_net.h, host_softirqs) */
    double host_softirq = 0;
    unsigned long long seed = 1;
    /* When the connections open.  eager: every pair the schedules use,
     * before the run.  lazy: as Open MPI's TCP BTL opens them, a pair's at
     * its first message, whose data waits until both ends have sent their
     * handshake message (the BTL's connect ack; the accepting end answers
     * in its turn on a core).  init: lazy, but for the pairs the PMPI
     * library's start-up exchange has already connected: its allgathers,
     * which Open MPI runs by recursive doubling on a power of two ranks
     * and by Bruck's otherwise (native_openmpi_allgather_pair). */
    connect_mode connect = connect_mode::eager;
};

struct sim_stats {
    uint64_t messages = 0, fragments = 0, rendezvous = 0, wire_bytes = 0;
    uint64_t timeouts = 0, recoveries = 0;   /* TCP: retransmission timeouts, fast recoveries */
    uint64_t recovery_timeouts = 0;          /* timeouts that ended a fast recovery (Linux: TCPSackRecoveryFail) */
    double recovery_s = 0;                   /* simulated seconds connections spent in fast recoveries that ended */
    /* with the host's cores: reads of bytes that had waited in a socket
     * for their rank to run, and of those, reads after a millisecond or
     * more (from the first byte waiting) */
    uint64_t reads_waited = 0, reads_late = 0;
};

/* The simulated world: a rank on each machine of net (rank r on machine r). */
void sim_world_init(tree_net *net, const mpi_options &o);
/* Open the TCP connections of the pairs of machines that will talk
 * (need[a * m + b], a < b), those mpi_options::connect opens before the run
 * (the rest open at their first message); then run ns-3 until they are up.
 * Returns the simulated time it took. */
double sim_connect(const std::vector<char> &need, int machines);
/* The connections opened before the run, and at a first message during it */
size_t sim_connections_before_run();
size_t sim_connections_in_run();
/* Run body(rank) as every rank's program, from the current simulated time
 * until all have returned; stack_bytes a rank. */
void sim_run_ranks(const std::function<void(int)> &body, size_t stack_bytes);
/* In a rank's program: every rank waits here until all have come, then
 * this one leaves `late` seconds after the others' release (still in the
 * barrier, so still reading what arrives). */
void sim_barrier(double late = 0);
/* In a rank's program: pass simulated time. */
void sim_sleep(double seconds);
const sim_stats &sim_get_stats();
void sim_reset_stats();

#endif
