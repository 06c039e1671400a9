/*
 * The broadcast timing program of Karonis et al. (their Figure 7): for each
 * message size, every rank is the root in turn, and after each broadcast an
 * acknowledgement barrier built from point-to-point messages (every rank
 * sends an ACK to rank 0 and waits for its GO) keeps broadcasts from
 * overlapping without using MPI_Barrier, which topocoll also replaces.
 *
 * Usage: bcast_bench [--warmup N] [--repetitions N] SIZE...
 * Prints, per size, "check SIZE ok|FAILED N" (every byte of every broadcast
 * of the first pass checked) and per timed pass "result SIZE REP SECONDS"
 * (rank 0's time for the n broadcasts and barriers).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ack_barrier(int me, int n)
{
    char x = 0;
    if (me == 0) {
        for (int r = 1; r < n; r++) MPI_Recv(&x, 1, MPI_CHAR, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int r = 1; r < n; r++) MPI_Send(&x, 1, MPI_CHAR, r, 8, MPI_COMM_WORLD);
    } else {
        MPI_Send(&x, 1, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
        MPI_Recv(&x, 1, MPI_CHAR, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

static unsigned char pattern(long i, int root, long m) { return (unsigned char)(i * 31 + root * 7 + m); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n, warmup = 1, reps = 5, nsizes = 0;
    long sizes[64];
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repetitions") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (nsizes < 64 && atol(argv[i]) > 0) sizes[nsizes++] = atol(argv[i]);
    }
    if (!nsizes) {
        if (me == 0) fprintf(stderr, "usage: bcast_bench [--warmup N] [--repetitions N] SIZE...\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int s = 0; s < nsizes; s++) {
        long m = sizes[s], bad = 0, all = 0;
        unsigned char *buf = malloc((size_t)m);
        for (int rep = -warmup; rep < reps; rep++) {
            ack_barrier(me, n);
            double t0 = MPI_Wtime();
            for (int root = 0; root < n; root++) {
                if (rep == -warmup && me == root)
                    for (long i = 0; i < m; i++) buf[i] = pattern(i, root, m);
                MPI_Bcast(buf, (int)m, MPI_BYTE, root, MPI_COMM_WORLD);
                if (rep == -warmup)
                    for (long i = 0; i < m; i++) bad += buf[i] != pattern(i, root, m);
                ack_barrier(me, n);
            }
            double t = MPI_Wtime() - t0;
            if (rep == -warmup) {
                MPI_Reduce(&bad, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
                if (me == 0) printf("check %ld %s %ld\n", m, all ? "FAILED" : "ok", all);
            }
            if (rep >= 0 && me == 0) printf("result %ld %d %.9f\n", m, rep, t);
            fflush(stdout);
        }
        free(buf);
    }
    MPI_Finalize();
    return 0;
}
