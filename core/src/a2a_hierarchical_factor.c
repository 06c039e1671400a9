/*
 * All-to-all for clusters of SMP machines: the hierarchical factor algorithm
 * (Sanders & Traff, Euro-Par 2002; Traff, EuroPVM/MPI 2002).  Hosts (a
 * machine with its ranks, tc_topology_machine_host) are paired by the edge
 * colouring of the complete graph on hosts (a 1-factorisation for any host
 * count; a2a_pairwise.c).  In the round of hosts A and B, with a and b ranks,
 * the a*b blocks A owes B go one at a time, as do the b*a blocks B owes A:
 * sub-step t carries A's rank t mod a -> B's rank (t div a + t mod a) mod b,
 * and B's rank t mod b -> A's rank (t div b + t mod b) mod a, which visits
 * every pair once.  Blocks between ranks of one host go first, all at once
 * (shared memory).  A round lasts as long as its largest pair.
 * Departure: the one-message-at-a-time order on a host's link is kept by the
 * executor's pairwise syncs (the faraj-yuan mechanism: the previous user of
 * the link signals the next, here a rank of the same host), computed from
 * the schedule; no token circulates among the host's ranks.
 * Cost: sum over rounds of max a*b (alpha + m beta), plus one intra-host
 * step; with one rank a host it is pairwise exchange with the edge colouring.
 * Restrictions: none.  Planning: O(p^2 + hosts^2).
 */
#include "tc_internal.h"

#include <stdlib.h>

tc_status tc_a2a_hierarchical_factor(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    (void)opt;
    tc_status rc = TC_OK;
    int p = tc_topology_num_machines(topo), V = tc_topology_num_nodes(topo), H = 0;
    int *host_id = tc_xmalloc(sizeof(int) * (size_t)V), *begin = tc_xcalloc((size_t)p + 2, sizeof(int));
    int *ranks = tc_xmalloc(sizeof(int) * (size_t)(p ? p : 1)), *hid = tc_xmalloc(sizeof(int) * (size_t)(p ? p : 1));
    tc_schedule_builder *b = NULL;
    if (!host_id || !begin || !ranks || !hid) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "hierarchical-factor: out of memory");
    /* hosts numbered in rank order; ranks[begin[h] .. begin[h+1]) are host h's */
    for (int i = 0; i < V; i++) host_id[i] = -1;
    for (int r = 0; r < p; r++) {
        int node = tc_topology_machine_host(topo, r);
        if (host_id[node] < 0) host_id[node] = H++;
        hid[r] = host_id[node];
        begin[hid[r] + 2]++;
    }
    for (int h = 2; h <= H + 1; h++) begin[h] += begin[h - 1];
    for (int r = 0; r < p; r++) ranks[begin[hid[r] + 1]++] = r;
    TC_TRY(rc, out, tc_builder_create("hierarchical-factor", p, (int64_t)p * (p - 1), &b));
    int step = 0, local = 0;
    for (int h = 0; h < H; h++)
        for (int x = begin[h]; x < begin[h + 1]; x++)
            for (int y = begin[h]; y < begin[h + 1]; y++)
                if (x != y) { TC_TRY(rc, out, tc_builder_add(b, 0, ranks[x], ranks[y])); local = 1; }
    step = local;
    for (int round = 0; round < tc_edge_colour_rounds(H); round++) {
        int longest = 0;
        for (int A = 0; A < H; A++) {
            int B = tc_edge_colour(A, round, H);
            if (B <= A) continue;
            int a = begin[A + 1] - begin[A], bb = begin[B + 1] - begin[B];
            if (a * bb > longest) longest = a * bb;
            for (int t = 0; t < a * bb; t++) {
                int x = t % a, y = (t / a + t % a) % bb;
                TC_TRY(rc, out, tc_builder_add(b, step + t, ranks[begin[A] + x], ranks[begin[B] + y]));
                y = t % bb;
                x = (t / bb + t % bb) % a;
                TC_TRY(rc, out, tc_builder_add(b, step + t, ranks[begin[B] + y], ranks[begin[A] + x]));
            }
        }
        step += longest;
    }
    rc = tc_builder_finish(b, sched);
    b = NULL;
out:
    tc_builder_destroy(b);
    free(host_id); free(begin); free(ranks); free(hid);
    return rc;
}
