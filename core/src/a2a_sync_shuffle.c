/*
 * All-to-all: synchronous shuffle exchange (Tam & Wang, Algorithm 2).  Each
 * block is cut into k segments; at instant s = 0..k-1 rank r sends segment s
 * of its blocks for r+1, r+2, ..., r+p-1, in that order, so at any moment of
 * a logically synchronous run every rank targets a different rank and all
 * p-1 messages share one pipeline with a single start-up.  In the IR instant
 * s is step s holding p-1 pieces a rank (the executor starts them in order
 * and completes them before the next instant: the "synchronous" part).
 * k = tc_plan_options.segments (the PMPI library derives it from
 * TOPOCOLL_SEGMENT_SIZE and the block size).  k = 1 is the MPICH isend/irecv
 * schedule (rotated).
 * Cost (their eq. 4): k (p-1) g + T_w: optimal in their model, one start-up.
 * Restrictions: none.  Planning: O(k p^2).
 */
#include "tc_internal.h"

tc_status tc_a2a_sync_shuffle(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    int p = tc_topology_num_machines(topo), k = opt->segments;
    tc_schedule_builder *b;
    tc_status rc = tc_builder_create("sync-shuffle", p, (int64_t)k * p * (p - 1), &b);
    for (int s = 0; rc == TC_OK && s < k && p > 1; s++)
        for (int r = 0; rc == TC_OK && r < p; r++)
            for (int i = 1; rc == TC_OK && i < p; i++) rc = tc_builder_add_part(b, s, r, (r + i) % p, s, k);
    if (rc != TC_OK) { tc_builder_destroy(b); return rc; }
    return tc_builder_finish(b, sched);
}
