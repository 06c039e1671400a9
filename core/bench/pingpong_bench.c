/*
 * pingpong_bench: point-to-point parameters for `topocoll model pingpong`
 * (any back-end: smpirun, the emulated cluster, a real cluster's launcher).
 *
 * Usage: pingpong_bench [--repetitions N] SIZE...
 * Rank 0 exchanges messages of each SIZE bytes (MPI_BYTE) with every other
 * rank in turn: two untimed round trips, then N timed ones; the others wait.
 * Rank 0 prints one line a peer and size, the median of the N half round
 * trips:  pingpong PEER SIZE SECONDS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p, reps = 20, nsizes = 0;
    long sizes[64], most = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repetitions") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (nsizes < 64 && atol(argv[i]) >= 0) sizes[nsizes++] = atol(argv[i]);
    }
    if (nsizes == 0 || reps < 1 || reps > 100000) {
        if (me == 0) fprintf(stderr, "usage: pingpong_bench [--repetitions N (1-100000)] SIZE...\n");
        MPI_Finalize();
        return 2;
    }
    for (int k = 0; k < nsizes; k++)
        if (sizes[k] > most) most = sizes[k];
    char *buf = calloc((size_t)most, 1);
    double *half = malloc(sizeof(double) * (size_t)reps);
    if (!buf || !half) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int peer = 1; peer < p; peer++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (me != 0 && me != peer) continue;
        for (int k = 0; k < nsizes; k++) {
            int n = (int)sizes[k];
            for (int r = -2; r < reps; r++) {
                double t0 = MPI_Wtime();
                if (me == 0) {
                    MPI_Send(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
                if (r >= 0) half[r] = (MPI_Wtime() - t0) / 2;
            }
            if (me == 0) {
                qsort(half, (size_t)reps, sizeof(double), cmp_double);
                printf("pingpong %d %ld %.9f\n", peer, sizes[k], half[reps / 2]);
                fflush(stdout);
            }
        }
    }
    free(buf);
    free(half);
    MPI_Finalize();
    return 0;
}
