/*
 * All-to-all: group shuffle exchange (Tam & Wang, Algorithm 3).  The rounds
 * of the edge colouring of pairwise exchange (a2a_pairwise.c) are taken w at
 * a time: in each of ceil(c/w) rounds (c = p-1 for even p, p for odd p) a
 * rank runs a synchronous shuffle (a2a_sync_shuffle.c) with its w partners
 * of those colouring rounds: segment s of each of the w blocks, s = 0..k-1.
 * Limiting the fan-out to w bounds how many senders can target one output
 * port at once (their head-of-line argument) while keeping few rounds.
 * w = tc_plan_options.fanout (TOPOCOLL_FANOUT), k = segments.  Departure:
 * the paper assumes p even; for odd p the colouring has p rounds with one
 * idle rank each, so a group may hold fewer than w partners for some ranks.
 * Cost (their eq. 5): k g (p-1) + ceil((p-1)/w) T_w.
 * Restrictions: none.  Planning: O(k p^2).
 */
#include "tc_internal.h"

tc_status tc_a2a_group_shuffle(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    int p = tc_topology_num_machines(topo), k = opt->segments, w = opt->fanout;
    int c = tc_edge_colour_rounds(p), step = 0;
    tc_schedule_builder *b;
    tc_status rc = tc_builder_create("group-shuffle", p, (int64_t)k * p * (p - 1), &b);
    for (int g = 0; rc == TC_OK && g < c; g += w)
        for (int s = 0; rc == TC_OK && s < k; s++, step++)
            for (int r = 0; rc == TC_OK && r < p; r++)
                for (int round = g; rc == TC_OK && round < g + w && round < c; round++) {
                    int j = tc_edge_colour(r, round, p);
                    if (j != r) rc = tc_builder_add_part(b, step, r, j, s, k);
                }
    if (rc != TC_OK) { tc_builder_destroy(b); return rc; }
    return tc_builder_finish(b, sched);
}
