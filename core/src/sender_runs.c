/* Sender runs for execution (see topocoll.h, tc_schedule_group_senders;
 * TOPOCOLL_PHASE_ORDER=grouped, the default).  MPI-free.
 *
 * Run with pairwise syncs, a link handed from one sender to another in
 * consecutive phases costs a sync's way and its receiver's wake-up; on the
 * emulated cluster a sync that crosses a busy switch port waits there
 * behind that port's standing queue (captures: 1-5 ms).  A sender that
 * follows itself on a link costs nothing: its own link clock paces it.
 * Faraj & Yuan's phases hand the busiest links to a new sender in nearly
 * every phase (3 x 4 machines: 76 changes over the four directed
 * inter-switch links in 32 phases; 2 x 8: 70 in 64), and no order of
 * those phases fixes it (phase_order.c only shares the changes between the
 * two directions).  Here the messages themselves move between phases.
 *
 * The move is a Kempe interchange: take a message in phase a and a phase
 * b; the messages of a and b that share a directed link with it, those
 * that share one with them, and so on, swap phases.  A link used in a or b
 * by the component is used by it in both or in neither, so both phases
 * stay contention-free; the messages and the phase count, thus
 * completeness and optimality, are unchanged.  (The verifier proves it
 * again wherever the result is verified; the property tests do on random
 * trees.)
 *
 * The cost: over every directed link, for each two consecutive phases
 * whose senders on it differ, the links between the two senders less one
 * (a sync within a switch 1, across one more switch 2, ...), as in the
 * phase order model.  Not only the bottleneck links: a first version that
 * counted only those made tight hand-offs on machine links instead, whose
 * syncs crossed the switches (on 3 x 4 machines the critical path then
 * waited 2-4 ms at several of them).  Threshold accepting (a worse move
 * is taken while it costs at most a threshold falling linearly to 0) from
 * a fixed seed, on integers only, so that every rank of a job plans the
 * same schedule; the best schedule seen is kept.  The bottleneck links'
 * sender changes fall from 76 to 25 on 3 x 4 machines (the least possible
 * is 20: 4 or 8 senders share each direction) and from 70 to 25 on 2 x 8
 * (least 14); no link changes sender in consecutive phases elsewhere.
 *
 * Left as they are: schedules with syncs already, forwarding or segmented
 * schedules, schedules using a link twice in a phase (not contention-free:
 * the interchange argument needs it), and schedules beyond OCC_WORK or
 * MAX_RANKS.  Moves: tc_runs_search's budget (3-9 machines: 4-140 ms;
 * 3 x 4 machines: 0.2 s).  Not stopped early when the best stops improving: that ends some
 * searches while the threshold is still high (docs/pacing.md). */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

#define OCC_WORK 4000000LL       /* directed links x phases: the occupancy table */
#define MAX_RANKS 2048           /* the p x p hop table */

typedef struct runs {
    tc_schedule *s;
    int n, E;
    const int64_t *plen;          /* op i's links: paths[plen[i] .. plen[i+1]) */
    const int32_t *paths;
    int32_t *occ;                 /* occ[e * n + k]: the op on link e in phase k (-1) */
    int32_t *phase;               /* each op's phase */
    const int32_t *hops;          /* p x p links between two ranks */
    int32_t *mark;                /* per op and per link: stamps */
    int32_t stamp;
    int32_t *comp, *links;        /* a move's component and the links it uses */
} runs;

/* Hand-off cost on link e between phases k-1 and k. */
static int64_t pair_cost(const runs *r, int e, int k)
{
    if (k <= 0 || k >= r->n) return 0;
    int32_t a = r->occ[(int64_t)e * r->n + k - 1], b = r->occ[(int64_t)e * r->n + k];
    if (a < 0 || b < 0) return 0;
    int q = r->s->ops[a].src, t = r->s->ops[b].src;
    return q == t ? 0 : (r->hops[(size_t)q * r->s->num_ranks + t] - 1);
}

/* Hand-offs on link e touching phases a and b (each pair once). */
static int64_t local_cost(const runs *r, int e, int a, int b)
{
    int ks[4] = {a, a + 1, b, b + 1};
    int64_t c = 0;
    for (int i = 0; i < 4; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++) dup |= ks[j] == ks[i];
        if (!dup) c += pair_cost(r, e, ks[i]);
    }
    return c;
}

static void place(runs *r, int32_t op, int k)
{
    for (int64_t q = r->plen[op]; q < r->plen[op + 1]; q++) r->occ[(int64_t)r->paths[q] * r->n + k] = op;
    r->phase[op] = k;
}

static void lift(runs *r, int32_t op)
{
    for (int64_t q = r->plen[op]; q < r->plen[op + 1]; q++) r->occ[(int64_t)r->paths[q] * r->n + r->phase[op]] = -1;
}

/* The Kempe component of op x between its phase and phase b, into comp;
 * the links it uses into links.  Returns its size. */
static int64_t component(runs *r, int32_t x, int b, int32_t *comp, int32_t *links, int64_t *nlinks)
{
    const int a = r->phase[x];
    const int32_t st = ++r->stamp;
    int32_t *op_mark = r->mark, *link_mark = r->mark + r->s->num_ops;
    int64_t len = 0;
    *nlinks = 0;
    comp[len++] = x;
    op_mark[x] = st;
    for (int64_t i = 0; i < len; i++) {
        int32_t y = comp[i];
        int other = r->phase[y] == a ? b : a;
        for (int64_t q = r->plen[y]; q < r->plen[y + 1]; q++) {
            int e = r->paths[q];
            if (link_mark[e] != st) { link_mark[e] = st; links[(*nlinks)++] = e; }
            int32_t z = r->occ[(int64_t)e * r->n + other];
            if (z >= 0 && op_mark[z] != st) { op_mark[z] = st; comp[len++] = z; }
        }
    }
    return len;
}

static void swap_component(runs *r, const int32_t *comp, int64_t len, int a, int b)
{
    for (int64_t i = 0; i < len; i++) lift(r, comp[i]);
    for (int64_t i = 0; i < len; i++) place(r, comp[i], r->phase[comp[i]] == a ? b : a);
}

/* A Kempe interchange of x's component between its phase and another. */
static int64_t interchange(void *ctx, int32_t x, int64_t threshold, uint64_t *seed)
{
    runs *r = ctx;
    const int a = r->phase[x];
    int b = (int)(tc_random_next(seed) % (uint64_t)(r->n - 1));
    if (b >= a) b++;
    int64_t nlinks, before = 0, after = 0;
    const int64_t len = component(r, x, b, r->comp, r->links, &nlinks);
    for (int64_t l = 0; l < nlinks; l++) before += local_cost(r, r->links[l], a, b);
    swap_component(r, r->comp, len, a, b);
    for (int64_t l = 0; l < nlinks; l++) after += local_cost(r, r->links[l], a, b);
    if (after - before > threshold) {
        swap_component(r, r->comp, len, a, b);   /* undo: the same component swaps back */
        return TC_RUNS_NONE;
    }
    return after - before;
}

int64_t tc_runs_search(void *ctx, tc_runs_move move, int64_t ops, int64_t cost, const int32_t *phase, int32_t *best)
{
    /* a budget of 3,000 moves a message, at most 400,000 and 40 million
     * moves x messages in all */
    int64_t best_cost = cost, moves = ops > 0 ? 40000000LL / ops : 0;
    if (moves > 3000LL * ops) moves = 3000LL * ops;
    if (moves > 400000LL) moves = 400000LL;
    memcpy(best, phase, sizeof(int32_t) * (size_t)ops);
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (int64_t it = 0; it < moves && best_cost > 0; it++) {
        const int32_t x = (int32_t)(tc_random_next(&seed) % (uint64_t)ops);
        const int64_t change = move(ctx, x, 3 * (moves - it) / moves, &seed);
        if (change == TC_RUNS_NONE) continue;
        cost += change;
        if (cost < best_cost) {
            best_cost = cost;
            memcpy(best, phase, sizeof(int32_t) * (size_t)ops);
        }
    }
    return best_cost;
}

tc_status tc_schedule_group_senders(tc_schedule *s, const tc_topology *topo)
{
    const int n = s->num_steps, p = s->num_ranks, E = 2 * tc_topology_num_links(topo);
    const int64_t ops = s->num_ops;
    if (s->capacity_syncs) {   /* links carrying several messages at once: lanes (lane_runs.c) */
        int *cap = tc_schedule_edge_capacities(s, topo), lanes = 0;
        if (!cap) TC_FAIL(TC_ERR_NOMEM, "sender runs: out of memory");
        for (int e = 0; e < E; e++) lanes |= cap[e] > 1;
        free(cap);
        if (lanes) return tc_schedule_group_lanes(s, topo);
    }
    if (s->num_syncs) TC_FAIL(TC_ERR_ARG, "sender runs: '%s' has syncs already; group its senders first", s->algorithm);
    for (int64_t i = 0; i < ops; i++)
        if (s->ops[i].first_block >= 0 || s->ops[i].parts > 1) return TC_OK;   /* forwarding or segments */
    if (n < 2 || ops > INT32_MAX || p > MAX_RANKS || (int64_t)E * n > OCC_WORK) return TC_OK;

    tc_status rc = TC_OK;
    int64_t *plen = NULL;
    int32_t *paths = NULL, *hops = NULL, *best = NULL;
    runs r = {s, n, E, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL};
    r.occ = tc_xmalloc(sizeof(int32_t) * (size_t)E * (size_t)n);
    r.phase = tc_xmalloc(sizeof(int32_t) * (size_t)(ops + 1));
    r.mark = tc_xcalloc((size_t)(ops + E + 1), sizeof(int32_t));
    best = tc_xmalloc(sizeof(int32_t) * (size_t)(ops + 1));
    r.comp = tc_xmalloc(sizeof(int32_t) * (size_t)(ops + 1));
    r.links = tc_xmalloc(sizeof(int32_t) * ((size_t)E + 1));
    if (!r.occ || !r.phase || !r.mark || !best || !r.comp || !r.links)
        TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "sender runs: out of memory");
    TC_TRY(rc, out, tc_schedule_op_paths(s, topo, &plen, &paths));
    if (!(hops = tc_topology_hop_table(topo))) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "sender runs: out of memory");
    r.plen = plen;
    r.paths = paths;
    r.hops = hops;

    /* occupancy; a link twice in a phase: not contention-free, leave it */
    for (int64_t i = 0; i < (int64_t)E * n; i++) r.occ[i] = -1;
    for (int k = 0; k < n; k++)
        for (int64_t i = s->step_begin[k]; i < s->step_begin[k + 1]; i++) {
            for (int64_t q = plen[i]; q < plen[i + 1]; q++)
                if (r.occ[(int64_t)paths[q] * n + k] >= 0) goto out;
            place(&r, (int32_t)i, k);
        }
    int64_t cost = 0;
    for (int e = 0; e < E; e++)
        for (int k = 1; k < n; k++) cost += pair_cost(&r, e, k);
    if (cost == 0 || ops == 0) goto out;

    tc_runs_search(&r, interchange, ops, cost, r.phase, best);
    rc = tc_schedule_set_steps(s, best);
out:
    free(plen); free(paths); free(hops); free(best); free(r.comp); free(r.links);
    free(r.occ); free(r.phase); free(r.mark);
    return rc;
}
