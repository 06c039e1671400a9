/*
 * All-to-all: Bruck et al., "Efficient algorithms for all-to-all
 * communications in multiport message-passing systems" (IEEE TPDS 1997),
 * the log-step index algorithm.  Block (o, d) travels the distance
 * delta = (d - o) mod p in hops of 2^k, one for each bit k of delta; at step
 * k rank r sends to r + 2^k every block it holds whose delta has bit k set.
 * Cost: ceil(log2 p) steps of alpha + (p/2) m beta each: fewer, larger
 * messages than p-1 direct ones, each byte sent about log2(p)/2 times.
 * Restrictions: none.  Planning: O(p^2 log p) block entries.
 */
#include "tc_internal.h"

#include <stdlib.h>

tc_status tc_a2a_bruck(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    (void)opt;
    int p = tc_topology_num_machines(topo);
    tc_schedule_builder *b;
    tc_status rc = tc_builder_create("bruck", p, (int64_t)p * 8, &b);
    int32_t *pairs = tc_xmalloc(sizeof(int32_t) * 2 * (size_t)(p ? p : 1));
    if (rc == TC_OK && !pairs) rc = tc_error_set(TC_ERR_NOMEM, __FILE__, __LINE__, "bruck: out of memory");
    int step = 0;
    for (int64_t hop = 1; rc == TC_OK && hop < p; hop *= 2, step++)
        for (int r = 0; rc == TC_OK && r < p; r++) {
            /* the block of distance delta held by r after the lower hops
             * started at o = r - (delta mod hop) */
            int32_t n = 0;
            for (int delta = 1; delta < p; delta++) {
                if (!(delta & hop)) continue;
                int o = (int)(((r - delta % hop) % p + p) % p);
                pairs[2 * n] = o;
                pairs[2 * n + 1] = (o + delta) % p;
                n++;
            }
            rc = tc_builder_add_blocks(b, step, r, (int)((r + hop) % p), pairs, n);
        }
    free(pairs);
    if (rc != TC_OK) { tc_builder_destroy(b); return rc; }
    return tc_builder_finish(b, sched);
}
