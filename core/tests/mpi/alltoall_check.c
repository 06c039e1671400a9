/*
 * Data-integrity test of MPI_Alltoall: every element of every block, over
 * communicators (world, dup, split in halves, split in reverse rank order),
 * block counts, datatypes (contiguous ints; a strided vector sent and
 * contiguous ints received; a struct with a gap) and MPI_IN_PLACE.
 *
 * It calls MPI_Alltoall, so preloading libtopocoll_pmpi puts topocoll under
 * test; built with -DALLTOALL=fn it calls a generated routine instead.
 * Usage: alltoall_check [COUNT ...]   (default: 0 1 1000 65536)
 * Prints "alltoall_check: calls=N errors=E" on rank 0 and exits non-zero on
 * any error.
 */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ALLTOALL
int ALLTOALL(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
#define CALL ALLTOALL
/* count the generated routine's fallbacks to MPI_Alltoall (comm rank 0) */
static long long fallbacks;
int MPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    int r;
    MPI_Comm_rank(comm, &r);
    if (r == 0) fallbacks++;
    return PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm);
}
#else
#define CALL MPI_Alltoall
#endif

typedef struct pair { int a; double b; } pair;   /* a gap follows a */

static long long errors, calls;

static int value(int src, int dst, int i) { return (int)(((long long)src * 1000003 + (long long)dst * 1009 + i) % 2147483647); }

static void report(const char *what, int me, int src, int i, long long got, long long want)
{
    if (errors++ < 5)
        fprintf(stderr, "alltoall_check: %s: rank %d, block from %d, element %d: got %lld, want %lld\n", what, me,
                src, i, got, want);
}

/* kind 0: MPI_INT both sides; 1: vector of stride 2 sent, MPI_INT received;
 * 2: struct pair both sides.  in_place only for kinds 0 and 2. */
static void run(MPI_Comm comm, int count, int kind, int in_place, const char *label)
{
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    size_t n = (size_t)p * (size_t)count;
    MPI_Datatype stype = MPI_INT, rtype = MPI_INT, vec = MPI_DATATYPE_NULL, pt = MPI_DATATYPE_NULL;
    int scount = count, rcount = count;
    int *sint = NULL, *rint = NULL;
    pair *spair = NULL, *rpair = NULL;
    void *sbuf, *rbuf;
    if (kind == 1) {
        MPI_Datatype v;
        MPI_Type_vector(count ? count : 1, 1, 2, MPI_INT, &v);
        MPI_Type_create_resized(v, 0, (MPI_Aint)sizeof(int) * 2 * (count ? count : 1), &vec);
        MPI_Type_free(&v);
        MPI_Type_commit(&vec);
        stype = vec;
        scount = count ? 1 : 0;
    } else if (kind == 2) {
        int len[2] = {1, 1};
        MPI_Aint disp[2] = {offsetof(pair, a), offsetof(pair, b)};
        MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, t;
        MPI_Type_create_struct(2, len, disp, types, &t);
        MPI_Type_create_resized(t, 0, sizeof(pair), &pt);
        MPI_Type_free(&t);
        MPI_Type_commit(&pt);
        stype = rtype = pt;
    }
    if (kind == 2) {
        spair = malloc(sizeof(pair) * (n + 1));
        rpair = malloc(sizeof(pair) * (n + 1));
        for (size_t k = 0; k < n; k++) {
            int d = (int)(k / (size_t)(count ? count : 1)), i = (int)(k % (size_t)(count ? count : 1));
            spair[k].a = value(me, d, i);
            spair[k].b = 0.5 * value(me, d, i);
            rpair[k].a = -1;
            rpair[k].b = -1;
        }
        if (in_place) memcpy(rpair, spair, sizeof(pair) * n);
        sbuf = in_place ? MPI_IN_PLACE : (void *)spair;
        rbuf = rpair;
    } else {
        size_t sn = kind == 1 ? 2 * n : n;
        sint = malloc(sizeof(int) * (sn + 1));
        rint = malloc(sizeof(int) * (n + 1));
        for (size_t k = 0; k < sn; k++) sint[k] = -7;
        for (size_t k = 0; k < n; k++) {
            int d = (int)(k / (size_t)count), i = (int)(k % (size_t)count);
            sint[kind == 1 ? 2 * k : k] = value(me, d, i);
            rint[k] = -1;
        }
        if (in_place) memcpy(rint, sint, sizeof(int) * n);
        sbuf = in_place ? MPI_IN_PLACE : (void *)sint;
        rbuf = rint;
    }
    int rc = CALL(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    if (me == 0) calls++;
    if (rc != MPI_SUCCESS) report(label, me, -1, -1, rc, MPI_SUCCESS);
    for (int s = 0; s < p; s++)
        for (int i = 0; i < count; i++) {
            size_t k = (size_t)s * count + i;
            long long got = kind == 2 ? rpair[k].a : rint[k], want = value(s, me, i);
            if (got != want) report(label, me, s, i, got, want);
            if (kind == 2 && rpair[k].b != 0.5 * want) report(label, me, s, i, (long long)rpair[k].b, want / 2);
        }
    free(sint); free(rint); free(spair); free(rpair);
    if (vec != MPI_DATATYPE_NULL) MPI_Type_free(&vec);
    if (pt != MPI_DATATYPE_NULL) MPI_Type_free(&pt);
}

static void suite(MPI_Comm comm, const char *name, const int *counts, int ncounts)
{
    char label[128];
    /* for an MPI whose own algorithm is known to fail a case (see the test) */
    const char *skip = getenv("ALLTOALL_CHECK_SKIP_INPLACE_STRUCT_ABOVE");
    int skip_above = skip ? atoi(skip) : -1;
    for (int c = 0; c < ncounts; c++)
        for (int kind = 0; kind < 3; kind++)
            for (int in_place = 0; in_place < 2; in_place++) {
                if (in_place && kind == 1) continue;
                /* the largest count once per communicator, in the simplest form */
                if (counts[c] > 4096 && (kind != 0 || in_place)) continue;
                if (skip && kind == 2 && in_place && counts[c] > skip_above) continue;
                snprintf(label, sizeof label, "%s count=%d type=%s%s", name, counts[c],
                         kind == 0 ? "int" : kind == 1 ? "vector->int" : "struct", in_place ? " in-place" : "");
                run(comm, counts[c], kind, in_place, label);
            }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int counts[16] = {0, 1, 1000, 65536}, ncounts = 4;
    if (argc > 1) {
        ncounts = 0;
        for (int i = 1; i < argc && ncounts < 16; i++) counts[ncounts++] = atoi(argv[i]);
    }
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    suite(MPI_COMM_WORLD, "world", counts, ncounts);
    MPI_Comm dup, half, rev;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    suite(dup, "dup", counts, ncounts);
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
    suite(half, "split-parity", counts, ncounts);
    MPI_Comm_split(MPI_COMM_WORLD, 0, p - me, &rev);
    suite(rev, "split-reversed", counts, ncounts);
    /* a second round on the same communicators: cached plans */
    suite(rev, "split-reversed-again", counts, 1);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
    long long tot_err = 0, tot_calls = 0;
    MPI_Reduce(&errors, &tot_err, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&calls, &tot_calls, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(&tot_err, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (me == 0) printf("alltoall_check: calls=%lld errors=%lld\n", tot_calls, tot_err);
#ifdef ALLTOALL
    long long tot_fb = 0;
    MPI_Reduce(&fallbacks, &tot_fb, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) printf("alltoall_check: fallbacks=%lld\n", tot_fb);
#endif
    MPI_Finalize();
    return tot_err != 0;
}
