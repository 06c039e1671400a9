/*
 * All-to-all: ring, MPICH's large-message MPI_Alltoall for p not a power of
 * two.  Step j = 1..p-1: rank i sends to i+j, receives from i-j: the same
 * schedule as Tam & Wang's shift exchange (a2a_shift.c), kept under the name
 * MPICH users know.  Cost: (p-1)(alpha + m beta).  Restrictions: none.
 */
#include "tc_internal.h"

tc_status tc_a2a_ring(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    (void)opt;
    return tc_shift_plan(topo, "ring", sched);
}
