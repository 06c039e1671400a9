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

#endif
