/*
 * alltoallv_bench: times MPI_Alltoallv for `topocoll bench --collective
 * alltoallv` (any back-end).  The blocks follow a pattern of the core
 * (tc_traffic_pattern: the same bytes on every rank for a pattern, size and
 * seed) or a matrix file.
 *
 * Usage: alltoallv_bench [--pattern P] [--matrix FILE] [--seed N] [--warmup N]
 *                        [--repetitions N] MEAN...
 * For each MEAN (the pattern's mean block in bytes; with --matrix, a label):
 * N warm-up calls, one check of every byte, then N timed calls (a barrier,
 * MPI_Alltoallv timed on every rank, reduced to the slowest).  Rank 0 prints
 *   check MEAN ok|FAILED ERRORS
 *   result MEAN REPETITION SECONDS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topocoll/topocoll.h"

static unsigned char pattern(int src, int dst, long i) { return (unsigned char)(src * 31 + dst * 7 + i * 13 + (i >> 8)); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p, warmup = 1, reps = 5;
    const char *spec = "uniform", *file = NULL;
    unsigned long long seed = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long long sizes[64];
    int nsizes = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repetitions") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pattern") && i + 1 < argc) spec = argv[++i];
        else if (!strcmp(argv[i], "--matrix") && i + 1 < argc) file = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (nsizes < 64 && atoll(argv[i]) > 0) sizes[nsizes++] = atoll(argv[i]);
    }
    if (nsizes == 0) {
        if (me == 0)
            fprintf(stderr, "usage: alltoallv_bench [--pattern P] [--matrix FILE] [--seed N] [--warmup N] "
                            "[--repetitions N] MEAN...\n");
        MPI_Finalize();
        return 2;
    }
    int *sc = malloc(sizeof(int) * p), *sd = malloc(sizeof(int) * p), *rc = malloc(sizeof(int) * p),
        *rd = malloc(sizeof(int) * p);
    for (int k = 0; k < nsizes; k++) {
        tc_traffic *d = NULL;
        tc_status st = file ? tc_traffic_load(file, &d) : tc_traffic_pattern(spec, p, sizes[k], seed, &d);
        if (st != TC_OK || tc_traffic_ranks(d) != p) {
            if (me == 0)
                fprintf(stderr, "alltoallv_bench: %s\n", st != TC_OK ? tc_error_message() : "the matrix has another rank count");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        const int64_t *D = tc_traffic_bytes(d);
        long long stot = 0, rtot = 0;
        for (int j = 0; j < p; j++) {
            if (D[(size_t)me * p + j] > 2147483647 || D[(size_t)j * p + me] > 2147483647) {
                if (me == 0) fprintf(stderr, "alltoallv_bench: a block of more than 2^31 bytes\n");
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            sc[j] = (int)D[(size_t)me * p + j];
            rc[j] = (int)D[(size_t)j * p + me];
            sd[j] = (int)stot;
            rd[j] = (int)rtot;
            stot += sc[j];
            rtot += rc[j];
        }
        tc_traffic_destroy(d);
        unsigned char *sbuf = malloc((size_t)stot + 1), *rbuf = malloc((size_t)rtot + 1);
        if (!sbuf || !rbuf) MPI_Abort(MPI_COMM_WORLD, 3);
        for (int j = 0; j < p; j++)
            for (long i = 0; i < sc[j]; i++) sbuf[sd[j] + i] = pattern(me, j, i);
        for (int w = 0; w < warmup; w++) MPI_Alltoallv(sbuf, sc, sd, MPI_BYTE, rbuf, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
        memset(rbuf, 0, (size_t)rtot);
        MPI_Alltoallv(sbuf, sc, sd, MPI_BYTE, rbuf, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
        long errors = 0, all = 0;
        for (int s = 0; s < p; s++)
            for (long i = 0; i < rc[s]; i++) errors += rbuf[rd[s] + i] != pattern(s, me, i);
        MPI_Reduce(&errors, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (me == 0) printf("check %lld %s %ld\n", sizes[k], all ? "FAILED" : "ok", all);
        for (int r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Alltoallv(sbuf, sc, sd, MPI_BYTE, rbuf, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
            double dt = MPI_Wtime() - t0, worst = 0;
            MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (me == 0) {
                printf("result %lld %d %.9f\n", sizes[k], r, worst);
                fflush(stdout);
            }
        }
        free(sbuf);
        free(rbuf);
    }
    free(sc); free(sd); free(rc); free(rd);
    MPI_Finalize();
    return 0;
}
