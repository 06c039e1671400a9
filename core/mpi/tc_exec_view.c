/* The executor, part one: a rank's part of a schedule, compiled once a
 * communicator (its sends and receives in step order, the syncs it waits
 * for and signals, and for forwarding schedules a slot for every block it
 * relays). */
#include "tc_exec.h"

#include <stdlib.h>
#include <string.h>

TCX_API void tcx_view_free(tcx_view *v)
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

TCX_API int tcx_block_at(const tcx_schedule *s, long long op, int k, int *o, int *d)
{
    int first = s->ops[op].first_block;
    if (first < 0) { *o = s->ops[op].src; *d = s->ops[op].dst; }
    else { *o = s->blocks[2 * (first + k)]; *d = s->blocks[2 * (first + k) + 1]; }
    return first < 0 ? 1 : s->ops[op].nblocks;
}

/* Compile rank me's part.  Returns 0, or -1 when memory runs out. */
TCX_API int tcx_view_build(tcx_view *v, const tcx_schedule *s, int me)
{
    long long nops = s->nsteps ? s->step_begin[s->nsteps] : 0;
    long long *relay = NULL;
    int nrelay = 0, i, unused_o, unused_d;
    memset(v, 0, sizeof *v);
    v->me = me;
    for (long long op = 0; op < nops; op++) {
        if (s->ops[op].first_block >= 0) v->forwarding = 1;
        if (s->ops[op].parts > 1) v->segmented = 1;
        if (s->ops[op].src == me) v->nsend++;
        if (s->ops[op].dst == me) v->nrecv++;
    }
    for (long long k = 0; k < s->nsyncs; k++)
        if (s->ops[s->syncs[2 * k + 1]].src == me) v->nsync_in++;
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
            if (s->ops[op].src == me) { v->send_step[ns] = st; v->send_op[ns++] = op; }
            if (s->ops[op].dst == me) { v->recv_step[nr] = st; v->recv_op[nr++] = op; }
        }
    /* syncs: waits (as receives, posted in the senders' order) and notifies */
    int nnotify = 0;
    for (long long k = 0; k < s->nsyncs; k++) {
        long long a = s->syncs[2 * k], b = s->syncs[2 * k + 1];
        if (s->ops[b].src == me) {
            long long *f = (long long *)bsearch(&b, v->send_op, (size_t)v->nsend, sizeof b, tcx_cmp_ll);
            v->wait_begin[(f - v->send_op) + 2]++;
        }
        if (s->ops[a].src == me) {
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
        if (s->ops[b].src == me) {
            long long *f = (long long *)bsearch(&b, v->send_op, (size_t)v->nsend, sizeof b, tcx_cmp_ll);
            v->sync_in_src[nin] = s->ops[a].src;
            v->wait_idx[v->wait_begin[(f - v->send_op) + 1]++] = nin++;
        }
        if (s->ops[a].src == me) {
            long long *f = (long long *)bsearch(&a, v->send_op, (size_t)v->nsend, sizeof a, tcx_cmp_ll);
            v->notify_dst[v->notify_begin[(f - v->send_op) + 1]++] = s->ops[b].src;
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

TCX_API int tcx_state_init_on(tcx_state *st, const tcx_schedule *s, MPI_Comm private_dup)
{
    int me, size;
    memset(st, 0, sizeof *st);
    TCX(Comm_rank)(private_dup, &me);
    TCX(Comm_size)(private_dup, &size);
    st->comm = private_dup;
    st->borrowed = 1;
    if (size != s->nranks) return MPI_ERR_COMM;
    st->sched = s;
    return tcx_view_build(&st->view, s, me) != 0 ? MPI_ERR_NO_MEM : MPI_SUCCESS;
}

TCX_API int tcx_state_init(tcx_state *st, const tcx_schedule *s, MPI_Comm comm)
{
    int size, rc;
    MPI_Comm dup;
    memset(st, 0, sizeof *st);
    st->comm = MPI_COMM_NULL;
    TCX(Comm_size)(comm, &size);
    if (size != s->nranks) return MPI_ERR_COMM;
    if ((rc = TCX(Comm_dup)(comm, &dup)) != MPI_SUCCESS) return rc;
    rc = tcx_state_init_on(st, s, dup);
    st->borrowed = 0;   /* the duplicate is the state's own */
    if (rc != MPI_SUCCESS) tcx_state_free(st);
    return rc;
}

TCX_API void tcx_state_free(tcx_state *st)
{
    if (st->comm != MPI_COMM_NULL && !st->borrowed) TCX(Comm_free)(&st->comm);
    tcx_view_free(&st->view);
}
