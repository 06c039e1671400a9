/*
 * All-to-all: ring (MPICH's large-message MPI_Alltoall for p not a power of
 * two): at step j = 1..p-1 rank i sends to i+j and receives from i-j.
 * Cost: (p-1)(alpha + m beta); one send and one receive a rank a step.
 * Restrictions: none.  Planning: O(p^2).
 */
#include "tc_internal.h"

tc_status tc_a2a_ring(const tc_topology *topo, tc_schedule **sched)
{
    int p = tc_topology_num_machines(topo);
    tc_schedule_builder *b;
    tc_status rc = tc_builder_create("ring", p, (int64_t)p * (p - 1), &b);
    for (int j = 1; rc == TC_OK && j < p; j++)
        for (int i = 0; rc == TC_OK && i < p; i++) rc = tc_builder_add(b, j - 1, i, (i + j) % p);
    if (rc != TC_OK) { tc_builder_destroy(b); return rc; }
    return tc_builder_finish(b, sched);
}
