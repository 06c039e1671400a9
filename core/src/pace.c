/* Pacing facts both executors of the IR share: the PMPI library (its link
 * clock, tc_exec_pace.c) and the packet simulator (core/packet), so that a
 * simulated run paces as a real one does. */
#include "tc_internal.h"

#include <stdlib.h>

/* The share of the narrowest rate bw a message from a to b gets (TC_TCP_GOODPUT
 * or TC_TCP_GOODPUT_FAST_CORE, topocoll.h). */
static double path_goodput(const tc_topology *t, int a, int b, double bandwidth, double bw, int32_t *edges)
{
    int n = tc_topology_path(t, a, b, edges), core = 0;
    for (int k = 0; k < n; k++) {
        const tc_link_decl *l = &t->links[edges[k] / 2];
        if (t->nodes[l->child].kind == TC_NODE_MACHINE) continue;      /* a machine's own link */
        if ((l->bandwidth > 0 ? l->bandwidth : bandwidth) <= bw * 1.000001) return TC_TCP_GOODPUT;
        core++;
    }
    return core ? TC_TCP_GOODPUT_FAST_CORE : TC_TCP_GOODPUT;
}

int tc_pace_rates(const tc_topology *t, int me, double bandwidth, double *rate)
{
    const double unknown = 1e-30;   /* below any real rate: marks links without one */
    int known = 0, p = tc_topology_num_machines(t);
    double lat, bw;
    int32_t *edges = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    for (int r = 0; r < p; r++) {
        rate[r] = 0;
        if (r == me) continue;
        tc_topology_path_cost(t, me, r, bandwidth > 0 ? bandwidth : unknown, 0, &lat, &bw);
        if (bw > unknown && edges) {
            rate[r] = bw * path_goodput(t, me, r, bandwidth > 0 ? bandwidth : unknown, bw, edges);
            known++;
        }
    }
    free(edges);
    return known;
}

double tc_pace_lead(int algorithm, const tc_topology *t, double bandwidth)
{
    if (algorithm >= 0 && algorithm < tc_algorithm_count() &&
        (tc_algorithm_properties(algorithm) & TC_PROP_CAPACITATED) &&
        tc_topology_capacitated_load(t, bandwidth > 0 ? bandwidth : TC_DEFAULT_BANDWIDTH, NULL, NULL) <
            tc_topology_alltoall_load(t))
        return TC_DEFAULT_CAPACITATED_PACE_LEAD;
    return TC_DEFAULT_PACE_LEAD;
}
