/* The executor for the packet simulator: its three files compiled here, in
 * one unit, against the simulator's MPI (mpi.h beside this file), as
 * pmpi_exec.c compiles them for the PMPI library. */
#define TCX(fn) SIM_##fn
/* a paced rank sleeps to its link clock's deadline in one simulated sleep
 * (tc_exec_pace.c): nothing happens at the naps between */
void sim_sleep_c(double seconds);
#define TCX_SLEEP(seconds) sim_sleep_c(seconds)
#include "tc_exec_view.c"
#include "tc_exec_pace.c"
#include "tc_exec.c"
