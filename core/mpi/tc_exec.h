/*
 * tc_exec.h -- the one all-to-all executor of topocoll: its structures and
 * functions.  The code is in tc_exec_view.c (a rank's part of a schedule),
 * tc_exec.c (running it) and tc_exec_pace.c (pacing over TCP, a hook the run
 * calls where link rates are known).
 *
 * Runs any schedule of the IR (see topocoll.h) over MPI point-to-point.  It
 * depends on MPI and the C library only: libtopocoll_pmpi compiles the three
 * files (pmpi_exec.c, with TCX(fn) = PMPI_fn), and `topocoll generate` copies
 * this header and them into each generated routine (TCX(fn) = MPI_fn, every
 * function static), so both run the same code.
 *
 * How a rank runs its part:
 *  - all work happens on a private duplicate of the communicator, so no tag
 *    of the application can match ours;
 *  - direct schedules use the caller's datatypes in place: every receive is
 *    posted first, then the rank's steps run in order: for each of its sends
 *    in the step it waits for the syncs that guard it, starts it, completes
 *    all sends of the step, then signals the syncs that wait for them (the
 *    execution contract of topocoll.h).  A send completes once its data is
 *    in the sender's socket buffer, before it has all arrived, so the next
 *    message on the link starts while the last one drains (signalling from
 *    the receiver instead measured 12 % slower: docs/pacing.md);
 *  - forwarding schedules (blocks combined and relayed, e.g. Bruck) work on
 *    packed bytes: a step's receives and sends are posted, completed, and the
 *    received blocks stored where they go next;
 *  - segmented schedules (pieces of blocks, e.g. sync-shuffle) run as direct
 *    ones on bytes: from the caller's buffers when the datatype is
 *    contiguous, else packed first and unpacked after;
 *  - MPI_IN_PLACE copies the receive buffer first and sends from the copy;
 *    a zero-size block does nothing; the self block is a local send/receive.
 */
#ifndef TC_EXEC_H
#define TC_EXEC_H

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#ifndef TCX
#define TCX(fn) MPI_##fn
#endif

/* The executor's functions: extern in the PMPI library, static in a
 * generated routine (which defines TCX_API static first). */
#ifndef TCX_API
#define TCX_API
#endif

enum { TCX_TAG_DATA = 1, TCX_TAG_SYNC = 2, TCX_TAG_SELF = 3 };
enum { TCX_OP_INTS = 6 };

/* An operation of the IR (tc_op's layout): src sends to dst its block
 * (first_block -1), or nblocks blocks from blocks[2 * first_block], or piece
 * `part` of `parts` of its block. */
typedef struct tcx_op { int src, dst, first_block, nblocks, part, parts; } tcx_op;

/* A schedule as flat tables: the IR's arrays, or static tables in a
 * generated routine. */
typedef struct tcx_schedule {
    const char *algorithm;
    int nranks, nsteps;
    const long long *step_begin; /* nsteps + 1: ops of step s are [step_begin[s], step_begin[s+1]) */
    const tcx_op *ops;
    const int *blocks;           /* 2 a block: origin, dest */
    long long nsyncs;
    const long long *syncs;      /* 2 a sync: after op, before op */
} tcx_schedule;

/* One rank's part of a schedule, compiled once per communicator. */
typedef struct tcx_view {
    int me, forwarding, segmented;
    int nsend, nrecv, nsync_in, nslots;
    long long *send_op, *recv_op;   /* op indices, in step order */
    int *send_step, *recv_step;
    int *sync_in_src;               /* posting order of sync receives */
    int *wait_begin, *wait_idx;     /* per send: sync receives to wait for */
    int *notify_begin, *notify_dst; /* per send: ranks to signal after its step */
    long long *send_loc, *recv_loc; /* forwarding: per block entry, its slot */
    int *send_loc_begin, *recv_loc_begin;
} tcx_view;

/* An optional observer of a run (NULL: none), for finding where time goes:
 * called with the op index, the rank it sends to and MPI_Wtime() when a
 * send's syncs have all arrived and it starts (TCX_EV_START), when its
 * step's sends have completed (TCX_EV_DONE), and when the syncs that wait
 * for it are sent (TCX_EV_NOTIFY; ops that signal nobody have none). */
enum { TCX_EV_START = 0, TCX_EV_DONE = 1, TCX_EV_NOTIFY = 2 };
typedef void (*tcx_trace_fn)(void *ctx, int event, long long op, int peer, double when);
/* An event's name in the traces (TOPOCOLL_TRACE, topocoll-packet --trace) */
static inline const char *tcx_event_name(int event)
{
    return event == TCX_EV_START ? "start" : event == TCX_EV_DONE ? "done" : "notify";
}

#define TCX_IDLE_NAP 0.001            /* seconds: the longest nap of a paced rank's idle wait */

/* Pacing over TCP (tc_exec_pace.c; rate_to NULL: off).  A contention-free
 * schedule hands a link from one message to the next with a sync.  Faraj &
 * Yuan send it when the send completes, but over TCP a send completes once
 * its bytes are in the socket buffer, long before they cross the link, or,
 * past the MPI's eager limit, only after a rendezvous reply from a receiver
 * that may not be running.  Paced, a message goes out in pieces under the
 * eager limit, and the rank keeps a clock of its own link: each step's bytes
 * take 8*bytes/rate_to[dst] after the later of the step's start and the last
 * step's end; a step's syncs leave, and its next step starts, at that end
 * less `lead` (never before the sends complete), the lead covering the
 * sync's own way to the next sender (docs/pacing.md), at most `lead_share`
 * of the step's link time where that is set: a longer lead only starts the
 * next message early, and on a link handed over in every phase the
 * overlaps add up. */
typedef struct tcx_pacing {
    const double *rate_to;          /* per peer: path bandwidth usable by data, bit/s (0: unknown, no pacing) */
    double lead;                    /* seconds */
    double lead_share;              /* > 0: a step's lead is at most this share of the step's link time
                                     * (TC_DEFAULT_PACE_LEAD_SHARE) */
    int piece_bytes;                /* paced messages travel in pieces of at most this many bytes */
    long long paced_steps, split_messages;   /* counters, for the caller's statistics */
} tcx_pacing;

typedef struct tcx_state {
    MPI_Comm comm;                  /* private duplicate */
    int borrowed;                   /* comm is the caller's (tcx_state_init_on): not freed here */
    const tcx_schedule *sched;
    tcx_view view;
    tcx_trace_fn trace;
    void *trace_ctx;
    tcx_pacing pace;                /* zero: not paced (tc_exec_pace.c) */
    /* Idle waiting (optional; NULL: the MPI's own waits).  With more ranks
     * than cores, a rank spinning in MPI_Wait keeps the one that has work
     * (or a sync to pass on) off the core for a time slice; napping between
     * tests lets it run, and wakes the napper ahead of the spinners. */
    void (*nap)(double seconds);
    double nap_max;                 /* longest nap, seconds; naps double from 1/32 of it */
} tcx_state;

/* The send or receive side of a run: where block d starts and how it is
 * typed: base + stride * d, count elements each; or, with displ (MPI_Alltoallv
 * on bytes), base + displ[d], counts[d] elements. */
typedef struct tcx_side {
    char *base;
    MPI_Aint stride;
    int count;
    MPI_Datatype type;
    const MPI_Aint *displ;
    const int *counts;
} tcx_side;

/* Set up rank me's part of schedule s on comm (a private duplicate is made)
 * and free it; MPI_SUCCESS or an MPI error class. */
TCX_API int tcx_state_init(tcx_state *st, const tcx_schedule *s, MPI_Comm comm);
/* The same on a private duplicate the caller made and keeps (several
 * schedules of one communicator, one duplicate: no collective call here). */
TCX_API int tcx_state_init_on(tcx_state *st, const tcx_schedule *s, MPI_Comm private_dup);
TCX_API void tcx_state_free(tcx_state *st);
/* MPI_Alltoall semantics over the state's schedule. */
TCX_API int tcx_alltoall(tcx_state *st, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf,
                         int rcount, MPI_Datatype rtype);
/* MPI_Alltoallv semantics over a direct schedule (any datatypes and
 * displacements; MPI_IN_PLACE): on bytes, from and into the caller's
 * buffers where the datatypes are contiguous, else packed first and
 * unpacked after.  Every block's bytes (count x type size) must fit an int;
 * the caller checks that counts match between the ranks. */
TCX_API int tcx_alltoallv(tcx_state *st, const void *sendbuf, const int *scounts, const int *sdispls,
                          MPI_Datatype stype, void *recvbuf, const int *rcounts, const int *rdispls, MPI_Datatype rtype);

/* Between the files (tc_exec_view.c, tc_exec.c, tc_exec_pace.c). */
TCX_API int tcx_view_build(tcx_view *v, const tcx_schedule *s, int me);
TCX_API void tcx_view_free(tcx_view *v);
TCX_API int tcx_block_at(const tcx_schedule *s, long long op, int k, int *o, int *d);
TCX_API int tcx_waitall(const tcx_state *st, int n, MPI_Request *req);
TCX_API char *tcx_piece(const tcx_schedule *s, long long op, const tcx_side *side, int peer, int *count);
TCX_API int tcx_paced(const tcx_state *st, int peer);
TCX_API int tcx_split(const tcx_state *st, int peer, int n, MPI_Datatype t, int *per);
TCX_API long long tcx_count_split(const tcx_state *st, const long long *op, int nop, const tcx_side *side, int peer);
TCX_API double tcx_step_time(const tcx_state *st, int j, int k, const tcx_side *snd);
TCX_API int tcx_idle_until(const tcx_state *st, double until);

#endif
