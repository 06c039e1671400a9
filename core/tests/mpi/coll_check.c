/*
 * Data-integrity test of the rooted collectives (run under the PMPI library
 * with TOPOCOLL_<OP> set, or without it): MPI_Bcast, MPI_Reduce,
 * MPI_Allreduce, MPI_Barrier, MPI_Gather and MPI_Scatter, every root, counts
 * 0, 1 and 1000, MPI_INT and (except for reductions, whose predefined
 * operations need predefined types) a strided vector type whose holes must
 * stay untouched, in place where MPI allows it, on MPI_COMM_WORLD and on a
 * reversed split; plus a non-commutative reduction (which must keep rank
 * order).  Prints "coll_check: calls=N errors=E".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOLE (-7777)
static long calls, errors;
static MPI_Datatype vec;     /* ints 0 and 2 of every 3 */

/* Value of element i of rank r's data for seed s. */
static int val(int r, int i, int s) { return r * 1000003 + i * 7 + s; }

/* Elements as ints: with the vector type, element i is ints 3i and 3i+2. */
static int *buf_new(int count, int kind)
{
    int n = (kind ? 3 : 1) * (count ? count : 1);
    int *b = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) b[i] = HOLE;
    return b;
}
static void put(int *b, int kind, int i, int v0, int v1)
{
    if (kind) { b[3 * i] = v0; b[3 * i + 2] = v1; } else b[i] = v0;
}
static void expect(const int *b, int kind, int i, int v0, int v1, const char *what)
{
    int ok = kind ? b[3 * i] == v0 && b[3 * i + 2] == v1 && b[3 * i + 1] == HOLE : b[i] == v0;
    if (!ok && errors++ < 5) fprintf(stderr, "coll_check: %s: element %d wrong\n", what, i);
}

static void one_comm(MPI_Comm comm)
{
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    static const int counts[] = {0, 1, 1000};
    for (int root = 0; root < n; root++)
        for (int kind = 0; kind < 2; kind++)
            for (int ci = 0; ci < 3; ci++) {
                int count = counts[ci], s = root + 10 * ci + 100 * kind;
                MPI_Datatype t = kind ? vec : MPI_INT;
                /* bcast */
                int *b = buf_new(count, kind);
                for (int i = 0; i < count && me == root; i++) put(b, kind, i, val(root, i, s), -val(root, i, s));
                MPI_Bcast(b, count, t, root, comm);
                calls++;
                for (int i = 0; i < count; i++) expect(b, kind, i, val(root, i, s), -val(root, i, s), "bcast");
                free(b);
                /* reduce (sum), then in place at the root; predefined operations
                 * take predefined datatypes only (MPI 4.0, 6.9.2) */
                for (int inplace = 0; inplace < 2 && !kind; inplace++) {
                    int *in = buf_new(count, kind), *out = buf_new(count, kind);
                    int *src = inplace && me == root ? out : in;
                    for (int i = 0; i < count; i++) put(src, kind, i, val(me, i, s) % 1000, me + i);
                    MPI_Reduce(inplace && me == root ? MPI_IN_PLACE : in, out, count, t, MPI_SUM, root, comm);
                    calls++;
                    for (int i = 0; i < count && me == root; i++) {
                        int sum0 = 0, sum1 = 0;
                        for (int r = 0; r < n; r++) { sum0 += val(r, i, s) % 1000; sum1 += r + i; }
                        expect(out, kind, i, sum0, sum1, inplace ? "reduce in place" : "reduce");
                    }
                    free(in);
                    free(out);
                }
                /* allreduce (max), in place on odd roots */
                if (!kind) {
                    int inplace = root % 2, *in = buf_new(count, kind), *out = buf_new(count, kind);
                    int *src = inplace ? out : in;
                    for (int i = 0; i < count; i++) put(src, kind, i, (me * 37 + i + s) % 101, -me);
                    MPI_Allreduce(inplace ? MPI_IN_PLACE : in, out, count, t, MPI_MAX, comm);
                    calls++;
                    for (int i = 0; i < count; i++) {
                        int m0 = -1;
                        for (int r = 0; r < n; r++) if ((r * 37 + i + s) % 101 > m0) m0 = (r * 37 + i + s) % 101;
                        expect(out, kind, i, m0, 0, "allreduce");
                    }
                    free(in);
                    free(out);
                }
                /* gather, then in place at the root */
                for (int inplace = 0; inplace < 2; inplace++) {
                    int *mine = buf_new(count, kind), *all = buf_new(count * n, kind);
                    for (int i = 0; i < count; i++) put(mine, kind, i, val(me, i, s), val(me, i, -s));
                    if (inplace && me == root)
                        for (int i = 0; i < count; i++) put(all, kind, root * count + i, val(me, i, s), val(me, i, -s));
                    MPI_Gather(inplace && me == root ? MPI_IN_PLACE : mine, count, t, all, count, t, root, comm);
                    calls++;
                    for (int r = 0; r < n && me == root; r++)
                        for (int i = 0; i < count; i++) expect(all, kind, r * count + i, val(r, i, s), val(r, i, -s), "gather");
                    free(mine);
                    free(all);
                }
                /* scatter, then in place at the root */
                for (int inplace = 0; inplace < 2; inplace++) {
                    int *mine = buf_new(count, kind), *all = buf_new(count * n, kind);
                    for (int r = 0; r < n && me == root; r++)
                        for (int i = 0; i < count; i++) put(all, kind, r * count + i, val(r, i, s), val(r, i, 3 * s));
                    MPI_Scatter(all, count, t, inplace && me == root ? MPI_IN_PLACE : mine, count, t, root, comm);
                    calls++;
                    for (int i = 0; i < count && !(inplace && me == root); i++)
                        expect(mine, kind, i, val(me, i, s), val(me, i, 3 * s), "scatter");
                    free(mine);
                    free(all);
                }
                MPI_Barrier(comm);
                calls++;
            }
}

/* A non-commutative operation: 2x2 integer matrix product (mod 1000). */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c[4] = {(a[0] * b[0] + a[1] * b[2]) % 1000, (a[0] * b[1] + a[1] * b[3]) % 1000,
                    (a[2] * b[0] + a[3] * b[2]) % 1000, (a[2] * b[1] + a[3] * b[3]) % 1000};
        memcpy(b, c, sizeof c);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Datatype v;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 3 * sizeof(int), &vec);
    MPI_Type_commit(&vec);
    MPI_Type_free(&v);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    one_comm(MPI_COMM_WORLD);
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &rev);
    one_comm(rev);
    MPI_Comm_free(&rev);
    /* non-commutative: rank order must hold */
    MPI_Op op;
    MPI_Op_create(matmul, 0, &op);
    MPI_Datatype m4;
    MPI_Type_contiguous(4, MPI_INT, &m4);
    MPI_Type_commit(&m4);
    int mine[4] = {1, me % 3 + 1, me % 5, 1}, out[4] = {0, 0, 0, 0};
    MPI_Reduce(mine, out, 1, m4, op, n - 1, MPI_COMM_WORLD);
    calls++;
    if (me == n - 1) {
        int acc[4] = {1, 0, 0, 1};
        for (int r = n - 1; r >= 0; r--) {
            int a[4] = {1, r % 3 + 1, r % 5, 1}, len = 1;
            matmul(a, acc, &len, NULL);
        }
        if (memcmp(acc, out, sizeof acc) && errors++ < 5) fprintf(stderr, "coll_check: non-commutative reduce wrong\n");
    }
    MPI_Op_free(&op);
    MPI_Type_free(&m4);
    /* an intercommunicator between the two halves (the MPI's to run):
     * a barrier, and an all-to-all whose blocks come from the other half */
    if (n >= 2) {
        MPI_Comm half, inter;
        int low = me < n / 2, hsize, rsize, hme;
        MPI_Comm_split(MPI_COMM_WORLD, low, me, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? n / 2 : 0, 7, &inter);
        MPI_Barrier(inter);
        MPI_Comm_size(half, &hsize);
        MPI_Comm_rank(half, &hme);
        MPI_Comm_remote_size(inter, &rsize);
        int *sb = malloc(sizeof(int) * (size_t)rsize), *rb = malloc(sizeof(int) * (size_t)rsize);
        for (int r = 0; r < rsize; r++) sb[r] = 1000 * me + r;
        MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, inter);
        calls += 2;
        for (int r = 0; r < rsize; r++) {
            int src = low ? n / 2 + r : r;   /* world rank of remote rank r */
            if (rb[r] != 1000 * src + hme && errors++ < 5) fprintf(stderr, "coll_check: intercommunicator alltoall wrong\n");
        }
        free(sb);
        free(rb);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    MPI_Type_free(&vec);
    long all = 0;
    MPI_Reduce(&errors, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) printf("coll_check: calls=%ld errors=%ld\n", calls, all);
    MPI_Finalize();
    return all != 0;
}
