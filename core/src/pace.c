/* Pacing facts both executors of the IR share: the PMPI library (its link
 * clock, tc_exec_pace.c) and the packet simulator (core/packet), so that a
 * simulated run paces as a real one does. */
#include "tc_internal.h"

int tc_pace_rates(const tc_topology *t, int me, double bandwidth, double *rate)
{
    const double unknown = 1e-30;   /* below any real rate: marks links without one */
    int known = 0, p = tc_topology_num_machines(t);
    double lat, bw;
    for (int r = 0; r < p; r++) {
        rate[r] = 0;
        if (r == me) continue;
        tc_topology_path_cost(t, me, r, bandwidth > 0 ? bandwidth : unknown, 0, &lat, &bw);
        if (bw > unknown) { rate[r] = bw * TC_TCP_GOODPUT; known++; }
    }
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
