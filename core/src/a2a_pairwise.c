/*
 * All-to-all: pairwise exchange.  Each step pairs the ranks and each pair
 * swaps its two blocks.  p a power of two: step j = 1..p-1 pairs i with
 * i XOR j (MPICH's large-message MPI_Alltoall).  Otherwise an edge colouring
 * of the complete graph (Tam & Wang): p odd, round r = 0..p-1 pairs i with
 * (r - i) mod p, the rank paired with itself idling (p rounds); p even, the
 * odd construction on ranks 0..p-2 with rank p-1 taking the idle rank
 * (p-1 rounds).
 * Cost: p-1 (p even) or p (p odd) steps of alpha + m beta; one send and one
 * receive a rank a step.  Restrictions: none.  Planning: O(p^2).
 */
#include "tc_internal.h"

static int partner(int i, int r, int p)
{
    if ((p & (p - 1)) == 0) return i ^ (r + 1);
    int m = p % 2 ? p : p - 1;           /* the odd colouring's size */
    if (i == m) return (int)((int64_t)r * ((m + 1) / 2) % m);  /* r / 2 mod m: the idle rank */
    int j = ((r - i) % m + m) % m;
    return j == i && m != p ? m : j;
}

tc_status tc_a2a_pairwise(const tc_topology *topo, tc_schedule **sched)
{
    int p = tc_topology_num_machines(topo);
    int rounds = (p & (p - 1)) == 0 || p % 2 == 0 ? p - 1 : p;
    tc_schedule_builder *b;
    tc_status rc = tc_builder_create("pairwise", p, (int64_t)p * (p - 1), &b);
    for (int r = 0; rc == TC_OK && r < rounds; r++)
        for (int i = 0; rc == TC_OK && i < p; i++) {
            int j = partner(i, r, p);
            if (j != i) rc = tc_builder_add(b, r, i, j);
        }
    if (rc != TC_OK) { tc_builder_destroy(b); return rc; }
    return tc_builder_finish(b, sched);
}
