/*
 * libtopocoll_pmpi: MPI_Alltoall and the rooted collectives through
 * topocoll, as a PMPI library (LD_PRELOAD it, or link it before the MPI).
 * Its variables are those of docs/interfaces.md, read by pmpi_config.c;
 * pmpi_alltoall.c runs MPI_Alltoall, pmpi_alltoallv.c MPI_Alltoallv, pmpi_coll.c the rooted collectives,
 * pmpi_ranks.c maps ranks to machines.  This file: MPI_Init's check that
 * the library matches the MPI, and MPI_Finalize.
 */
#include "pmpi_shared.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The library is built for one MPI's ABI (Open MPI's handles are pointers,
 * MPICH's integers): preloaded into a program of the other MPI, its first
 * collective would crash.  MPI_Init is the first place to tell, by the
 * library's version text (both MPIs share that function's signature). */
#if defined(OMPI_MAJOR_VERSION) && !defined(TOPOCOLL_SMPI)
#define BUILT_FOR "Open MPI"
#elif defined(MPICH_VERSION) && !defined(TOPOCOLL_SMPI)
#define BUILT_FOR "MPICH"
#endif
static void check_library(void)
{
#ifdef BUILT_FOR
    static char version[8192];   /* MPICH's MPI_MAX_LIBRARY_VERSION_STRING, the larger */
    int len = 0;
    if (PMPI_Get_library_version(version, &len) != MPI_SUCCESS || strstr(version, BUILT_FOR)) return;
    const char *other = strstr(version, "Open MPI") ? "openmpi" : strstr(version, "MPICH") ? "mpich" : NULL;
    const char *rank = getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK") : getenv("PMI_RANK");
    if (!rank || !strcmp(rank, "0")) {
        char *nl = strchr(version, '\n');
        if (nl) *nl = '\0';
        fprintf(stderr, "topocoll: error: the preloaded PMPI library is built for " BUILT_FOR
                        ", but the program runs on another MPI (%.100s); preload the one built for it: %s\n",
                version, other ? (strcmp(other, "mpich") ? "$(topocoll config --pmpi-lib --mpi openmpi)"
                                                         : "$(topocoll config --pmpi-lib --mpi mpich)")
                               : "none is built for this MPI");
    } else {
        /* the others give rank 0 time to say why: the launcher kills the
         * job when the first rank exits, and under load it took rank 0
         * before its message was out */
        sleep(2);
    }
    _exit(1);
#endif
}

#ifndef TOPOCOLL_SMPI   /* SMPI starts its processes itself */
int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) check_library();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) check_library();
    return rc;
}
#endif

int MPI_Finalize(void)
{
    pmpi_config_load();   /* every rank takes part in the stats reductions */
    pmpi_alltoall_finalize();
    pmpi_alltoallv_finalize();
    pmpi_coll_finalize();
    pmpi_config_free();
    return PMPI_Finalize();
}
