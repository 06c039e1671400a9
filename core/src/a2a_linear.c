/*
 * All-to-all: linear (LAM/MPI's MPI_Alltoall): every rank posts all its
 * messages at once, rank i sending to 0, 1, ..., p-1 in that order.
 * Cost: one step of p-1 concurrent messages a rank, (p-1)(alpha + m beta) at
 *   best; on a tree the bottleneck link carries its whole load at once.
 * Restrictions: none.  Planning: O(p^2).
 */
#include "tc_internal.h"

tc_status tc_a2a_linear(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    (void)opt;
    int p = tc_topology_num_machines(topo);
    tc_schedule_builder *b;
    tc_status rc = tc_builder_create("linear", p, (int64_t)p * (p - 1), &b);
    for (int i = 0; rc == TC_OK && i < p; i++)
        for (int d = 0; rc == TC_OK && d < p; d++)
            if (d != i) rc = tc_builder_add(b, 0, i, d);
    if (rc != TC_OK) { tc_builder_destroy(b); return rc; }
    return tc_builder_finish(b, sched);
}
