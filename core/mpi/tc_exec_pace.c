/* The executor, part three: pacing over TCP (tcx_pacing in tc_exec.h): how
 * a message is cut into pieces under the eager limit, how long a step's
 * bytes take on the rank's link, and waiting until then. */
#include "tc_exec.h"

#include <stdlib.h>
#include <string.h>

TCX_API int tcx_paced(const tcx_state *st, int peer) { return st->pace.rate_to && st->pace.rate_to[peer] > 0; }

/* How many MPI messages carry a message of n elements of type t to or from
 * peer, and the elements of each but the last: one, unless paced and on bytes
 * (a paced run with blocks over a piece runs on bytes on every rank, so both
 * ends cut a message alike), then pieces of piece_bytes. */
TCX_API int tcx_split(const tcx_state *st, int peer, int n, MPI_Datatype t, int *per)
{
    *per = n;
    if (!tcx_paced(st, peer) || t != MPI_BYTE || st->pace.piece_bytes <= 0 || n <= st->pace.piece_bytes) return 1;
    *per = st->pace.piece_bytes;
    return (n + *per - 1) / *per;
}

/* The MPI messages of a side's ops (peer: the op field naming the other end). */
TCX_API long long tcx_count_split(const tcx_state *st, const long long *op, int nop, const tcx_side *side, int peer)
{
    long long total = 0;
    for (int j = 0; j < nop; j++) {
        int n, per, other = (peer ? st->sched->ops[op[j]].dst : st->sched->ops[op[j]].src);
        tcx_piece(st->sched, op[j], side, other, &n);
        total += tcx_split(st, other, n, side->type, &per);
    }
    return total;
}

/* Seconds the paced sends [j, k) of a step take on the rank's link. */
TCX_API double tcx_step_time(const tcx_state *st, int j, int k, const tcx_side *snd)
{
    double t = 0;
    int size;
    TCX(Type_size)(snd->type, &size);
    for (; j < k; j++) {
        int dst = st->sched->ops[st->view.send_op[j]].dst, n;
        if (!tcx_paced(st, dst)) continue;
        tcx_piece(st->sched, st->view.send_op[j], snd, dst, &n);
        t += 8.0 * (double)n * size / st->pace.rate_to[dst];
    }
    return t;
}

/* Until MPI_Wtime() reaches until, driving the MPI's progress.  Napping,
 * the rank wakes for its receives every TCX_IDLE_NAP at most (a 100 Mbit/s
 * link fills 12.5 KB of socket buffer a millisecond) or nap_max if longer:
 * an idle rank waits for a time it knows, not for a message, and on
 * oversubscribed cores every wake-up is CPU the others' packets need. */
TCX_API int tcx_idle_until(const tcx_state *st, double until)
{
    int rc = MPI_SUCCESS, flag;
#if defined(TOPOCOLL_SMPI) && !defined(TCX_SLEEP)
#define TCX_SLEEP(seconds) smpi_usleep((useconds_t)((seconds) * 1e6 + 0.5))
#endif
#ifdef TCX_SLEEP
    /* Simulated time (SMPI with TOPOCOLL_PACE=on; the packet simulator
     * with a core a rank, whose naps would each cost a context switch): one
     * sleep to the deadline, no probing.  SMPI charges each unanswered MPI_Iprobe more
     * simulated time than the last (its back-off), so a probing loop
     * overshot more and more: faraj-yuan on 3 x 4 machines at 128 KB over
     * SimGrid's ns-3 model took 851 ms, then 1,274 ms on the next call,
     * where it takes 434 this way; a simulator moves the messages without
     * the process's help.  The packet simulator with the host's cores
     * (TCX_IDLE_WAKES) is the exception: a rank reads its sockets and
     * answers rendezvous only while it runs, so its napping rank wakes as
     * the testbed's does, in the loop below, each wake driving progress. */
#ifndef TCX_IDLE_WAKES
#define TCX_IDLE_WAKES() 0
#endif
    if (!st->nap || !TCX_IDLE_WAKES()) {
        double now = TCX(Wtime)();
        if (now < until) TCX_SLEEP(until - now);
        return rc;
    }
#define TCX_NAP(seconds) TCX_SLEEP(seconds)
#else
#define TCX_NAP(seconds) st->nap(seconds)
#endif
    const double longest = st->nap_max > TCX_IDLE_NAP ? st->nap_max : TCX_IDLE_NAP;
    for (double now = TCX(Wtime)(); rc == MPI_SUCCESS && now < until; now = TCX(Wtime)()) {
        if (st->nap) TCX_NAP(until - now < longest ? until - now : longest);
        rc = TCX(Iprobe)(MPI_ANY_SOURCE, MPI_ANY_TAG, st->comm, &flag, MPI_STATUS_IGNORE);
    }
#undef TCX_NAP
    return rc;
}
