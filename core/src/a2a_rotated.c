/*
 * All-to-all: rotated isend/irecv (MPICH's medium-message MPI_Alltoall):
 * every rank posts all its messages at once, rank i sending to i+1, i+2, ...
 * so that the targets of a moment are spread over the ranks.
 * Cost: one step of p-1 concurrent messages a rank.  Restrictions: none.
 * Planning: O(p^2).
 */
#include "tc_internal.h"

tc_status tc_a2a_rotated(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    (void)opt;
    int p = tc_topology_num_machines(topo);
    tc_schedule_builder *b;
    tc_status rc = tc_builder_create("rotated", p, (int64_t)p * (p - 1), &b);
    for (int i = 0; rc == TC_OK && i < p; i++)
        for (int k = 1; rc == TC_OK && k < p; k++) rc = tc_builder_add(b, 0, i, (i + k) % p);
    if (rc != TC_OK) { tc_builder_destroy(b); return rc; }
    return tc_builder_finish(b, sched);
}
