/*
 * alltoall_bench: times MPI_Alltoall for `topocoll bench` (any back-end:
 * SimGrid's smpirun, the emulated cluster, a real cluster's mpirun).
 *
 * Usage: alltoall_bench [--warmup N] [--repetitions N] [--shared] [--skew] SIZE...
 * For each SIZE (bytes of one block, MPI_BYTE): N warm-up calls, one data
 * check of every byte (skipped with --shared, where SMPI_SHARED_MALLOC folds
 * all buffers into one page to simulate large runs in little memory), then
 * N timed calls: MPI_Barrier, then MPI_Alltoall timed on every rank and
 * reduced to the slowest rank.  Rank 0 prints, one line each:
 *   check SIZE ok|FAILED ERRORS
 *   result SIZE REPETITION SECONDS
 * and with --skew, after each result line, how far apart the ranks left
 * the barrier (the latest CLOCK_MONOTONIC reading at the call's start less
 * the earliest: not MPI_Wtime, which Open MPI counts from each process's
 * MPI_Init; meaningful only where the ranks share a clock, as on the
 * emulated cluster, whose namespaces read one kernel's):
 *   skew SIZE REPETITION SECONDS
 *   starts SIZE REPETITION S0 S1 ... (each rank's start after the earliest's)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef SMPI_SHARED_MALLOC
#define SHARED_ALLOC(n) SMPI_SHARED_MALLOC(n)
#define SHARED_FREE(p) SMPI_SHARED_FREE(p)
#else
#define SHARED_ALLOC(n) malloc(n)
#define SHARED_FREE(p) free(p)
#endif

static double monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned char pattern(int src, int dst, long i) { return (unsigned char)(src * 31 + dst * 7 + i * 13 + (i >> 8)); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p, warmup = 1, reps = 5, shared = 0, skew = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long sizes[64];
    int nsizes = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repetitions") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--shared")) shared = 1;
        else if (!strcmp(argv[i], "--skew")) skew = 1;
        else if (nsizes < 64 && atol(argv[i]) >= 0) sizes[nsizes++] = atol(argv[i]);
    }
    if (nsizes == 0) {
        if (me == 0) fprintf(stderr, "usage: alltoall_bench [--warmup N] [--repetitions N] [--shared] [--skew] SIZE...\n");
        MPI_Finalize();
        return 2;
    }
    for (int k = 0; k < nsizes; k++) {
        long m = sizes[k];
        size_t total = (size_t)m * (size_t)p;
        unsigned char *sbuf = shared ? SHARED_ALLOC(total + 1) : malloc(total + 1);
        unsigned char *rbuf = shared ? SHARED_ALLOC(total + 1) : malloc(total + 1);
        double *starts = malloc(sizeof(double) * (size_t)p);
        if (!shared)
            for (int d = 0; d < p; d++)
                for (long i = 0; i < m; i++) sbuf[(size_t)d * m + i] = pattern(me, d, i);
        for (int w = 0; w < warmup; w++)
            MPI_Alltoall(sbuf, (int)m, MPI_BYTE, rbuf, (int)m, MPI_BYTE, MPI_COMM_WORLD);
        if (!shared) {
            memset(rbuf, 0, total);
            MPI_Alltoall(sbuf, (int)m, MPI_BYTE, rbuf, (int)m, MPI_BYTE, MPI_COMM_WORLD);
            long errors = 0, all = 0;
            for (int s = 0; s < p; s++)
                for (long i = 0; i < m; i++) errors += rbuf[(size_t)s * m + i] != pattern(s, me, i);
            MPI_Reduce(&errors, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
            if (me == 0) printf("check %ld %s %ld\n", m, all ? "FAILED" : "ok", all);
        }
        for (int r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double start = skew ? monotonic() : 0, t0 = MPI_Wtime();
            MPI_Alltoall(sbuf, (int)m, MPI_BYTE, rbuf, (int)m, MPI_BYTE, MPI_COMM_WORLD);
            double dt = MPI_Wtime() - t0, worst = 0, first = start, last = start;
            MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (skew) {
                MPI_Gather(&start, 1, MPI_DOUBLE, starts, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
                if (me == 0)
                    for (int i = 0; i < p; i++) {
                        if (starts[i] < first) first = starts[i];
                        if (starts[i] > last) last = starts[i];
                    }
            }
            if (me == 0) {
                printf("result %ld %d %.9f\n", m, r, worst);
                if (skew) {
                    printf("skew %ld %d %.9f\n", m, r, last - first);
                    printf("starts %ld %d", m, r);
                    for (int i = 0; i < p; i++) printf(" %.6f", starts[i] - first);
                    printf("\n");
                }
                fflush(stdout);
            }
        }
        free(starts);
        if (shared) { SHARED_FREE(sbuf); SHARED_FREE(rbuf); }
        else { free(sbuf); free(rbuf); }
    }
    MPI_Finalize();
    return 0;
}
