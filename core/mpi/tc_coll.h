/*
 * tc_coll.h -- topocoll's rooted collectives over a tc_tree (coll_tree.c):
 * MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Barrier, MPI_Gather and
 * MPI_Scatter as point-to-point messages along the tree (Karonis et al.'s
 * multilevel trees, MPICH's binomial, MagPIe's two-level).  MPI and the C
 * library only (tc_coll.c, in the PMPI library).
 *
 *  - bcast: receive from the parent, then send to every child at once
 *    (children are in send order: the slowest level first);
 *  - reduce: combine the children's partial results into the rank's own,
 *    then send up.  Only for commutative operations (the tree's order is not
 *    rank order); the caller sends the others to the MPI;
 *  - allreduce: reduce to rank 0, then bcast from it, on the same tree;
 *  - barrier: zero-byte messages up the tree, then down;
 *  - gather / scatter: a rank's subtree is contiguous in the tree's
 *    depth-first order, so each message carries its subtree's blocks packed
 *    in that order; the root unpacks (or packs) them by rank.
 * Every message sent is counted by the hierarchy level it crosses.
 */
#ifndef TC_COLL_H
#define TC_COLL_H

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "topocoll/topocoll.h"

enum { TCC_TAG = 21, TCC_MAX_LEVELS = 16 };

/* One call's context: the tree, this rank, the private communicator, and
 * where to count messages by the level they cross (groups: the group vectors
 * the tree was built from; a message between ranks whose vectors first
 * differ at level l counts at l, within one bottom group at `levels`). */
typedef struct tcc_ctx {
    const tc_tree *t;
    int me;
    MPI_Comm comm;
    const int *groups;
    int levels;
    long long *sent;        /* TCC_MAX_LEVELS counters, or NULL */
} tcc_ctx;

/* The rooted collectives along x's tree (tc_coll.c); MPI_SUCCESS or an MPI error. */
int tcc_bcast(const tcc_ctx *x, void *buf, int count, MPI_Datatype type);
int tcc_reduce(const tcc_ctx *x, const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op);
int tcc_barrier(const tcc_ctx *x);
int tcc_gather(const tcc_ctx *x, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount,
              MPI_Datatype rtype);
int tcc_scatter(const tcc_ctx *x, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf,
               int rcount, MPI_Datatype rtype);

#endif
