/*
 * All-to-all: shift exchange (Tam & Wang, "Efficient scheduling of complete
 * exchange on clusters", Algorithm 1).  Round i = 1..p-1: rank r sends its
 * block to r+i and receives from r-i, so every rank has one partner each way
 * a round and no two ranks send to one.
 * Cost (their eq. 3): (p-1)(k g + T_w) = (p-1)(alpha + m beta): a start-up a
 * round, the bubbles between rounds that sync-shuffle removes.
 * Restrictions: none.  Planning: O(p^2).
 */
#include "tc_internal.h"

tc_status tc_shift_plan(const tc_topology *topo, const char *name, tc_schedule **sched)
{
    int p = tc_topology_num_machines(topo);
    tc_schedule_builder *b;
    tc_status rc = tc_builder_create(name, p, (int64_t)p * (p - 1), &b);
    for (int i = 1; rc == TC_OK && i < p; i++)
        for (int r = 0; rc == TC_OK && r < p; r++) rc = tc_builder_add(b, i - 1, r, (r + i) % p);
    if (rc != TC_OK) { tc_builder_destroy(b); return rc; }
    return tc_builder_finish(b, sched);
}

tc_status tc_a2a_shift(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    (void)opt;
    return tc_shift_plan(topo, "shift", sched);
}
