/* The executor for the PMPI library: its three files compiled here, in one
 * unit, with the MPI's profiling entry points (a generated routine compiles
 * the same files with MPI_*). */
#define TCX(fn) PMPI_##fn
#include "tc_exec_view.c"
#include "tc_exec_pace.c"
#include "tc_exec.c"
