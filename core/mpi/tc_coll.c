/* The rooted collectives along a multilevel tree (tc_coll.h): each rank
 * receives from its parent and sends to its children in the tree's order,
 * or the reverse for the reductions and gathers. */
#define TCX(fn) PMPI_##fn
#include "tc_coll.h"

#include <stdlib.h>
#include <string.h>

/* Complete requests one by one (MPICH's MPI_STATUSES_IGNORE sentinel trips
 * GCC 11's -Wstringop-overflow in MPI_Waitall; see tc_exec.h). */
static int tcc_waitall(int n, MPI_Request *req)
{
    int rc = MPI_SUCCESS;
    for (int k = 0; k < n; k++) {
        int r = TCX(Wait)(&req[k], MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = r;
    }
    return rc;
}

static void tcc_count(const tcc_ctx *x, int to)
{
    if (!x->sent) return;
    int l = tc_groups_split_level(x->groups, x->levels, x->me, to);
    x->sent[l < TCC_MAX_LEVELS ? l : TCC_MAX_LEVELS - 1]++;
}

/* A buffer for count elements of type, and where its data starts. */
static char *tcc_alloc(int count, MPI_Datatype type, char **raw)
{
    MPI_Aint lb, ext, tlb, text;
    TCX(Type_get_extent)(type, &lb, &ext);
    TCX(Type_get_true_extent)(type, &tlb, &text);
    size_t span = count > 0 ? (size_t)(text + ext * (count - 1)) : 0;
    *raw = (char *)malloc(span + 1);
    return *raw ? *raw - tlb : NULL;
}

int tcc_bcast(const tcc_ctx *x, void *buf, int count, MPI_Datatype type)
{
    const tc_tree *t = x->t;
    int me = x->me;
    MPI_Comm comm = x->comm;
    int rc = MPI_SUCCESS, nc = t->child_begin[me + 1] - t->child_begin[me];
    if (t->parent[me] >= 0)
        rc = TCX(Recv)(buf, count, type, t->parent[me], TCC_TAG, comm, MPI_STATUS_IGNORE);
    MPI_Request *req = (MPI_Request *)malloc(sizeof(MPI_Request) * (size_t)(nc + 1));
    if (!req) return MPI_ERR_NO_MEM;
    for (int k = 0; k < nc && rc == MPI_SUCCESS; k++) {
        int c = t->child[t->child_begin[me] + k];
        rc = TCX(Isend)(buf, count, type, c, TCC_TAG, comm, &req[k]);
        tcc_count(x, c);
    }
    if (rc == MPI_SUCCESS) rc = tcc_waitall(nc, req);
    free(req);
    return rc;
}

/* Commutative reduction to the tree's root; result in recvbuf there. */
int tcc_reduce(const tcc_ctx *x, const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op)
{
    const tc_tree *t = x->t;
    int me = x->me;
    MPI_Comm comm = x->comm;
    int rc = MPI_SUCCESS, root = t->parent[me] < 0;
    char *raw_acc = NULL, *raw_in = NULL;
    char *acc = root ? (char *)recvbuf : tcc_alloc(count, type, &raw_acc);
    char *in = tcc_alloc(count, type, &raw_in);
    if (!acc || !in) { free(raw_acc); free(raw_in); return MPI_ERR_NO_MEM; }
    if (!(root && sendbuf == MPI_IN_PLACE))
        rc = TCX(Sendrecv)(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, type, me, TCC_TAG, acc, count, type, me,
                           TCC_TAG, comm, MPI_STATUS_IGNORE);
    for (int k = t->child_begin[me]; k < t->child_begin[me + 1] && rc == MPI_SUCCESS; k++) {
        rc = TCX(Recv)(in, count, type, t->child[k], TCC_TAG, comm, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = TCX(Reduce_local)(in, acc, count, type, op);
    }
    if (rc == MPI_SUCCESS && !root) {
        rc = TCX(Send)(acc, count, type, t->parent[me], TCC_TAG, comm);
        tcc_count(x, t->parent[me]);
    }
    free(raw_acc);
    free(raw_in);
    return rc;
}

int tcc_barrier(const tcc_ctx *x)
{
    const tc_tree *t = x->t;
    int me = x->me;
    MPI_Comm comm = x->comm;
    static char none;
    int rc = MPI_SUCCESS;
    for (int k = t->child_begin[me]; k < t->child_begin[me + 1] && rc == MPI_SUCCESS; k++)
        rc = TCX(Recv)(&none, 0, MPI_BYTE, t->child[k], TCC_TAG, comm, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && t->parent[me] >= 0) {
        rc = TCX(Send)(&none, 0, MPI_BYTE, t->parent[me], TCC_TAG, comm);
        tcc_count(x, t->parent[me]);
    }
    return rc == MPI_SUCCESS ? tcc_bcast(x, &none, 0, MPI_BYTE) : rc;
}

/* Gather: own block packed at the front, the children's subtrees after it
 * (depth-first order), sent up as one message. */
int tcc_gather(const tcc_ctx *x, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount,
                      MPI_Datatype rtype)
{
    const tc_tree *t = x->t;
    int me = x->me;
    MPI_Comm comm = x->comm;
    int rc = MPI_SUCCESS, root = t->parent[me] < 0, in_place = root && sendbuf == MPI_IN_PLACE, tsize, pos = 0;
    TCX(Type_size)(root ? rtype : stype, &tsize);
    MPI_Aint S = (MPI_Aint)tsize * (root ? rcount : scount), rlb, rext;
    char *work = (char *)malloc((size_t)(S * t->size[me]) + 1);
    if (!work) return MPI_ERR_NO_MEM;
    if (!in_place && S > 0) {
        rc = TCX(Pack)(sendbuf, scount, stype, work, (int)S, &pos, comm);
        if (rc == MPI_SUCCESS && pos != S) rc = MPI_ERR_TRUNCATE;
    }
    for (int k = t->child_begin[me]; k < t->child_begin[me + 1] && rc == MPI_SUCCESS; k++) {
        int c = t->child[k];
        rc = TCX(Recv)(work + S * (t->pos[c] - t->pos[me]), (int)(S * t->size[c]), MPI_BYTE, c, TCC_TAG, comm,
                       MPI_STATUS_IGNORE);
    }
    if (rc == MPI_SUCCESS && !root) {
        rc = TCX(Send)(work, (int)(S * t->size[me]), MPI_BYTE, t->parent[me], TCC_TAG, comm);
        tcc_count(x, t->parent[me]);
    }
    if (rc == MPI_SUCCESS && root) {
        TCX(Type_get_extent)(rtype, &rlb, &rext);
        for (int i = in_place ? 1 : 0; i < t->n && rc == MPI_SUCCESS && S > 0; i++) {
            int r = t->order[i];
            pos = 0;
            rc = TCX(Unpack)(work + S * i, (int)S, &pos, (char *)recvbuf + rext * rcount * r, rcount, rtype, comm);
        }
    }
    free(work);
    return rc;
}

/* Scatter: the root packs every block in depth-first order; each rank keeps
 * the first block of what it receives and passes each child its subtree's. */
int tcc_scatter(const tcc_ctx *x, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf,
                       int rcount, MPI_Datatype rtype)
{
    const tc_tree *t = x->t;
    int me = x->me;
    MPI_Comm comm = x->comm;
    int rc = MPI_SUCCESS, root = t->parent[me] < 0, tsize, pos;
    TCX(Type_size)(root ? stype : rtype, &tsize);
    MPI_Aint S = (MPI_Aint)tsize * (root ? scount : rcount), slb, sext;
    char *work = (char *)malloc((size_t)(S * t->size[me]) + 1);
    int nc = t->child_begin[me + 1] - t->child_begin[me];
    MPI_Request *req = (MPI_Request *)malloc(sizeof(MPI_Request) * (size_t)(nc + 1));
    if (!work || !req) { free(work); free(req); return MPI_ERR_NO_MEM; }
    if (root) {
        TCX(Type_get_extent)(stype, &slb, &sext);
        for (int i = 0; i < t->n && rc == MPI_SUCCESS && S > 0; i++) {
            pos = 0;
            rc = TCX(Pack)((const char *)sendbuf + sext * scount * t->order[i], scount, stype, work + S * i, (int)S,
                           &pos, comm);
        }
    } else {
        rc = TCX(Recv)(work, (int)(S * t->size[me]), MPI_BYTE, t->parent[me], TCC_TAG, comm, MPI_STATUS_IGNORE);
    }
    for (int k = 0; k < nc && rc == MPI_SUCCESS; k++) {
        int c = t->child[t->child_begin[me] + k];
        rc = TCX(Isend)(work + S * (t->pos[c] - t->pos[me]), (int)(S * t->size[c]), MPI_BYTE, c, TCC_TAG, comm,
                        &req[k]);
        tcc_count(x, c);
    }
    if (rc == MPI_SUCCESS && !(root && recvbuf == MPI_IN_PLACE) && S > 0) {
        pos = 0;
        rc = TCX(Unpack)(work, (int)S, &pos, recvbuf, rcount, rtype, comm);
    }
    if (rc == MPI_SUCCESS) rc = tcc_waitall(nc, req);
    free(work);
    free(req);
    return rc;
}
