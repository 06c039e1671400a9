/*
 * tc_exec.h -- the one all-to-all executor of topocoll.
 *
 * Runs any schedule of the IR (see topocoll.h) over MPI point-to-point.  It
 * depends on MPI and the C library only: libtopocoll_pmpi compiles it (with
 * TCX(fn) = PMPI_fn), and `topocoll generate` copies this file verbatim into
 * each generated routine (with TCX(fn) = MPI_fn), so both run the same code.
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
 *    message on the link starts while the last one drains.  Tried on the
 *    emulated cluster (12 machines, 128 KB, 2026-11-22): signalling from the
 *    receiver once the data has arrived took 507-525 ms against 451-457 ms
 *    for this (same load, alternated); 32 KB segments, sent eagerly with the
 *    signal one or two segments before the end, 517-571 ms against 491;
 *    both left out;
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

/* GCC 11+ takes MPICH's MPI_STATUSES_IGNORE sentinel, (MPI_Status *)1, for a
 * too-small array (-Wstringop-overflow); the calls are correct, and this file
 * must build under -Wall -Wextra -Werror with either MPI. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#define TCX_POP_DIAGNOSTIC
#endif

enum { TCX_TAG_DATA = 1, TCX_TAG_SYNC = 2, TCX_TAG_SELF = 3 };
enum { TCX_OP_INTS = 6 };

/* A schedule as flat tables: the IR's arrays, or static tables in a
 * generated routine. */
typedef struct tcx_schedule {
    const char *algorithm;
    int nranks, nsteps;
    const long long *step_begin; /* nsteps + 1: ops of step s are [step_begin[s], step_begin[s+1]) */
    const int *ops;              /* TCX_OP_INTS an op: src, dst, first_block (-1: the direct
                                    block), nblocks, part, parts (piece part of parts of the block) */
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
 * called with the op index and MPI_Wtime() when a send's syncs have all
 * arrived and it starts (TCX_EV_START), when its step's sends have
 * completed (TCX_EV_DONE), and when the syncs that wait for it are sent
 * (TCX_EV_NOTIFY; ops that signal nobody have none). */
enum { TCX_EV_START = 0, TCX_EV_DONE = 1, TCX_EV_NOTIFY = 2 };
typedef void (*tcx_trace_fn)(void *ctx, int event, long long op, double when);

typedef struct tcx_state {
    MPI_Comm comm;                  /* private duplicate */
    const tcx_schedule *sched;
    tcx_view view;
    tcx_trace_fn trace;
    void *trace_ctx;
    /* Pacing (optional; NULL rate_to: off).  A contention-free schedule hands
     * a link from one message to the next with a sync.  Faraj & Yuan send it
     * when the send completes, but over TCP a send completes once its bytes are
     * in the socket buffer, long before they cross the link (the next message
     * then shares the link and the switch port drops), or, past the MPI's
     * eager limit, only after a rendezvous reply from a receiver that may not
     * be running.  Paced, a message goes out in pieces under the eager limit,
     * and the rank keeps a clock of its own link: each step's bytes take
     * 8*bytes/rate_to[dst] after the later of the step's start and the last
     * step's end.  A step's syncs leave, and its next step starts, at that
     * end less pace_lead (never before the sends complete), pace_lead
     * covering the sync's own way to the next sender.  (A step whose sends
     * signal nobody used to start the next at once: on the emulated cluster
     * a rank's run of four such steps then shared its link, all four
     * finishing with the last, 44 ms instead of 11, 22, 33 and 44.) */
    const double *rate_to;          /* per peer: path bandwidth usable by data, bit/s (0: unknown, no pacing) */
    double pace_lead;               /* seconds */
    int piece_bytes;                /* paced messages travel in pieces of at most this many bytes */
    long long paced_steps, split_messages;   /* counters, for the caller's statistics */
    /* Idle waiting (optional; NULL: the MPI's own waits).  With more ranks
     * than cores, a rank spinning in MPI_Wait keeps the one that has work
     * (or a sync to pass on) off the core for a time slice; napping between
     * tests lets it run, and wakes the napper ahead of the spinners. */
    void (*nap)(double seconds);
    double nap_max;                 /* longest nap, seconds; naps double from 1/32 of it */
} tcx_state;

static int tcx_op(const tcx_schedule *s, long long op, int field) { return s->ops[TCX_OP_INTS * op + field]; }

static void tcx_view_free(tcx_view *v)
{
    free(v->send_op); free(v->recv_op); free(v->send_step); free(v->recv_step);
    free(v->sync_in_src); free(v->wait_begin); free(v->wait_idx);
    free(v->notify_begin); free(v->notify_dst);
    free(v->send_loc); free(v->recv_loc); free(v->send_loc_begin); free(v->recv_loc_begin);
    memset(v, 0, sizeof *v);
}

static int tcx_cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Slot of block (o, d) in the work area of a forwarding run:
 * [0, p) own blocks (o == me) by d, [p, 2p) final blocks (d == me) by o,
 * then one slot for each block the rank relays. */
static long long tcx_slot(const tcx_view *v, int p, const long long *relay, int nrelay, int o, int d)
{
    if (o == v->me) return d;
    if (d == v->me) return p + o;
    long long key = (long long)o * p + d;
    const long long *f = (const long long *)bsearch(&key, relay, (size_t)nrelay, sizeof key, tcx_cmp_ll);
    return f ? 2LL * p + (f - relay) : -1;
}

static int tcx_block_at(const tcx_schedule *s, long long op, int k, int *o, int *d)
{
    int first = tcx_op(s, op, 2);
    if (first < 0) { *o = tcx_op(s, op, 0); *d = tcx_op(s, op, 1); }
    else { *o = s->blocks[2 * (first + k)]; *d = s->blocks[2 * (first + k) + 1]; }
    return first < 0 ? 1 : tcx_op(s, op, 3);
}

/* Compile rank me's part.  Returns 0, or -1 when memory runs out. */
static int tcx_view_build(tcx_view *v, const tcx_schedule *s, int me)
{
    long long nops = s->nsteps ? s->step_begin[s->nsteps] : 0;
    long long *relay = NULL;
    int nrelay = 0, i, unused_o, unused_d;
    memset(v, 0, sizeof *v);
    v->me = me;
    for (long long op = 0; op < nops; op++) {
        if (tcx_op(s, op, 2) >= 0) v->forwarding = 1;
        if (tcx_op(s, op, 5) > 1) v->segmented = 1;
        if (tcx_op(s, op, 0) == me) v->nsend++;
        if (tcx_op(s, op, 1) == me) v->nrecv++;
    }
    for (long long k = 0; k < s->nsyncs; k++)
        if (tcx_op(s, s->syncs[2 * k + 1], 0) == me) v->nsync_in++;
    v->send_op = (long long *)malloc(sizeof(long long) * (size_t)(v->nsend + 1));
    v->recv_op = (long long *)malloc(sizeof(long long) * (size_t)(v->nrecv + 1));
    v->send_step = (int *)malloc(sizeof(int) * (size_t)(v->nsend + 1));
    v->recv_step = (int *)malloc(sizeof(int) * (size_t)(v->nrecv + 1));
    v->sync_in_src = (int *)malloc(sizeof(int) * (size_t)(v->nsync_in + 1));
    v->wait_begin = (int *)calloc((size_t)v->nsend + 2, sizeof(int));
    v->wait_idx = (int *)malloc(sizeof(int) * (size_t)(v->nsync_in + 1));
    v->notify_begin = (int *)calloc((size_t)v->nsend + 2, sizeof(int));
    if (!v->send_op || !v->recv_op || !v->send_step || !v->recv_step || !v->sync_in_src || !v->wait_begin ||
        !v->wait_idx || !v->notify_begin)
        goto fail;
    int ns = 0, nr = 0;
    for (int st = 0; st < s->nsteps; st++)
        for (long long op = s->step_begin[st]; op < s->step_begin[st + 1]; op++) {
            if (tcx_op(s, op, 0) == me) { v->send_step[ns] = st; v->send_op[ns++] = op; }
            if (tcx_op(s, op, 1) == me) { v->recv_step[nr] = st; v->recv_op[nr++] = op; }
        }
    /* syncs: waits (as receives, posted in the senders' order) and notifies */
    int nnotify = 0;
    for (long long k = 0; k < s->nsyncs; k++) {
        long long a = s->syncs[2 * k], b = s->syncs[2 * k + 1];
        if (tcx_op(s, b, 0) == me) {
            long long *f = (long long *)bsearch(&b, v->send_op, (size_t)v->nsend, sizeof b, tcx_cmp_ll);
            v->wait_begin[(f - v->send_op) + 2]++;
        }
        if (tcx_op(s, a, 0) == me) {
            long long *f = (long long *)bsearch(&a, v->send_op, (size_t)v->nsend, sizeof a, tcx_cmp_ll);
            v->notify_begin[(f - v->send_op) + 2]++;
            nnotify++;
        }
    }
    v->notify_dst = (int *)malloc(sizeof(int) * (size_t)(nnotify + 1));
    if (!v->notify_dst) goto fail;
    for (i = 2; i <= v->nsend + 1; i++) {
        v->wait_begin[i] += v->wait_begin[i - 1];
        v->notify_begin[i] += v->notify_begin[i - 1];
    }
    int nin = 0;
    for (long long k = 0; k < s->nsyncs; k++) {
        long long a = s->syncs[2 * k], b = s->syncs[2 * k + 1];
        if (tcx_op(s, b, 0) == me) {
            long long *f = (long long *)bsearch(&b, v->send_op, (size_t)v->nsend, sizeof b, tcx_cmp_ll);
            v->sync_in_src[nin] = tcx_op(s, a, 0);
            v->wait_idx[v->wait_begin[(f - v->send_op) + 1]++] = nin++;
        }
        if (tcx_op(s, a, 0) == me) {
            long long *f = (long long *)bsearch(&a, v->send_op, (size_t)v->nsend, sizeof a, tcx_cmp_ll);
            v->notify_dst[v->notify_begin[(f - v->send_op) + 1]++] = tcx_op(s, b, 0);
        }
    }
    if (!v->forwarding) return 0;

    /* forwarding: the blocks this rank relays get slots */
    int p = s->nranks;
    for (int pass = 0; pass < 2; pass++) {
        for (int side = 0; side < 2; side++) {
            int n = side ? v->nrecv : v->nsend;
            long long *ops = side ? v->recv_op : v->send_op;
            for (int j = 0; j < n; j++) {
                int cnt = tcx_block_at(s, ops[j], 0, &unused_o, &unused_d);
                for (int k = 0; k < cnt; k++) {
                    int o, d;
                    tcx_block_at(s, ops[j], k, &o, &d);
                    if (o == me || d == me) continue;
                    if (pass == 1) relay[nrelay] = (long long)o * p + d;
                    nrelay++;
                }
            }
        }
        if (pass == 0) {
            relay = (long long *)malloc(sizeof(long long) * (size_t)(nrelay + 1));
            if (!relay) goto fail;
            nrelay = 0;
        }
    }
    qsort(relay, (size_t)nrelay, sizeof(long long), tcx_cmp_ll);
    int w = 0;
    for (i = 0; i < nrelay; i++)
        if (w == 0 || relay[w - 1] != relay[i]) relay[w++] = relay[i];
    nrelay = v->nslots = w;
    for (int side = 0; side < 2; side++) {
        int n = side ? v->nrecv : v->nsend, total = 0;
        long long *ops = side ? v->recv_op : v->send_op;
        int *begin = (int *)malloc(sizeof(int) * (size_t)(n + 1));
        for (int j = 0; j < n; j++) total += tcx_block_at(s, ops[j], 0, &unused_o, &unused_d);
        long long *loc = (long long *)malloc(sizeof(long long) * (size_t)(total + 1));
        if (side) { v->recv_loc_begin = begin; v->recv_loc = loc; }
        else { v->send_loc_begin = begin; v->send_loc = loc; }
        if (!begin || !loc) goto fail;
        int at = 0;
        for (int j = 0; j < n; j++) {
            begin[j] = at;
            int cnt = tcx_block_at(s, ops[j], 0, &unused_o, &unused_d);
            for (int k = 0; k < cnt; k++) {
                int o, d;
                tcx_block_at(s, ops[j], k, &o, &d);
                loc[at++] = tcx_slot(v, p, relay, nrelay, o, d);
            }
        }
        begin[n] = at;
    }
    free(relay);
    return 0;
fail:
    free(relay);
    tcx_view_free(v);
    return -1;
}

static int tcx_state_init(tcx_state *st, const tcx_schedule *s, MPI_Comm comm)
{
    int me, size, rc;
    memset(st, 0, sizeof *st);
    st->comm = MPI_COMM_NULL;
    TCX(Comm_rank)(comm, &me);
    TCX(Comm_size)(comm, &size);
    if (size != s->nranks) return MPI_ERR_COMM;
    if ((rc = TCX(Comm_dup)(comm, &st->comm)) != MPI_SUCCESS) return rc;
    st->sched = s;
    if (tcx_view_build(&st->view, s, me) != 0) {
        TCX(Comm_free)(&st->comm);
        return MPI_ERR_NO_MEM;
    }
    return MPI_SUCCESS;
}

static void tcx_state_free(tcx_state *st)
{
    if (st->comm != MPI_COMM_NULL) TCX(Comm_free)(&st->comm);
    tcx_view_free(&st->view);
}

/* MPI_Waitall, napping between tests when the state says so. */
static int tcx_waitall(const tcx_state *st, int n, MPI_Request *req)
{
    if (!st->nap) return TCX(Waitall)(n, req, MPI_STATUSES_IGNORE);
    double nap = st->nap_max / 32;
    for (;;) {
        int flag, rc = TCX(Testall)(n, req, &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || flag) return rc;
        st->nap(nap);
        nap = nap * 2 < st->nap_max ? nap * 2 : st->nap_max;
    }
}

/* Until MPI_Wtime() reaches until, driving the MPI's progress. */
static int tcx_idle_until(const tcx_state *st, double until)
{
    int rc = MPI_SUCCESS, flag;
    for (double now = TCX(Wtime)(); rc == MPI_SUCCESS && now < until; now = TCX(Wtime)()) {
        if (st->nap) st->nap(until - now < st->nap_max ? until - now : st->nap_max);
        rc = TCX(Iprobe)(MPI_ANY_SOURCE, MPI_ANY_TAG, st->comm, &flag, MPI_STATUS_IGNORE);
    }
    return rc;
}

/* Wait for the syncs guarding send j, then start it. */
static int tcx_wait_syncs(const tcx_state *st, int j, MPI_Request *sync_req)
{
    const tcx_view *v = &st->view;
    for (int k = v->wait_begin[j]; k < v->wait_begin[j + 1]; k++) {
        int rc = tcx_waitall(st, 1, &sync_req[v->wait_idx[k]]);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

static int tcx_notify(const tcx_view *v, int from, int to, MPI_Comm comm, MPI_Request *reqs, int *nreq)
{
    static char none;
    for (int j = from; j < to; j++)
        for (int k = v->notify_begin[j]; k < v->notify_begin[j + 1]; k++) {
            int rc = TCX(Isend)(&none, 0, MPI_BYTE, v->notify_dst[k], TCX_TAG_SYNC, comm, &reqs[(*nreq)++]);
            if (rc != MPI_SUCCESS) return rc;
        }
    return MPI_SUCCESS;
}

/* The send side of a run: where block d of this rank starts and how it is typed. */
typedef struct tcx_side { char *base; MPI_Aint stride; int count; MPI_Datatype type; } tcx_side;

/* Where op's data lies on a side: the whole typed block, or for a piece of a
 * segmented schedule (sides then hold bytes) bytes [part*B/parts, (part+1)*B/parts). */
static char *tcx_piece(const tcx_schedule *s, long long op, const tcx_side *side, int peer, int *count)
{
    char *at = side->base + side->stride * peer;
    int part = tcx_op(s, op, 4), parts = tcx_op(s, op, 5);
    *count = side->count;
    if (parts > 1) {
        long long lo = (long long)side->count * part / parts, hi = (long long)side->count * (part + 1) / parts;
        at += lo;
        *count = (int)(hi - lo);
    }
    return at;
}

static int tcx_paced(const tcx_state *st, int peer) { return st->rate_to && st->rate_to[peer] > 0; }

/* How many MPI messages carry a message of n elements of type t to or from
 * peer, and the elements of each but the last: one, unless paced and on bytes
 * (a paced run with blocks over a piece runs on bytes on every rank, so both
 * ends cut a message alike), then pieces of piece_bytes. */
static int tcx_split(const tcx_state *st, int peer, int n, MPI_Datatype t, int *per)
{
    *per = n;
    if (!tcx_paced(st, peer) || t != MPI_BYTE || st->piece_bytes <= 0 || n <= st->piece_bytes) return 1;
    *per = st->piece_bytes;
    return (n + *per - 1) / *per;
}

/* The MPI messages of a side's ops (peer: the op field naming the other end). */
static long long tcx_count_split(const tcx_state *st, const long long *op, int nop, const tcx_side *side, int peer)
{
    long long total = 0;
    for (int j = 0; j < nop; j++) {
        int n, per, other = tcx_op(st->sched, op[j], peer);
        tcx_piece(st->sched, op[j], side, other, &n);
        total += tcx_split(st, other, n, side->type, &per);
    }
    return total;
}

/* Post op's send or receive, split as tcx_split says (pieces are bytes). */
static int tcx_post(int send, char *at, int n, MPI_Datatype t, int peer, tcx_state *st, MPI_Request *req,
                    int *nreq)
{
    int per, k = tcx_split(st, peer, n, t, &per), rc = MPI_SUCCESS;
    if (k > 1 && send) st->split_messages++;
    for (int i = 0; i < k && rc == MPI_SUCCESS; i++) {
        int c = i + 1 < k ? per : n - per * i;
        char *p = at + (MPI_Aint)per * i;   /* i > 0 only on bytes */
        rc = send ? TCX(Isend)(p, c, t, peer, TCX_TAG_DATA, st->comm, &req[(*nreq)++])
                  : TCX(Irecv)(p, c, t, peer, TCX_TAG_DATA, st->comm, &req[(*nreq)++]);
    }
    return rc;
}

/* Seconds the paced sends [j, k) of a step take on the rank's link. */
static double tcx_step_time(const tcx_state *st, int j, int k, const tcx_side *snd)
{
    double t = 0;
    int size;
    TCX(Type_size)(snd->type, &size);
    for (; j < k; j++) {
        int dst = tcx_op(st->sched, st->view.send_op[j], 1), n;
        if (!tcx_paced(st, dst)) continue;
        tcx_piece(st->sched, st->view.send_op[j], snd, dst, &n);
        t += 8.0 * (double)n * size / st->rate_to[dst];
    }
    return t;
}

static int tcx_run_direct(tcx_state *st, tcx_side snd, tcx_side rcv)
{
    const tcx_schedule *s = st->sched;
    const tcx_view *v = &st->view;
    static char none;
    int rc = MPI_SUCCESS, nnotify = v->notify_begin[v->nsend], nn = 0, nr = 0;
    double link_free = 0;   /* paced: when the rank's link has carried what it was given */
    long long rpieces = tcx_count_split(st, v->recv_op, v->nrecv, &rcv, 0);
    long long spieces = tcx_count_split(st, v->send_op, v->nsend, &snd, 1);
    MPI_Request *rreq = (MPI_Request *)malloc(sizeof(MPI_Request) * (size_t)(rpieces + 1));
    MPI_Request *yreq = (MPI_Request *)malloc(sizeof(MPI_Request) * (size_t)(v->nsync_in + 1));
    MPI_Request *nreq = (MPI_Request *)malloc(sizeof(MPI_Request) * (size_t)(nnotify + 1));
    MPI_Request *sreq = (MPI_Request *)malloc(sizeof(MPI_Request) * (size_t)(spieces + 1));
    if (!rreq || !yreq || !nreq || !sreq) { rc = MPI_ERR_NO_MEM; goto out; }
    for (int j = 0; j < v->nrecv && rc == MPI_SUCCESS; j++) {
        int src = tcx_op(s, v->recv_op[j], 0), n;
        char *at = tcx_piece(s, v->recv_op[j], &rcv, src, &n);
        rc = tcx_post(0, at, n, rcv.type, src, st, rreq, &nr);
    }
    for (int j = 0; j < v->nsync_in && rc == MPI_SUCCESS; j++)
        rc = TCX(Irecv)(&none, 0, MPI_BYTE, v->sync_in_src[j], TCX_TAG_SYNC, st->comm, &yreq[j]);
    for (int j = 0; j < v->nsend && rc == MPI_SUCCESS;) {
        int step = v->send_step[j], e = j, ns = 0;
        double t_step = 0;
        while (e < v->nsend && v->send_step[e] == step) e++;
        for (int k = j; k < e && rc == MPI_SUCCESS; k++) {
            int dst = tcx_op(s, v->send_op[k], 1), n;
            char *at = tcx_piece(s, v->send_op[k], &snd, dst, &n);
            rc = tcx_wait_syncs(st, k, yreq);
            if (k == j) t_step = TCX(Wtime)();
            if (st->trace) st->trace(st->trace_ctx, TCX_EV_START, v->send_op[k], TCX(Wtime)());
            if (rc == MPI_SUCCESS) rc = tcx_post(1, at, n, snd.type, dst, st, sreq, &ns);
        }
        if (rc == MPI_SUCCESS) rc = tcx_waitall(st, ns, sreq);
        if (st->trace)
            for (int k = j; k < e; k++) st->trace(st->trace_ctx, TCX_EV_DONE, v->send_op[k], TCX(Wtime)());
        /* paced: the rank's link carries its steps' bytes one after another;
         * the step's syncs and the next step wait until they have (less the
         * lead), so that a run of steps without syncs does not share the link
         * (each message would finish with the last) */
        double bytes_time = tcx_step_time(st, j, e, &snd);
        int notifies = v->notify_begin[e] > v->notify_begin[j];
        if (bytes_time > 0) {
            link_free = (link_free > t_step ? link_free : t_step) + bytes_time;
            st->paced_steps += notifies;
            if (rc == MPI_SUCCESS) rc = tcx_idle_until(st, link_free - st->pace_lead);
        }
        if (st->trace && notifies)
            for (int k = j; k < e; k++)
                if (v->notify_begin[k + 1] > v->notify_begin[k])
                    st->trace(st->trace_ctx, TCX_EV_NOTIFY, v->send_op[k], TCX(Wtime)());
        if (rc == MPI_SUCCESS) rc = tcx_notify(v, j, e, st->comm, nreq, &nn);
        j = e;
    }
    if (rc == MPI_SUCCESS) rc = tcx_waitall(st, nr, rreq);
    if (rc == MPI_SUCCESS) rc = tcx_waitall(st, nn, nreq);
    if (rc == MPI_SUCCESS) rc = TCX(Waitall)(v->nsync_in, yreq, MPI_STATUSES_IGNORE); /* all were waited; frees none */
out:
    free(rreq); free(yreq); free(nreq); free(sreq);
    return rc;
}

/* Forwarding schedules on packed bytes: work = [own | final | relay slots]. */
static int tcx_run_forwarding(tcx_state *st, char *work, MPI_Aint bsize)
{
    const tcx_schedule *s = st->sched;
    const tcx_view *v = &st->view;
    static char none;
    int rc = MPI_SUCCESS, nn = 0;
    MPI_Request *yreq = (MPI_Request *)malloc(sizeof(MPI_Request) * (size_t)(v->nsync_in + 1));
    MPI_Request *nreq = (MPI_Request *)malloc(sizeof(MPI_Request) * (size_t)(v->notify_begin[v->nsend] + 1));
    MPI_Request *req = (MPI_Request *)malloc(sizeof(MPI_Request) * (size_t)(v->nsend + v->nrecv + 1));
    char **rbuf = (char **)calloc((size_t)v->nrecv + 1, sizeof(char *));
    char **sbuf = (char **)calloc((size_t)v->nsend + 1, sizeof(char *));
    if (!yreq || !nreq || !req || !rbuf || !sbuf) { rc = MPI_ERR_NO_MEM; goto out; }
    for (int j = 0; j < v->nsync_in && rc == MPI_SUCCESS; j++)
        rc = TCX(Irecv)(&none, 0, MPI_BYTE, v->sync_in_src[j], TCX_TAG_SYNC, st->comm, &yreq[j]);
    int js = 0, jr = 0;
    for (int step = 0; step < s->nsteps && rc == MPI_SUCCESS; step++) {
        int es = js, er = jr, nreqs = 0;
        while (es < v->nsend && v->send_step[es] == step) es++;
        while (er < v->nrecv && v->recv_step[er] == step) er++;
        if (es == js && er == jr) continue;
        for (int k = jr; k < er && rc == MPI_SUCCESS; k++) {
            MPI_Aint n = (v->recv_loc_begin[k + 1] - v->recv_loc_begin[k]) * bsize;
            rbuf[k] = (char *)malloc((size_t)n + 1);
            if (!rbuf[k]) { rc = MPI_ERR_NO_MEM; break; }
            rc = TCX(Irecv)(rbuf[k], (int)n, MPI_BYTE, tcx_op(s, v->recv_op[k], 0), TCX_TAG_DATA, st->comm, &req[nreqs++]);
        }
        for (int k = js; k < es && rc == MPI_SUCCESS; k++) {
            int nb = v->send_loc_begin[k + 1] - v->send_loc_begin[k];
            sbuf[k] = (char *)malloc((size_t)(nb * bsize) + 1);
            if (!sbuf[k]) { rc = MPI_ERR_NO_MEM; break; }
            for (int b = 0; b < nb; b++)
                memcpy(sbuf[k] + b * bsize, work + v->send_loc[v->send_loc_begin[k] + b] * bsize, (size_t)bsize);
            rc = tcx_wait_syncs(st, k, yreq);
            if (rc == MPI_SUCCESS)
                rc = TCX(Isend)(sbuf[k], (int)(nb * bsize), MPI_BYTE, tcx_op(s, v->send_op[k], 1), TCX_TAG_DATA,
                                st->comm, &req[nreqs++]);
        }
        if (rc == MPI_SUCCESS) rc = tcx_waitall(st, nreqs, req);
        for (int k = jr; k < er && rc == MPI_SUCCESS; k++) {
            int nb = v->recv_loc_begin[k + 1] - v->recv_loc_begin[k];
            for (int b = 0; b < nb; b++)
                memcpy(work + v->recv_loc[v->recv_loc_begin[k] + b] * bsize, rbuf[k] + b * bsize, (size_t)bsize);
        }
        for (int k = jr; k < er; k++) { free(rbuf[k]); rbuf[k] = NULL; }
        for (int k = js; k < es; k++) { free(sbuf[k]); sbuf[k] = NULL; }
        if (rc == MPI_SUCCESS) rc = tcx_notify(v, js, es, st->comm, nreq, &nn);
        js = es;
        jr = er;
    }
    if (rc == MPI_SUCCESS) rc = tcx_waitall(st, nn, nreq);
out:
    if (rbuf) for (int k = 0; k < v->nrecv; k++) free(rbuf[k]);
    if (sbuf) for (int k = 0; k < v->nsend; k++) free(sbuf[k]);
    free(yreq); free(nreq); free(req); free(rbuf); free(sbuf);
    return rc;
}

/* MPI_Alltoall semantics over the state's schedule. */
static int tcx_alltoall(tcx_state *st, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf,
                        int rcount, MPI_Datatype rtype)
{
    const tcx_schedule *s = st->sched;
    const tcx_view *v = &st->view;
    int p = s->nranks, me = v->me, rc = MPI_SUCCESS, tsize;
    MPI_Aint lb, rext, sext;
    char *packed = NULL, *work = NULL, *copy = NULL;
    TCX(Type_get_extent)(rtype, &lb, &rext);
    TCX(Type_size)(rtype, &tsize);
    const MPI_Aint bsize = (MPI_Aint)tsize * rcount;    /* bytes of one block */
    if (bsize == 0) return MPI_SUCCESS;
    tcx_side rcv = {(char *)recvbuf, rext * rcount, rcount, rtype};
    tcx_side snd;
    int in_place = sendbuf == MPI_IN_PLACE;
    char *rpacked = NULL;
    if (v->segmented || (st->rate_to && bsize > st->piece_bytes)) {
        /* pieces (of a segmented schedule, or of a paced message) are byte
         * ranges: both sides as bytes, packed unless the datatype is
         * contiguous (then the user's buffers are used) */
        MPI_Aint tlb, text;
        TCX(Type_get_true_extent)(rtype, &tlb, &text);
        int rcontig = lb == 0 && tlb == 0 && rext == tsize && text == tsize;
        if (!rcontig) {
            rpacked = (char *)malloc((size_t)(bsize * p));
            if (!rpacked) return MPI_ERR_NO_MEM;
        }
        const char *from = in_place ? (const char *)recvbuf : (const char *)sendbuf;
        MPI_Datatype type = in_place ? rtype : stype;
        int count = in_place ? rcount : scount, ssize;
        MPI_Aint slb, sx, stlb, stx;
        TCX(Type_get_extent)(type, &slb, &sx);
        TCX(Type_get_true_extent)(type, &stlb, &stx);
        TCX(Type_size)(type, &ssize);
        if (in_place || !(slb == 0 && stlb == 0 && sx == ssize && stx == ssize)) {
            packed = (char *)malloc((size_t)(bsize * p));
            if (!packed) { free(rpacked); return MPI_ERR_NO_MEM; }
            for (int d = 0; d < p && rc == MPI_SUCCESS; d++) {
                int pos = 0;
                rc = TCX(Pack)(from + sx * count * d, count, type, packed + bsize * d, (int)bsize, &pos, st->comm);
                if (rc == MPI_SUCCESS && pos != bsize) rc = MPI_ERR_TRUNCATE;
            }
            from = packed;
        }
        snd = (tcx_side){(char *)from, bsize, (int)bsize, MPI_BYTE};
        tcx_side rbytes = {rpacked ? rpacked : (char *)recvbuf, bsize, (int)bsize, MPI_BYTE};
        if (rc == MPI_SUCCESS)
            rc = TCX(Sendrecv)(snd.base + bsize * me, (int)bsize, MPI_BYTE, me, TCX_TAG_SELF, rbytes.base + bsize * me,
                               (int)bsize, MPI_BYTE, me, TCX_TAG_SELF, st->comm, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = tcx_run_direct(st, snd, rbytes);
        for (int o = 0; o < p && rc == MPI_SUCCESS && rpacked; o++) {
            int pos = 0;
            rc = TCX(Unpack)(rpacked + bsize * o, (int)bsize, &pos, rcv.base + rcv.stride * o, rcount, rtype, st->comm);
        }
        free(rpacked);
        goto out;
    }
    if (in_place && !v->forwarding) {
        /* a copy of the receive buffer's whole span, sent with the same
         * datatype: typed on both sides.  (MPICH 4.0.2 truncates a large
         * MPI_PACKED message received into a resized struct type, which is
         * also why its own in-place MPI_Alltoall fails there.) */
        MPI_Aint tlb, text;
        TCX(Type_get_true_extent)(rtype, &tlb, &text);
        MPI_Aint span = rext * ((MPI_Aint)rcount * p - 1) + text;
        copy = (char *)malloc((size_t)span + 1);
        if (!copy) return MPI_ERR_NO_MEM;
        memcpy(copy, (char *)recvbuf + tlb, (size_t)span);
        snd = (tcx_side){copy - tlb, rext * rcount, rcount, rtype};
    } else if (v->forwarding) {
        /* own blocks as packed bytes (from the receive buffer when in place) */
        packed = (char *)malloc((size_t)(bsize * p));
        if (!packed) return MPI_ERR_NO_MEM;
        const char *from = in_place ? (const char *)recvbuf : (const char *)sendbuf;
        MPI_Datatype type = in_place ? rtype : stype;
        int count = in_place ? rcount : scount;
        MPI_Aint ext;
        TCX(Type_get_extent)(type, &lb, &ext);
        for (int d = 0; d < p && rc == MPI_SUCCESS; d++) {
            int pos = 0;
            rc = TCX(Pack)(from + ext * count * d, count, type, packed + bsize * d, (int)bsize, &pos, st->comm);
            if (rc == MPI_SUCCESS && pos != bsize) rc = MPI_ERR_TRUNCATE;
        }
        snd = (tcx_side){packed, bsize, (int)bsize, MPI_PACKED};
    } else {
        TCX(Type_get_extent)(stype, &lb, &sext);
        snd = (tcx_side){(char *)sendbuf, sext * scount, scount, stype};
    }
    if (rc != MPI_SUCCESS) goto out;
    if (!v->forwarding) {
        /* the self block, then the schedule */
        rc = TCX(Sendrecv)(snd.base + snd.stride * me, snd.count, snd.type, me, TCX_TAG_SELF,
                           rcv.base + rcv.stride * me, rcv.count, rcv.type, me, TCX_TAG_SELF, st->comm,
                           MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = tcx_run_direct(st, snd, rcv);
        goto out;
    }
    work = (char *)malloc((size_t)(bsize * (2LL * p + v->nslots)));
    if (!work) { rc = MPI_ERR_NO_MEM; goto out; }
    memcpy(work, packed, (size_t)(bsize * p));
    memcpy(work + bsize * (p + me), packed + bsize * me, (size_t)bsize);
    rc = tcx_run_forwarding(st, work, bsize);
    for (int o = 0; o < p && rc == MPI_SUCCESS; o++) {
        int pos = 0;
        rc = TCX(Unpack)(work + bsize * (p + o), (int)bsize, &pos, rcv.base + rcv.stride * o, rcount, rtype, st->comm);
    }
out:
    free(packed);
    free(work);
    free(copy);
    return rc;
}

#ifdef TCX_POP_DIAGNOSTIC
#pragma GCC diagnostic pop
#undef TCX_POP_DIAGNOSTIC
#endif
#endif
