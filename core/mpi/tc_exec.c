/* The executor, part two: running a rank's part (tc_exec.h says how). */
#include "tc_exec.h"

#include <stdlib.h>
#include <string.h>

/* GCC 11+ takes MPICH's MPI_STATUSES_IGNORE sentinel, (MPI_Status *)1, for a
 * too-small array (-Wstringop-overflow); the calls are correct, and the
 * executor must build under -Wall -Wextra -Werror with either MPI. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#define TCX_POP_DIAGNOSTIC
#endif

/* MPI_Waitall, napping between tests when the state says so. */
TCX_API int tcx_waitall(const tcx_state *st, int n, MPI_Request *req)
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

/* Where op's data lies on a side: the whole typed block, or for a piece of a
 * segmented schedule (sides then hold bytes) bytes [part*B/parts, (part+1)*B/parts). */
TCX_API char *tcx_piece(const tcx_schedule *s, long long op, const tcx_side *side, int peer, int *count)
{
    char *at = side->base + (side->displ ? side->displ[peer] : side->stride * peer);
    int part = s->ops[op].part, parts = s->ops[op].parts;
    *count = side->counts ? side->counts[peer] : side->count;
    if (parts > 1) {
        long long lo = (long long)*count * part / parts, hi = (long long)*count * (part + 1) / parts;
        at += lo;
        *count = (int)(hi - lo);
    }
    return at;
}

/* Post op's send or receive, split as tcx_split says (pieces are bytes). */
static int tcx_post(int send, char *at, int n, MPI_Datatype t, int peer, tcx_state *st, MPI_Request *req,
                    int *nreq)
{
    int per, k = tcx_split(st, peer, n, t, &per), rc = MPI_SUCCESS;
    if (k > 1 && send) st->pace.split_messages++;
    for (int i = 0; i < k && rc == MPI_SUCCESS; i++) {
        int c = i + 1 < k ? per : n - per * i;
        char *p = at + (MPI_Aint)per * i;   /* i > 0 only on bytes */
        rc = send ? TCX(Isend)(p, c, t, peer, TCX_TAG_DATA, st->comm, &req[(*nreq)++])
                  : TCX(Irecv)(p, c, t, peer, TCX_TAG_DATA, st->comm, &req[(*nreq)++]);
    }
    return rc;
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
        int src = s->ops[v->recv_op[j]].src, n;
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
            int dst = s->ops[v->send_op[k]].dst, n;
            char *at = tcx_piece(s, v->send_op[k], &snd, dst, &n);
            rc = tcx_wait_syncs(st, k, yreq);
            if (k == j) t_step = TCX(Wtime)();
            if (st->trace) st->trace(st->trace_ctx, TCX_EV_START, v->send_op[k], dst, TCX(Wtime)());
            if (rc == MPI_SUCCESS) rc = tcx_post(1, at, n, snd.type, dst, st, sreq, &ns);
        }
        if (rc == MPI_SUCCESS) rc = tcx_waitall(st, ns, sreq);
        if (st->trace)
            for (int k = j; k < e; k++)
                st->trace(st->trace_ctx, TCX_EV_DONE, v->send_op[k], s->ops[v->send_op[k]].dst, TCX(Wtime)());
        /* paced: the rank's link carries its steps' bytes one after another;
         * the step's syncs and the next step wait until they have (less the
         * lead), so that a run of steps without syncs does not share the link
         * (each message would finish with the last) */
        double bytes_time = tcx_step_time(st, j, e, &snd);
        int notifies = v->notify_begin[e] > v->notify_begin[j];
        if (bytes_time > 0) {
            link_free = (link_free > t_step ? link_free : t_step) + bytes_time;
            st->pace.paced_steps += notifies;
            double lead = st->pace.lead;
            if (st->pace.lead_share > 0 && st->pace.lead_share * bytes_time < lead) lead = st->pace.lead_share * bytes_time;
            if (rc == MPI_SUCCESS) rc = tcx_idle_until(st, link_free - lead);
        }
        if (st->trace && notifies)
            for (int k = j; k < e; k++)
                if (v->notify_begin[k + 1] > v->notify_begin[k])
                    st->trace(st->trace_ctx, TCX_EV_NOTIFY, v->send_op[k], s->ops[v->send_op[k]].dst, TCX(Wtime)());
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
            rc = TCX(Irecv)(rbuf[k], (int)n, MPI_BYTE, s->ops[v->recv_op[k]].src, TCX_TAG_DATA, st->comm, &req[nreqs++]);
        }
        for (int k = js; k < es && rc == MPI_SUCCESS; k++) {
            int nb = v->send_loc_begin[k + 1] - v->send_loc_begin[k];
            sbuf[k] = (char *)malloc((size_t)(nb * bsize) + 1);
            if (!sbuf[k]) { rc = MPI_ERR_NO_MEM; break; }
            for (int b = 0; b < nb; b++)
                memcpy(sbuf[k] + b * bsize, work + v->send_loc[v->send_loc_begin[k] + b] * bsize, (size_t)bsize);
            rc = tcx_wait_syncs(st, k, yreq);
            if (rc == MPI_SUCCESS)
                rc = TCX(Isend)(sbuf[k], (int)(nb * bsize), MPI_BYTE, s->ops[v->send_op[k]].dst, TCX_TAG_DATA,
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
TCX_API int tcx_alltoall(tcx_state *st, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf,
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
    tcx_side rcv = {(char *)recvbuf, rext * rcount, rcount, rtype, NULL, NULL};
    tcx_side snd;
    int in_place = sendbuf == MPI_IN_PLACE;
    char *rpacked = NULL;
    if (v->segmented || (st->pace.rate_to && bsize > st->pace.piece_bytes)) {
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
        snd = (tcx_side){(char *)from, bsize, (int)bsize, MPI_BYTE, NULL, NULL};
        tcx_side rbytes = {rpacked ? rpacked : (char *)recvbuf, bsize, (int)bsize, MPI_BYTE, NULL, NULL};
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
        snd = (tcx_side){copy - tlb, rext * rcount, rcount, rtype, NULL, NULL};
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
        snd = (tcx_side){packed, bsize, (int)bsize, MPI_PACKED, NULL, NULL};
    } else {
        TCX(Type_get_extent)(stype, &lb, &sext);
        snd = (tcx_side){(char *)sendbuf, sext * scount, scount, stype, NULL, NULL};
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

/* Whether a datatype's bytes lie one after another from its start (then a
 * block of n elements is n x size bytes at its displacement). */
static int tcx_contiguous(MPI_Datatype t)
{
    MPI_Aint lb, ext, tlb, text;
    int size;
    TCX(Type_get_extent)(t, &lb, &ext);
    TCX(Type_get_true_extent)(t, &tlb, &text);
    TCX(Type_size)(t, &size);
    return lb == 0 && tlb == 0 && ext == size && text == size;
}

/* One side of MPI_Alltoallv as bytes: byte displacements and counts, and
 * (packed non-NULL) a buffer holding the blocks back to back. */
typedef struct tcx_vside { MPI_Aint *displ; int *counts; char *packed; } tcx_vside;

static int tcx_vside_make(tcx_vside *v, int p, const int *counts, const int *displs, MPI_Datatype t, int pack)
{
    MPI_Aint lb, ext, total = 0;
    int size;
    TCX(Type_get_extent)(t, &lb, &ext);
    TCX(Type_size)(t, &size);
    v->displ = (MPI_Aint *)malloc(sizeof(MPI_Aint) * (size_t)(p + 1));
    v->counts = (int *)malloc(sizeof(int) * (size_t)(p + 1));
    v->packed = NULL;
    if (!v->displ || !v->counts) return MPI_ERR_NO_MEM;
    for (int d = 0; d < p; d++) {
        v->counts[d] = counts[d] * size;
        v->displ[d] = pack ? total : displs[d] * ext;
        total += v->counts[d];
    }
    if (pack && !(v->packed = (char *)malloc((size_t)total + 1))) return MPI_ERR_NO_MEM;
    return MPI_SUCCESS;
}

static void tcx_vside_free(tcx_vside *v)
{
    free(v->displ); free(v->counts); free(v->packed);
}

TCX_API int tcx_alltoallv(tcx_state *st, const void *sendbuf, const int *scounts, const int *sdispls,
                          MPI_Datatype stype, void *recvbuf, const int *rcounts, const int *rdispls, MPI_Datatype rtype)
{
    const int p = st->sched->nranks, me = st->view.me, in_place = sendbuf == MPI_IN_PLACE;
    MPI_Aint lb, sext, rext;
    int rc = MPI_SUCCESS;
    if (in_place) { sendbuf = recvbuf; scounts = rcounts; sdispls = rdispls; stype = rtype; }
    TCX(Type_get_extent)(stype, &lb, &sext);
    TCX(Type_get_extent)(rtype, &lb, &rext);
    /* in place, the blocks to send are copied out before any arrives */
    int spack = in_place || !tcx_contiguous(stype), rpack = !tcx_contiguous(rtype);
    tcx_vside sv, rv;
    memset(&rv, 0, sizeof rv);
    rc = tcx_vside_make(&sv, p, scounts, sdispls, stype, spack);
    if (rc == MPI_SUCCESS) rc = tcx_vside_make(&rv, p, rcounts, rdispls, rtype, rpack);
    for (int d = 0; d < p && rc == MPI_SUCCESS && spack; d++) {
        int pos = 0;
        rc = TCX(Pack)((const char *)sendbuf + sext * sdispls[d], scounts[d], stype, sv.packed + sv.displ[d],
                       sv.counts[d], &pos, st->comm);
    }
    tcx_side snd = {spack ? sv.packed : (char *)sendbuf, 0, 0, MPI_BYTE, sv.displ, sv.counts};
    tcx_side rcv = {rpack ? rv.packed : (char *)recvbuf, 0, 0, MPI_BYTE, rv.displ, rv.counts};
    if (rc == MPI_SUCCESS && sv.counts[me] != rv.counts[me]) rc = MPI_ERR_TRUNCATE;
    if (rc == MPI_SUCCESS && sv.counts[me])
        memmove(rcv.base + rv.displ[me], snd.base + sv.displ[me], (size_t)sv.counts[me]);
    if (rc == MPI_SUCCESS) rc = tcx_run_direct(st, snd, rcv);
    for (int o = 0; o < p && rc == MPI_SUCCESS && rpack; o++) {
        int pos = 0;
        rc = TCX(Unpack)(rv.packed + rv.displ[o], rv.counts[o], &pos, (char *)recvbuf + rext * rdispls[o], rcounts[o],
                         rtype, st->comm);
    }
    tcx_vside_free(&sv);
    tcx_vside_free(&rv);
    return rc;
}

#ifdef TCX_POP_DIAGNOSTIC
#pragma GCC diagnostic pop
#undef TCX_POP_DIAGNOSTIC
#endif
