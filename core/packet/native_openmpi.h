/* The MPI's own MPI_Alltoall in the packet simulator: Open MPI 4.1's
 * (coll/tuned, fixed decision rules; Debian 12's Open MPI is 4.1.4). */
#ifndef TOPOCOLL_NATIVE_OPENMPI_H
#define TOPOCOLL_NATIVE_OPENMPI_H

/* Open MPI's coll_tuned_alltoall_algorithm numbers. */
enum { OMPI_A2A_LINEAR = 1, OMPI_A2A_PAIRWISE = 2, OMPI_A2A_BRUCK = 3, OMPI_A2A_LINEAR_SYNC = 4, OMPI_A2A_TWO_PROC = 5 };

/* The algorithm the fixed rules pick for p ranks and blocks of `block`
 * bytes, and its name. */
int native_openmpi_choice(int p, long long block, const char **name);
/* Run algorithm alg on the simulated MPI as rank me (all ranks call it):
 * linear and linear_sync (with the default of no request limit) post every
 * receive (from me+1, me+2, ...) and every send (to me-1, me-2, ...) and
 * wait for all; pairwise and two_proc exchange with me+k / me-k one step at
 * a time.  Returns 0, or -1 for modified_bruck (run the IR's bruck instead:
 * the same store-and-forward steps). */
int native_openmpi_run(int alg, int me, int p, const char *sbuf, char *rbuf, long long block);

/* Whether ranks a and b of p talk in an allgather of a few bytes, as Open
 * MPI's fixed rules run it: recursive doubling on a power of two ranks (r
 * and r xor 2^k), Bruck's otherwise (r sends to r - 2^k, hears from
 * r + 2^k).  The PMPI library's start-up allgathers (pmpi_ranks.c) so
 * connect those pairs before a job's first call: the testbed's traces show
 * 32 pairs of 2 x 8 and 36 of 3 x 4 open before it. */
bool native_openmpi_allgather_pair(int a, int b, int p);

#endif
