/* The capacitated all-to-all on random trees of unequal link rates (also
 * under ASan/UBSan): complete, every link within its capacity every phase,
 * at most 1.05x the capacitated bound, and its execution syncs ordered and
 * free of deadlock. */
#include "topocoll/topocoll.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ULL;
static int draw(int n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (uint64_t)n);
}

/* A random tree in topocoll YAML: up to 12 switches, up to 40 machines,
 * uplinks at 1..8 x the hosts' 100 Mbit/s, now and then a host at 2x. */
static size_t random_tree(char *buf, size_t len)
{
    int n = 1 + draw(12), machines = 2 + draw(39), parent[12], chain = draw(3) == 0;
    int count[12] = {0};
    for (int i = 0; i < machines; i++) count[draw(n)]++;
    size_t w = (size_t)snprintf(buf, len, "bandwidth: 100Mbit\nswitches:\n");
    int m = 0;
    for (int s = 0; s < n; s++) parent[s] = s == 0 ? -1 : chain ? s - 1 : draw(s);
    for (int s = 0; s < n && w < len; s++) {
        w += (size_t)snprintf(buf + w, len - w, "  - name: s%d\n", s);
        if (count[s]) {
            w += (size_t)snprintf(buf + w, len - w, "    machines: [");
            for (int i = 0; i < count[s]; i++, m++) w += (size_t)snprintf(buf + w, len - w, "%sm%d", i ? ", " : "", m);
            w += (size_t)snprintf(buf + w, len - w, "]\n");
        }
        int kids = 0;
        for (int c = s + 1; c < n; c++)
            if (parent[c] == s) w += (size_t)snprintf(buf + w, len - w, "%s s%d", kids++ ? "," : "    switches: [", c);
        if (kids) w += (size_t)snprintf(buf + w, len - w, "]\n");
        if (parent[s] >= 0) w += (size_t)snprintf(buf + w, len - w, "    uplink: {bandwidth: %dMbit}\n", 100 * (1 + draw(8)));
    }
    if (draw(4) == 0 && w < len) w += (size_t)snprintf(buf + w, len - w, "machines:\n  m0: {bandwidth: 200Mbit}\n");
    return w;
}

int main(void)
{
    char text[8192];
    int at_bound = 0, trees = 120;
    for (int t = 0; t < trees; t++) {
        size_t len = random_tree(text, sizeof text);
        tc_topology *topo = NULL;
        tc_status rc = tc_topology_parse(text, len, TC_FORMAT_YAML, "random.yaml", &topo);
        CHECK(rc == TC_OK, "tree %d: %s\n%s", t, tc_error_message(), text);
        if (rc) continue;
        tc_schedule *s = NULL;
        rc = tc_alltoall_plan_for_execution("capacitated", topo, 1, &s);
        CHECK(rc == TC_OK, "tree %d: %s", t, tc_error_message());
        if (rc == TC_OK) {
            tc_verify_report r;
            tc_sync_report sr;
            CHECK(tc_schedule_verify(s, topo, &r) == TC_OK && r.complete && r.within_capacity, "tree %d: %s\n%s", t,
                  r.problem, text);
            CHECK(r.num_steps <= r.capacitated_load * 105 / 100, "tree %d: %d phases, bound %lld", t, r.num_steps,
                  (long long)r.capacitated_load);
            at_bound += r.capacitated_optimal;
            CHECK(tc_schedule_verify_syncs(s, topo, 1, &sr) == TC_OK && sr.ordered && sr.acyclic, "tree %d: %s", t,
                  sr.problem);
            tc_schedule_destroy(s);
        }
        tc_topology_destroy(topo);
    }
    CHECK(at_bound >= trees * 99 / 100, "%d of %d trees at the bound", at_bound, trees);

    /* the pacing facts the executors share: a path's narrowest link times
     * TCP's goodput (more of it through faster switch links); the
     * capacitated lead only where a link carries several */
    tc_topology *ls = NULL, *flat = NULL;
    const char *leaf_spine = "bandwidth: 100Mbit\nswitches:\n  - name: root\n    switches: [a, b]\n"
                             "  - name: a\n    machines: [m0, m1]\n    uplink: {bandwidth: 200Mbit}\n"
                             "  - name: b\n    machines: [m2, m3]\n    uplink: {bandwidth: 200Mbit}\n";
    CHECK(tc_topology_parse(leaf_spine, strlen(leaf_spine), TC_FORMAT_YAML, "leaf-spine", &ls) == TC_OK, "%s", tc_error_message());
    CHECK(tc_topology_synthetic("chain:2,2", &flat) == TC_OK, "%s", tc_error_message());
    if (ls && flat) {
        double rate[4];
        CHECK(tc_pace_rates(ls, 0, 0, rate) == 3 && rate[0] == 0 && rate[1] == 1e8 * TC_TCP_GOODPUT &&
                  rate[3] == 1e8 * TC_TCP_GOODPUT_FAST_CORE, "leaf-spine rates %g %g %g", rate[0], rate[1], rate[3]);
        tc_topology *half = NULL;   /* one uplink as slow as the hosts: an equally loaded hop on the way */
        const char *half_fast = "bandwidth: 100Mbit\nswitches:\n  - name: root\n    switches: [a, b]\n"
                                "  - name: a\n    machines: [m0, m1]\n    uplink: {bandwidth: 200Mbit}\n"
                                "  - name: b\n    machines: [m2, m3]\n";
        CHECK(tc_topology_parse(half_fast, strlen(half_fast), TC_FORMAT_YAML, "half", &half) == TC_OK, "%s",
              tc_error_message());
        CHECK(half && tc_pace_rates(half, 0, 0, rate) == 3 && rate[2] == 1e8 * TC_TCP_GOODPUT,
              "a path through an uplink at the hosts' rate: %g", rate[2]);
        tc_topology_destroy(half);
        CHECK(tc_pace_rates(flat, 1, 0, rate) == 0, "no rates known without a bandwidth");
        CHECK(tc_pace_rates(flat, 1, 1e9, rate) == 3 && rate[2] == 1e9 * TC_TCP_GOODPUT, "given bandwidth");
        int cap = tc_algorithm_find("capacitated"), fy = tc_algorithm_find("faraj-yuan");
        CHECK(tc_pace_lead(cap, ls, 0) == TC_DEFAULT_CAPACITATED_PACE_LEAD, "capacitated lead on a leaf-spine");
        CHECK(tc_pace_lead(fy, ls, 0) == TC_DEFAULT_PACE_LEAD, "faraj-yuan's lead");
        CHECK(tc_pace_lead(cap, flat, 0) == TC_DEFAULT_PACE_LEAD, "capacitated on equal links");
        CHECK(tc_pace_lead(-1, flat, 0) == TC_DEFAULT_PACE_LEAD, "no algorithm");
    }
    tc_topology_destroy(ls);
    tc_topology_destroy(flat);
    return CHECK_SUMMARY();
}
