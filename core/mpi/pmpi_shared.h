/* What the PMPI library's two parts share: pmpi.c (configuration, rank
 * mapping, MPI_Alltoall, MPI_Finalize) and pmpi_coll.c (the rooted
 * collectives). */
#ifndef TC_PMPI_SHARED_H
#define TC_PMPI_SHARED_H

#include "topocoll/topocoll.h"

#define TCP_NAME_LEN 256

int tcp_world_rank(void);
/* Print "topocoll: error: " fmt (with a, b) on world rank 0 and abort the job. */
void tcp_fatal(const char *fmt, const char *a, const char *b);
/* This process's machine: TOPOCOLL_RANK_MAP, else its processor name. */
void tcp_my_machine(char *name);
/* The topology of TOPOCOLL_TOPOLOGY (NULL: unset), and the machine rank of a
 * name in it (exact, else up to the first dot; -1: not there). */
const tc_topology *tcp_topology(void);
int tcp_machine_rank(const char *name);
int tcp_verbose(void);
/* Delete what keyval caches on MPI_COMM_WORLD and MPI_COMM_SELF. */
void tcp_delete_cached(int keyval);
int tcp_stats(void);
/* Reads the library's configuration once (also calls tcp_coll_config). */
void tcp_load_config(void);
/* Reads its variables once; pmpi.c calls it from its own configuration. */
void tcp_coll_config(void);
/* Prints the collectives' stats (collective over MPI_COMM_WORLD); called by
 * MPI_Finalize before the MPI goes. */
void tcp_coll_finalize(void);

#endif
