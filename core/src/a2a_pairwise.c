/*
 * All-to-all: pairwise exchange (Tam & Wang, section 3.2).  Each step pairs
 * the ranks and each pair swaps its two blocks.  p a power of two: step
 * j = 1..p-1 pairs i with i XOR j (MPICH's large-message MPI_Alltoall).
 * Otherwise Tam & Wang's edge colouring of the complete graph (their
 * Figure 1): with c = p (p odd) or p-1 (p even), round r = 0..c-1 pairs
 * i < c with (r - i) mod c; the rank paired with itself idles when p is odd
 * (p rounds), or meets rank c when p is even (p-1 rounds).
 * Cost: p-1 (p even) or p (p odd) steps of alpha + m beta; one send and one
 * receive a rank a step.  Restrictions: none.  Planning: O(p^2).
 */
#include "tc_internal.h"

int tc_edge_colour_rounds(int p) { return p < 2 ? 0 : p % 2 ? p : p - 1; }

int tc_edge_colour(int i, int r, int p)
{
    int c = p % 2 ? p : p - 1;
    if (i == c) return (int)((int64_t)r * ((c + 1) / 2) % c);  /* r / 2 mod c: the rank that would idle */
    int j = ((r - i) % c + c) % c;
    return j == i && c != p ? c : j;
}

tc_status tc_a2a_pairwise(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    (void)opt;
    int p = tc_topology_num_machines(topo), pow2 = (p & (p - 1)) == 0;
    int rounds = pow2 ? p - 1 : tc_edge_colour_rounds(p);
    tc_schedule_builder *b;
    tc_status rc = tc_builder_create("pairwise", p, (int64_t)p * (p - 1), &b);
    for (int r = 0; rc == TC_OK && r < rounds; r++)
        for (int i = 0; rc == TC_OK && i < p; i++) {
            int j = pow2 ? i ^ (r + 1) : tc_edge_colour(i, r, p);
            if (j != i) rc = tc_builder_add(b, r, i, j);
        }
    if (rc != TC_OK) { tc_builder_destroy(b); return rc; }
    return tc_builder_finish(b, sched);
}
