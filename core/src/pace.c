/* Pacing facts both executors of the IR share: the PMPI library (its link
 * clock, tc_exec_pace.c) and the packet simulator (core/packet), so that a
 * simulated run paces as a real one does. */
#include "tc_internal.h"

#include <stdlib.h>

int tc_pace_rates(const tc_topology *t, int me, double bandwidth, double *rate)
{
    const double unknown = 1e-30;   /* below any real rate: marks links without one */
    const double dflt = bandwidth > 0 ? bandwidth : unknown;
    int known = 0, p = tc_topology_num_machines(t);
    int32_t *edges = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    for (int r = 0; r < p; r++) {
        rate[r] = 0;
        if (r == me || !edges) continue;
        int n = tc_topology_path(t, me, r, edges), core = 0, core_at_bw = 0;
        double bw = 0;   /* the path's narrowest link */
        for (int k = 0; k < n; k++) {
            double x = t->links[edges[k] / 2].bandwidth > 0 ? t->links[edges[k] / 2].bandwidth : dflt;
            if (bw == 0 || x < bw) bw = x;
        }
        if (bw <= unknown) continue;
        for (int k = 0; k < n; k++) {   /* its switch-to-switch links: all faster than bw? */
            const tc_link_decl *l = &t->links[edges[k] / 2];
            if (t->nodes[l->child].kind == TC_NODE_MACHINE) continue;   /* a machine's own link */
            core++;
            core_at_bw += (l->bandwidth > 0 ? l->bandwidth : dflt) <= bw * 1.000001;
        }
        rate[r] = bw * (core && !core_at_bw ? TC_TCP_GOODPUT_FAST_CORE : TC_TCP_GOODPUT);
        known++;
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
