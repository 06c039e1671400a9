/*
 * All-to-all across clusters: the Local Group (LG) algorithm (Steffenel,
 * Martinasso & Trystram, section VI.B), extended to k clusters.
 *  1. Local phase: within each cluster, a shift exchange (a2a_shift.c) in
 *     which rank i's message to j carries its own block for j and every block
 *     of i's for another cluster that j will forward (j is its "agent").
 *  2. Inter-cluster phase: clusters are paired by the edge colouring of the
 *     complete graph on clusters (a2a_pairwise.c; their paper has k = 2).  For
 *     a pair S (a ranks) and L (b >= a ranks), L is cut into groups of a
 *     ranks; in step s = 0..ceil(b/a)-1, S[t] sends group s's member t all a
 *     blocks of S for it, and group s sends S[t] all of its blocks for S[t].
 *     Every byte crosses the links between the clusters once, in messages of
 *     a blocks instead of one.
 * Agents: the block of x in S for the q-th rank of L waits at S[q mod a]
 * (their "j mod n1"); the block of y in group s of L for S[t] waits at group
 * member t (their "floor(i/n1) n1 + j").  Departures: (1) when the last
 * group has g < a members the paper's agent floor(i/n1) n1 + j does not
 * exist for t >= g; we use member t mod g, which then sends to several ranks
 * of S in that step.  (2) Their inter-cluster loop runs i = 1..n1-1; rank 0
 * of C1 must take part too (their own example pairs nodes 0 and 3), so
 * i = 0..n1-1 here.
 * Clusters: tc_plan_options.clusters, else tc_topology_clusters (the parts
 * left when the bottleneck links are cut, so those links carry each block
 * that must cross them exactly once).
 * Cost (their eq. 7, k = 2): max(T_C1, T_C2) + ceil(n2/n1)(alpha_w + beta_w m n1).
 * Restrictions: none.  Planning: O(p^2) blocks.
 */
#include "tc_internal.h"

#include <stdlib.h>

typedef struct lg { int K; int *cl, *begin, *member, *pos; } lg;

/* The agent holding block (x, y) of different clusters before it crosses. */
static int agent_of(const lg *g, int x, int y)
{
    int A = g->cl[x], B = g->cl[y], a = g->begin[A + 1] - g->begin[A], b = g->begin[B + 1] - g->begin[B];
    int small_first = a < b || (a == b && A < B);
    if (small_first) return g->member[g->begin[A] + g->pos[y] % a];       /* S -> L */
    int s = g->pos[x] / b, gs = a - s * b < b ? a - s * b : b;          /* x in group s of L (L = A, S = B) */
    return g->member[g->begin[A] + s * b + g->pos[y] % gs];
}

tc_status tc_a2a_local_group(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    tc_status rc = TC_OK;
    int p = tc_topology_num_machines(topo), n = p ? p : 1;
    lg g = {0, tc_xmalloc(sizeof(int) * (size_t)n), tc_xcalloc((size_t)n + 2, sizeof(int)),
            tc_xmalloc(sizeof(int) * (size_t)n), tc_xmalloc(sizeof(int) * (size_t)n)};
    int *ids = tc_xmalloc(sizeof(int) * (size_t)n), *map = tc_xmalloc(sizeof(int) * (size_t)n);
    int32_t *pairs = tc_xmalloc(sizeof(int32_t) * 2 * (size_t)n);
    tc_schedule_builder *b = NULL;
    if (!g.cl || !g.begin || !g.member || !g.pos || !ids || !map || !pairs)
        TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "local-group: out of memory");
    if (opt->clusters) {
        for (int r = 0; r < p; r++) {
            if (opt->clusters[r] < 0) TC_FAIL_GOTO(rc, out, TC_ERR_ARG, "local-group: rank %d has cluster %d", r, opt->clusters[r]);
            ids[r] = opt->clusters[r];
        }
    } else if (tc_topology_clusters(topo, TC_DEFAULT_BANDWIDTH, ids) < 0)
        TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "local-group: out of memory");
    /* clusters renumbered 0..K-1 in rank order, members in rank order */
    for (int r = 0; r < p; r++) {
        int k = 0;
        while (k < g.K && map[k] != ids[r]) k++;
        if (k == g.K) map[g.K++] = ids[r];
        g.cl[r] = k;
        g.begin[k + 2]++;
    }
    for (int k = 2; k <= g.K + 1; k++) g.begin[k] += g.begin[k - 1];
    for (int k = 0; k < g.K; k++) map[k] = 0;    /* now: members placed so far */
    for (int r = 0; r < p; r++) {
        g.pos[r] = map[g.cl[r]]++;
        g.member[g.begin[g.cl[r] + 1]++] = r;
    }
    TC_TRY(rc, out, tc_builder_create("local-group", p, (int64_t)p * 4, &b));

    /* 1. local phase: shift within each cluster, bundles for the agents */
    int local_steps = 0;
    for (int C = 0; C < g.K; C++) {
        int nc = g.begin[C + 1] - g.begin[C];
        if (nc - 1 > local_steps) local_steps = nc - 1;
        for (int i = 1; i < nc; i++)
            for (int x = 0; x < nc; x++) {
                int src = g.member[g.begin[C] + x], dst = g.member[g.begin[C] + (x + i) % nc], m = 0;
                pairs[2 * m] = src; pairs[2 * m + 1] = dst; m++;
                for (int y = 0; y < p; y++)
                    if (g.cl[y] != C && agent_of(&g, src, y) == dst) { pairs[2 * m] = src; pairs[2 * m + 1] = y; m++; }
                if (m == 1) TC_TRY(rc, out, tc_builder_add(b, i - 1, src, dst));
                else TC_TRY(rc, out, tc_builder_add_blocks(b, i - 1, src, dst, pairs, m));
            }
    }
    /* 2. inter-cluster phase: pairs of clusters by the edge colouring */
    int step = local_steps;
    for (int round = 0; round < tc_edge_colour_rounds(g.K); round++) {
        int longest = 0;
        for (int A = 0; A < g.K; A++) {
            int B = tc_edge_colour(A, round, g.K);
            if (B <= A) continue;
            int a = g.begin[A + 1] - g.begin[A], bb = g.begin[B + 1] - g.begin[B];
            int S = a <= bb ? A : B, L = a <= bb ? B : A, ns = a <= bb ? a : bb, nl = a <= bb ? bb : a;
            int groups = (nl + ns - 1) / ns;
            if (groups > longest) longest = groups;
            for (int s = 0; s < groups; s++) {
                int gs = nl - s * ns < ns ? nl - s * ns : ns;
                for (int t = 0; t < gs; t++) {   /* S[t] -> group s member t: S's blocks for it */
                    int to = g.member[g.begin[L] + s * ns + t], m = 0;
                    for (int x = 0; x < ns; x++) { pairs[2 * m] = g.member[g.begin[S] + x]; pairs[2 * m + 1] = to; m++; }
                    TC_TRY(rc, out, tc_builder_add_blocks(b, step + s, g.member[g.begin[S] + t], to, pairs, m));
                }
                for (int t = 0; t < ns; t++) {   /* group s -> S[t]: the group's blocks for S[t] */
                    int to = g.member[g.begin[S] + t], m = 0;
                    for (int y = 0; y < gs; y++) { pairs[2 * m] = g.member[g.begin[L] + s * ns + y]; pairs[2 * m + 1] = to; m++; }
                    TC_TRY(rc, out, tc_builder_add_blocks(b, step + s, g.member[g.begin[L] + s * ns + t % gs], to, pairs, m));
                }
            }
        }
        step += longest;
    }
    rc = tc_builder_finish(b, sched);
    b = NULL;
out:
    tc_builder_destroy(b);
    free(g.cl); free(g.begin); free(g.member); free(g.pos); free(ids); free(map); free(pairs);
    return rc;
}
