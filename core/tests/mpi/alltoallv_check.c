/*
 * Data-integrity test of MPI_Alltoallv: every element of every block, for
 * every pattern of the benchmark (the core's tc_traffic_pattern, counts in
 * elements) x datatype (contiguous ints; a strided vector; a struct with a
 * gap) x displacements (in order, packed; reversed with gaps between the
 * blocks) x MPI_IN_PLACE (a symmetric matrix) x communicator (world, split
 * in halves, split in reverse rank order), each twice (the second call
 * finds its plan cached), and gaps checked untouched.
 *
 * Preloading libtopocoll_pmpi puts topocoll under test.
 * Usage: alltoallv_check [MEAN]       mean block in elements (default 300)
 *        alltoallv_check --bad        the erroneous calls: negative counts,
 *                                     counts that do not match, overlapping
 *                                     receive regions (errors returned)
 * Prints "alltoallv_check: calls=N errors=E" on rank 0, non-zero exit on any
 * error.
 */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topocoll/topocoll.h"

typedef struct pair { int a; double b; } pair;   /* a gap follows a */

static long long errors, calls;

static int value(int src, int dst, int i) { return (int)(((long long)src * 1000003 + (long long)dst * 1009 + i * 7 + 1) % 2147483647); }

static void report(const char *what, int me, int src, int i, long long got, long long want)
{
    if (errors++ < 5)
        fprintf(stderr, "alltoallv_check: %s: rank %d, block from %d, element %d: got %lld, want %lld\n", what, me, src,
                i, got, want);
}

/* kind 0: ints; 1: a vector (2 ints 3 apart, its extent 4 ints) on both
 * sides; 2: struct pair.  counts[i * p + j]: elements i sends j. */
static void run(MPI_Comm comm, const int64_t *counts, int kind, int layout, int in_place, const char *label)
{
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    MPI_Datatype t = MPI_INT, made = MPI_DATATYPE_NULL;
    int ints = 1;   /* ints an element (vector: 2) */
    MPI_Aint ext = sizeof(int);
    if (kind == 1) {
        MPI_Datatype v;
        MPI_Type_vector(2, 1, 3, MPI_INT, &v);
        MPI_Type_create_resized(v, 0, 4 * sizeof(int), &made);
        MPI_Type_free(&v);
        ints = 2;
        ext = 4 * sizeof(int);
    } else if (kind == 2) {
        int len[2] = {1, 1};
        MPI_Aint disp[2] = {offsetof(pair, a), offsetof(pair, b)};
        MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, s;
        MPI_Type_create_struct(2, len, disp, types, &s);
        MPI_Type_create_resized(s, 0, sizeof(pair), &made);
        MPI_Type_free(&s);
        ext = sizeof(pair);
    }
    if (made != MPI_DATATYPE_NULL) { MPI_Type_commit(&made); t = made; }
    int *sc = malloc(sizeof(int) * p), *sd = malloc(sizeof(int) * p), *rc = malloc(sizeof(int) * p),
        *rd = malloc(sizeof(int) * p);
    long long stot = 0, rtot = 0;
    /* layout 0: blocks in rank order, back to back; 1: reversed, 3 elements apart */
    for (int k = 0; k < p; k++) {
        int j = layout ? p - 1 - k : k;
        sc[j] = (int)counts[(size_t)me * p + j];
        rc[j] = (int)counts[(size_t)j * p + me];
        sd[j] = (int)stot;
        rd[j] = (int)rtot;
        stot += sc[j] + 3 * layout;
        rtot += rc[j] + 3 * layout;
    }
    char *sbuf = malloc((size_t)(stot + 1) * ext), *rbuf = malloc((size_t)(rtot + 1) * ext);
    memset(sbuf, 0x5a, (size_t)(stot + 1) * ext);
    memset(rbuf, 0x5a, (size_t)(rtot + 1) * ext);
    /* element e of the block to j: ints at element start (vector: +0 and +3 ints) */
    for (int j = 0; j < p; j++)
        for (int e = 0; e < sc[j]; e++) {
            char *at = (in_place ? rbuf + (size_t)rd[j] * ext : sbuf + (size_t)sd[j] * ext) + (size_t)e * ext;
            if (kind == 2) { ((pair *)at)->a = value(me, j, e); ((pair *)at)->b = 0.5 * value(me, j, e); }
            else for (int q = 0; q < ints; q++) ((int *)at)[3 * q] = value(me, j, e) + q;
        }
    int r = MPI_Alltoallv(in_place ? MPI_IN_PLACE : sbuf, sc, sd, t, rbuf, rc, rd, t, comm);
    if (me == 0) calls++;
    if (r != MPI_SUCCESS) report(label, me, -1, -1, r, MPI_SUCCESS);
    char *seen = calloc((size_t)(rtot + 1) * ext, 1);
    for (int s = 0; s < p; s++)
        for (int e = 0; e < rc[s]; e++) {
            char *at = rbuf + ((size_t)rd[s] + e) * ext;
            if (kind == 2) {
                if (((pair *)at)->a != value(s, me, e)) report(label, me, s, e, ((pair *)at)->a, value(s, me, e));
                if (((pair *)at)->b != 0.5 * value(s, me, e)) report(label, me, s, e, -2, -2);
                memset(seen + (at - rbuf), 1, sizeof(int));
                memset(seen + (at - rbuf) + offsetof(pair, b), 1, sizeof(double));
            } else
                for (int q = 0; q < ints; q++) {
                    if (((int *)at)[3 * q] != value(s, me, e) + q)
                        report(label, me, s, e, ((int *)at)[3 * q], value(s, me, e) + q);
                    memset(seen + (at - rbuf) + 3 * q * sizeof(int), 1, sizeof(int));
                }
        }
    /* what no element covers keeps its bytes (gaps between blocks, inside types) */
    for (size_t b = 0; b < (size_t)rtot * ext; b++)
        if (!seen[b] && (unsigned char)rbuf[b] != 0x5a) {
            report("gap overwritten", me, -1, (int)b, (unsigned char)rbuf[b], 0x5a);
            break;
        }
    free(seen); free(sbuf); free(rbuf); free(sc); free(sd); free(rc); free(rd);
    if (made != MPI_DATATYPE_NULL) MPI_Type_free(&made);
}

static void suite(MPI_Comm comm, const char *name, long long mean)
{
    static const char *const patterns[] = {"uniform", "zipf:1.0", "hot:1", "sparse:0.3", "random"};
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    char label[160];
    /* MPICH 4.0.2's own in-place MPI_Alltoallv truncates a resized struct
     * type (its pairwise sendrecv_replace), with or without topocoll */
    const int skip_inplace_struct = getenv("ALLTOALLV_CHECK_SKIP_INPLACE_STRUCT") != NULL;
    for (size_t k = 0; k < sizeof patterns / sizeof *patterns; k++) {
        tc_traffic *d = NULL;
        if (p < 2 && strcmp(patterns[k], "uniform")) continue;   /* one rank: only its own block */
        if (!strcmp(patterns[k], "hot:1") && p < 2) continue;
        if (tc_traffic_pattern(patterns[k], p, mean, 3, &d) != TC_OK) {
            fprintf(stderr, "alltoallv_check: %s\n", tc_error_message());
            errors++;
            continue;
        }
        int64_t *c = malloc(sizeof(int64_t) * (size_t)p * p), *sym = malloc(sizeof(int64_t) * (size_t)p * p);
        memcpy(c, tc_traffic_bytes(d), sizeof(int64_t) * (size_t)p * p);
        for (int i = 0; i < p; i++) {
            c[(size_t)i * p + i] = mean / 2 + i;   /* the self block too */
            for (int j = 0; j < p; j++) sym[(size_t)i * p + j] = c[(size_t)i * p + j] + c[(size_t)j * p + i];
        }
        for (int kind = 0; kind < 3; kind++)
            for (int layout = 0; layout < 2; layout++)
                for (int in_place = 0; in_place < 2; in_place++)
                    for (int again = 0; again < 2; again++) {
                        if (skip_inplace_struct && in_place && kind == 2) continue;
                        snprintf(label, sizeof label, "%s %s type=%s layout=%s%s%s", name, patterns[k],
                                 kind == 0 ? "int" : kind == 1 ? "vector" : "struct", layout ? "reversed+gaps" : "packed",
                                 in_place ? " in-place" : "", again ? " again" : "");
                        run(comm, in_place ? sym : c, kind, layout, in_place, label);
                    }
        free(c);
        free(sym);
        tc_traffic_destroy(d);
    }
}

/* Erroneous calls return an error on every rank (MPI_ERRORS_RETURN) and
 * never hang: a negative count, counts that do not match; overlapping
 * receive regions go to the MPI's own and return. */
static void bad(void)
{
    int me, p;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    int *sc = malloc(sizeof(int) * p), *sd = malloc(sizeof(int) * p), *rc = malloc(sizeof(int) * p),
        *rd = malloc(sizeof(int) * p);
    int *sbuf = calloc((size_t)p * 64 + 64, sizeof(int)), *rbuf = calloc((size_t)p * 64 + 64, sizeof(int));
    for (int j = 0; j < p; j++) { sc[j] = rc[j] = 16; sd[j] = rd[j] = 16 * j; }
    if (me == p - 1) sc[0] = -1;
    int r = MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, comm);
    int cls = MPI_SUCCESS;
    if (r != MPI_SUCCESS) MPI_Error_class(r, &cls);
    if (cls != MPI_ERR_COUNT && cls != MPI_ERR_ARG) report("negative count: not an error", me, -1, -1, r, MPI_ERR_COUNT);
    if (me == 0) calls++;
    sc[0] = 16;
    if (p > 1 && me == 1) sc[0] = 8;   /* rank 1 sends rank 0 8 ints, rank 0 expects 16 */
    r = MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, comm);
    if (me == 0) calls++;
    if (p > 1 && r == MPI_SUCCESS && me == 0) report("counts that do not match: no error", me, 1, -1, r, MPI_ERR_COUNT);
    sc[0] = 16;
    for (int j = 0; j < p; j++) rd[j] = 8 * j;   /* 16 ints each, 8 apart: regions overlap */
    MPI_Barrier(comm);
    r = MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, comm);   /* erroneous; it must return */
    if (me == 0) calls++;
    free(sc); free(sd); free(rc); free(rd); free(sbuf); free(rbuf);
    MPI_Comm_free(&comm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc > 1 && !strcmp(argv[1], "--bad")) bad();
    else {
        long long mean = argc > 1 ? atoll(argv[1]) : 300;
        suite(MPI_COMM_WORLD, "world", mean);
        MPI_Comm half, rev;
        MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
        suite(half, "split-parity", mean);
        MPI_Comm_split(MPI_COMM_WORLD, 0, p - me, &rev);
        suite(rev, "split-reversed", mean);
        MPI_Comm_free(&half);
        MPI_Comm_free(&rev);
    }
    long long tot_err = 0, tot_calls = 0;
    MPI_Reduce(&errors, &tot_err, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&calls, &tot_calls, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(&tot_err, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (me == 0) printf("alltoallv_check: calls=%lld errors=%lld\n", tot_calls, tot_err);
    MPI_Finalize();
    return tot_err != 0;
}
