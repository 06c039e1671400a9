/* The sync verifier: proves that a schedule's syncs, with each rank's
 * program order, keep the messages that share a directed link apart, and
 * that they cannot deadlock.  It reads the IR and the topology only (not
 * sync.c, which computes the syncs).
 *
 * The model is the execution contract of topocoll.h: a rank runs its steps
 * in order; a step completes when all its sends have; a sync (a, b) leaves
 * once a's step has completed and b waits for it before it starts.  So the
 * unit of time is a group, one rank's sends of one step, and
 *  - group G completes after its own previous group and after the groups of
 *    every sync into any of its sends;
 *  - send y starts after its previous group and the groups of the syncs into
 *    y itself (not those into other sends of its step).
 * Two messages x then y on one directed link (y `depth` users after x in
 * x's lane, lanes.c; a link of capacity 1 is one lane, its users in step
 * order; in different steps) are ordered when y's start follows x's group.  The syncs
 * cannot deadlock when the groups with those edges have no cycle.
 * Cost: O(ops * height) to list the link users; each pair is answered by a
 * search back from y over groups no earlier than x's step (edges go forward
 * in steps; a schedule with a sync going backwards is searched whole). */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

#define PROBLEM(rep, ...)                                                        \
    do {                                                                         \
        if (!(rep)->problem[0]) snprintf((rep)->problem, sizeof (rep)->problem, __VA_ARGS__); \
    } while (0)
#define MNAME(r) tc_topology_node_name(topo, tc_topology_machine_node(topo, (r)))

typedef struct graph {
    int64_t ngroups;
    int64_t *group_of;        /* op -> group */
    int32_t *g_rank, *g_step;
    int64_t *g_prev;          /* the rank's previous group, -1 */
    /* sync sources a group's completion waits for (into any of its ops), and
     * the ones a single op's start waits for: CSR by group and by op */
    int64_t *in_begin, *in_src;      /* per group: source groups */
    int64_t *op_begin, *op_src;      /* per op: source groups */
    int forward;              /* every sync goes from an earlier step to a later one */
    int64_t *stamp;           /* search marks */
    int64_t *stack;
    int64_t now;
} graph;

static void graph_free(graph *g)
{
    free(g->group_of); free(g->g_rank); free(g->g_step); free(g->g_prev);
    free(g->in_begin); free(g->in_src); free(g->op_begin); free(g->op_src);
    free(g->stamp); free(g->stack);
}

static tc_status build_graph(const tc_schedule *s, graph *g)
{
    int64_t n = s->num_ops, m = s->num_syncs;
    int p = s->num_ranks;
    int64_t *last = tc_xmalloc(sizeof(int64_t) * (size_t)(p ? p : 1));
    g->group_of = tc_xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    g->g_rank = tc_xmalloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    g->g_step = tc_xmalloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    g->g_prev = tc_xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    g->in_begin = tc_xcalloc((size_t)n + 2, sizeof(int64_t));
    g->in_src = tc_xmalloc(sizeof(int64_t) * (size_t)(m ? m : 1));
    g->op_begin = tc_xcalloc((size_t)n + 2, sizeof(int64_t));
    g->op_src = tc_xmalloc(sizeof(int64_t) * (size_t)(m ? m : 1));
    g->stamp = tc_xcalloc((size_t)n + 1, sizeof(int64_t));
    g->stack = tc_xmalloc(sizeof(int64_t) * (size_t)(n + m + 1));
    if (!last || !g->group_of || !g->g_rank || !g->g_step || !g->g_prev || !g->in_begin || !g->in_src ||
        !g->op_begin || !g->op_src || !g->stamp || !g->stack) {
        free(last);
        TC_FAIL(TC_ERR_NOMEM, "verify syncs: out of memory for %lld operations", (long long)n);
    }
    for (int r = 0; r < p; r++) last[r] = -1;
    g->ngroups = 0;
    for (int st = 0; st < s->num_steps; st++)
        for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) {
            int r = s->ops[i].src;
            if (last[r] < 0 || g->g_step[last[r]] != st) {
                int64_t k = g->ngroups++;
                g->g_rank[k] = r;
                g->g_step[k] = st;
                g->g_prev[k] = last[r];
                last[r] = k;
            }
            g->group_of[i] = last[r];
        }
    free(last);
    g->forward = 1;
    for (int64_t j = 0; j < m; j++) {
        int64_t a = s->syncs[j].after, b = s->syncs[j].before;
        g->in_begin[g->group_of[b] + 2]++;
        g->op_begin[b + 2]++;
        if (g->g_step[g->group_of[a]] >= g->g_step[g->group_of[b]]) g->forward = 0;
    }
    for (int64_t k = 2; k <= g->ngroups + 1; k++) g->in_begin[k] += g->in_begin[k - 1];
    for (int64_t k = 2; k <= n + 1; k++) g->op_begin[k] += g->op_begin[k - 1];
    for (int64_t j = 0; j < m; j++) {
        int64_t a = s->syncs[j].after, b = s->syncs[j].before;
        g->in_src[g->in_begin[g->group_of[b] + 1]++] = g->group_of[a];
        g->op_src[g->op_begin[b + 1]++] = g->group_of[a];
    }
    return TC_OK;
}

/* Kahn's order over the groups: 1 if every group can complete. */
static int acyclic(const graph *g, int64_t *stuck)
{
    int64_t G = g->ngroups, done = 0, top = 0;
    int64_t *indeg = tc_xcalloc((size_t)G + 1, sizeof(int64_t)), *next_of = tc_xmalloc(sizeof(int64_t) * (size_t)(G + 1));
    /* out-edges: the rank's next group, and the groups a group's syncs feed */
    int64_t *out_begin = tc_xcalloc((size_t)G + 2, sizeof(int64_t));
    int64_t *out = tc_xmalloc(sizeof(int64_t) * (size_t)(g->in_begin[G] + 1));
    int64_t *queue = tc_xmalloc(sizeof(int64_t) * (size_t)(G + 1));
    int ok = -1;
    if (!indeg || !next_of || !out_begin || !out || !queue) goto done;
    for (int64_t k = 0; k < G; k++) next_of[k] = -1;
    for (int64_t k = 0; k < G; k++) {
        if (g->g_prev[k] >= 0) { next_of[g->g_prev[k]] = k; indeg[k]++; }
        for (int64_t e = g->in_begin[k]; e < g->in_begin[k + 1]; e++) { out_begin[g->in_src[e] + 2]++; indeg[k]++; }
    }
    for (int64_t k = 2; k <= G + 1; k++) out_begin[k] += out_begin[k - 1];
    for (int64_t k = 0; k < G; k++)
        for (int64_t e = g->in_begin[k]; e < g->in_begin[k + 1]; e++) out[out_begin[g->in_src[e] + 1]++] = k;
    for (int64_t k = 0; k < G; k++)
        if (!indeg[k]) queue[top++] = k;
    while (top) {
        int64_t k = queue[--top];
        done++;
        if (next_of[k] >= 0 && !--indeg[next_of[k]]) queue[top++] = next_of[k];
        for (int64_t e = out_begin[k]; e < out_begin[k + 1]; e++)
            if (!--indeg[out[e]]) queue[top++] = out[e];
    }
    ok = done == G;
    *stuck = -1;
    for (int64_t k = 0; k < G && !ok && *stuck < 0; k++)
        if (indeg[k]) *stuck = k;
    if (!ok) {
        /* walk back through groups that never completed: the walk must come
         * round, and where it first does is a group on a cycle */
        int64_t k = *stuck;
        for (int64_t steps = 0; steps <= G; steps++) {
            int64_t prev = g->g_prev[k] >= 0 && indeg[g->g_prev[k]] ? g->g_prev[k] : -1;
            for (int64_t e = g->in_begin[k]; e < g->in_begin[k + 1] && prev < 0; e++)
                if (indeg[g->in_src[e]]) prev = g->in_src[e];
            if (prev < 0) break;
            k = prev;
        }
        *stuck = k;   /* after G steps back, surely on the cycle */
    }
done:
    free(indeg); free(next_of); free(out_begin); free(out); free(queue);
    return ok;
}

/* Does y's start follow the completion of group gx (rank rx, step sx)?  A
 * search back over groups: reaching gx, or any later group of rank rx,
 * proves it (a rank's groups complete in order). */
static int follows(graph *g, int64_t y, int64_t gx)
{
    int rx = g->g_rank[gx], sx = g->g_step[gx];
    int64_t top = 0, gy = g->group_of[y];
    g->now++;
    /* y starts after its previous group and the groups of its own syncs */
    if (g->g_prev[gy] >= 0) g->stack[top++] = g->g_prev[gy];
    for (int64_t e = g->op_begin[y]; e < g->op_begin[y + 1]; e++) g->stack[top++] = g->op_src[e];
    while (top) {
        int64_t k = g->stack[--top];
        if (k < 0 || g->stamp[k] == g->now) continue;
        g->stamp[k] = g->now;
        if (g->g_rank[k] == rx && g->g_step[k] >= sx) return 1;
        if (g->forward && g->g_step[k] < sx) continue;   /* nothing before it can be later than x */
        if (g->g_prev[k] >= 0) g->stack[top++] = g->g_prev[k];
        for (int64_t e = g->in_begin[k]; e < g->in_begin[k + 1]; e++) g->stack[top++] = g->in_src[e];
    }
    return 0;
}

typedef struct user { int64_t edge, op; int32_t step; } user;

static int cmp_user(const void *a, const void *b)
{
    const user *x = a, *y = b;
    if (x->edge != y->edge) return x->edge < y->edge ? -1 : 1;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return (x->op > y->op) - (x->op < y->op);
}

tc_status tc_schedule_verify_syncs(const tc_schedule *s, const tc_topology *topo, int depth, tc_sync_report *rep)
{
    if (!s || !topo || !rep) TC_FAIL(TC_ERR_ARG, "verify syncs: missing argument");
    if (depth < 1) TC_FAIL(TC_ERR_ARG, "verify syncs: depth %d (at least 1)", depth);
    if (tc_topology_num_machines(topo) != s->num_ranks)
        TC_FAIL(TC_ERR_ARG, "verify syncs: the schedule has %d ranks, the topology %d machines", s->num_ranks,
                tc_topology_num_machines(topo));
    for (int64_t i = 0; i < s->num_ops; i++)
        if (s->ops[i].first_block >= 0)
            TC_FAIL(TC_ERR_UNSUPPORTED, "verify syncs: '%s' forwards blocks; syncs order direct schedules", s->algorithm);
    memset(rep, 0, sizeof *rep);
    rep->ordered = rep->acyclic = 1;
    graph g = {0};
    int64_t *plen = NULL;
    int32_t *paths = NULL;
    user *users = NULL;
    int *cap = NULL;
    int64_t *uops = NULL, *before = NULL;
    int32_t *step_of = NULL;
    tc_lanes lanes = {0};
    tc_status rc = TC_OK;
    TC_TRY(rc, done, build_graph(s, &g));
    int64_t stuck;
    int ok = acyclic(&g, &stuck);
    if (ok < 0) TC_FAIL_GOTO(rc, done, TC_ERR_NOMEM, "verify syncs: out of memory");
    if (!ok) {
        rep->acyclic = 0;
        PROBLEM(rep, "the syncs can deadlock: %s's step %d waits, through syncs and program order, for itself",
                MNAME(g.g_rank[stuck]), g.g_step[stuck]);
    }
    /* every directed edge's users in step order */
    TC_TRY(rc, done, tc_schedule_op_paths(s, topo, &plen, &paths));
    int64_t nu = plen[s->num_ops];
    users = tc_xmalloc(sizeof(user) * (size_t)(nu ? nu : 1));
    if (!users) TC_FAIL_GOTO(rc, done, TC_ERR_NOMEM, "verify syncs: out of memory");
    for (int64_t i = 0; i < s->num_ops; i++)
        for (int64_t k = plen[i]; k < plen[i + 1]; k++)
            users[k] = (user){paths[k], i, g.g_step[g.group_of[i]]};
    qsort(users, (size_t)nu, sizeof *users, cmp_user);
    cap = tc_schedule_edge_capacities(s, topo);
    uops = tc_xmalloc(sizeof(int64_t) * (size_t)(nu ? nu : 1));
    before = tc_xmalloc(sizeof(int64_t) * (size_t)(nu ? nu : 1));
    step_of = tc_xmalloc(sizeof(int32_t) * (size_t)(s->num_ops ? s->num_ops : 1));
    if (!cap || !uops || !before || !step_of) TC_FAIL_GOTO(rc, done, TC_ERR_NOMEM, "verify syncs: out of memory");
    for (int64_t k = 0; k < nu; k++) uops[k] = users[k].op;
    for (int64_t i = 0; i < s->num_ops; i++) step_of[i] = g.g_step[g.group_of[i]];
    TC_TRY(rc, done, tc_lanes_init(&lanes, s->num_ranks));
    /* a link carrying c at once: its users dealt to c lanes (lanes.c), and
     * each lane's users `depth` apart must be ordered; any dealing that
     * passes keeps at most depth x c messages on the link at a time */
    for (int64_t a = 0, b; a < nu; a = b) {
        for (b = a; b < nu && users[b].edge == users[a].edge; b++) {}
        if (tc_topology_link_is_local(topo, (int)(users[a].edge / 2))) continue;   /* shared memory, as sync.c */
        TC_TRY(rc, done, tc_lanes_assign(&lanes, s, uops + a, b - a, step_of, cap[users[a].edge], before + a));
        for (int64_t k = a; k < b; k++) {
            const int64_t w = tc_lanes_back(before + a, k - a, depth);
            if (w < 0) continue;
            const user *x = &users[a + w], *y = &users[k];
            if (x->step == y->step) continue;   /* within a step: the contention check's */
            rep->checked_pairs++;
            if (follows(&g, y->op, g.group_of[x->op])) continue;
            rep->ordered = 0;
            rep->unordered_pairs++;
            const tc_op *ox = &s->ops[x->op], *oy = &s->ops[y->op];
            PROBLEM(rep, "messages %s->%s (step %d) and %s->%s (step %d) share a link and nothing orders them",
                    MNAME(ox->src), MNAME(ox->dst), x->step, MNAME(oy->src), MNAME(oy->dst), y->step);
        }
    }
done:
    graph_free(&g);
    free(plen);
    free(paths);
    free(users);
    free(cap);
    free(uops); free(before); free(step_of);
    tc_lanes_free(&lanes);
    return rc;
}
