/* The executor for the packet simulator: its three files compiled here, in
 * one unit, against the simulator's MPI (mpi.h beside this file), as
 * pmpi_exec.c compiles them for the PMPI library. */
#define TCX(fn) SIM_##fn
/* a paced rank sleeps to its link clock's deadline in one simulated sleep
 * (tc_exec_pace.c), or, with the host's cores modelled (where a rank off
 * its core reads nothing), wakes every TCX_IDLE_NAP to drive progress as
 * the testbed's ranks do (mpi_options::idle_wakes) */
void sim_sleep_c(double seconds);
int sim_idle_wakes_c(void);
#define TCX_SLEEP(seconds) sim_sleep_c(seconds)
#define TCX_IDLE_WAKES() sim_idle_wakes_c()
#include "tc_exec_view.c"
#include "tc_exec_pace.c"
#include "tc_exec.c"
