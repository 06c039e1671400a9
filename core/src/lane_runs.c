/* Sender runs on links of capacity above one (see tc_internal.h,
 * tc_schedule_group_lanes; TOPOCOLL_PHASE_ORDER=grouped, the default).
 * MPI-free.
 *
 * sender_runs.c, for contention-free schedules, moves messages between
 * phases so that a link keeps its sender from one phase to the next: that
 * sender's own link clock paces it, and no sync's way across the switches
 * sits on the critical path.  A capacitated plan (a2a_capacitated.c) lets a
 * link carry c messages a phase, and its search hands each of a leaf's
 * uplink lanes to a new sender in nearly every phase (12 machines as
 * 3 x 4 under a spine at twice the hosts' rate: 13-22 sender changes over
 * each uplink's 16 phases where 4 would do).  Its Kempe interchanges do not
 * apply (a link used twice in a phase), so here the moves are simpler: a
 * message goes to another phase where every link of its path has room, or
 * swaps with a message there (a user of its first full link, or another
 * message of its sender or of its receiver, whose host link then stays as
 * it was) when each then fits where the other was.
 * Every link stays within its capacity, the messages and the phase count
 * stay (a phase left empty is dropped), so the plan stays complete and at
 * its phase count; the verifier proves it again wherever it is verified.
 *
 * The cost, over every directed network link and every two consecutive
 * phases k-1, k: the users of k whose sender did not use the link in k-1
 * (counted with multiplicity), less the lanes idle in k-1, which they take
 * without waiting on anyone (lanes.c deals the lanes that way: a sender
 * keeps its lane, the others take the one used longest ago).  Threshold
 * accepting from a fixed seed on integers, as sender_runs.c, so that every
 * rank of a job plans the same schedule; the best seen is kept.
 *
 * Left as they are: schedules with syncs, forwarding or segments, links
 * over their capacity already, links with more than MAX_LANES users in a
 * phase (the cost walks a phase's users of a link), and schedules beyond
 * OCC_WORK cells.  Cost: 12-32 machines under leaves at 2-4x the hosts'
 * rate 5-19 ms, 256 (16 x 16) 0.3 s, where the budget is thin. */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

#define OCC_WORK 4000000LL       /* directed links x phases: the cells */
#define MAX_LANES 16             /* users of a link in one phase, at most */

typedef struct lanes_run {
    const tc_schedule *s;
    int n, E;
    const int *cap;
    const char *net;             /* per directed link: a network link (costed) */
    const int64_t *plen;
    const int32_t *paths;
    int32_t *node_op;            /* path entry -> op */
    int32_t *next, *prev;        /* a cell's users: path entries */
    int32_t *head, *cnt;         /* per cell (e * n + k) */
    int32_t *phase;
    const int64_t *by_begin[2];  /* each machine's messages sent [0] and received [1] */
    const int32_t *by[2];
} lanes_run;

#define CELL(r, e, k) ((int64_t)(e) * (r)->n + (k))

static void put(lanes_run *r, int32_t op, int k)
{
    r->phase[op] = k;
    for (int64_t q = r->plen[op]; q < r->plen[op + 1]; q++) {
        int64_t c = CELL(r, r->paths[q], k);
        r->prev[q] = -1;
        r->next[q] = r->head[c];
        if (r->head[c] >= 0) r->prev[r->head[c]] = (int32_t)q;
        r->head[c] = (int32_t)q;
        r->cnt[c]++;
    }
}

static void take(lanes_run *r, int32_t op)
{
    const int k = r->phase[op];
    for (int64_t q = r->plen[op]; q < r->plen[op + 1]; q++) {
        int64_t c = CELL(r, r->paths[q], k);
        if (r->prev[q] >= 0) r->next[r->prev[q]] = r->next[q];
        else r->head[c] = r->next[q];
        if (r->next[q] >= 0) r->prev[r->next[q]] = r->prev[q];
        r->cnt[c]--;
    }
}

/* Users of e in phase k whose sender used it fewer times in k-1, less the
 * lanes idle in k-1. */
static int64_t cell_cost(const lanes_run *r, int e, int k)
{
    if (k <= 0 || k >= r->n || !r->net[e]) return 0;
    const int64_t now = CELL(r, e, k), before = now - 1;
    int64_t fresh = 0;
    for (int32_t q = r->head[now]; q >= 0; q = r->next[q]) {
        const int src = r->s->ops[r->node_op[q]].src;
        int here = 0, there = 0;   /* this sender's users of k up to q, and of k-1 */
        for (int32_t u = r->head[now]; u >= 0; u = r->next[u]) {
            here += r->s->ops[r->node_op[u]].src == src;
            if (u == q) break;
        }
        for (int32_t u = r->head[before]; u >= 0; u = r->next[u]) there += r->s->ops[r->node_op[u]].src == src;
        fresh += here > there;
    }
    int64_t idle = r->cap[e] - r->cnt[before];
    return fresh > idle ? fresh - (idle > 0 ? idle : 0) : 0;
}

/* The cost of the cells that a move between phases a and b touches, over
 * the links of ops x and y (y -1: none); links shared by both counted once. */
static int64_t touched_cost(const lanes_run *r, int32_t x, int32_t y, int a, int b)
{
    const int ks[4] = {a, a + 1, b, b + 1};
    int64_t c = 0;
    for (int side = 0; side < 2; side++) {
        int32_t op = side ? y : x;
        if (op < 0) continue;
        for (int64_t q = r->plen[op]; q < r->plen[op + 1]; q++) {
            int e = r->paths[q], dup = 0;
            if (side)
                for (int64_t u = r->plen[x]; u < r->plen[x + 1] && !dup; u++) dup = r->paths[u] == e;
            if (dup) continue;
            for (int i = 0; i < 4; i++) {
                int seen = 0;
                for (int j = 0; j < i; j++) seen |= ks[j] == ks[i];
                if (!seen) c += cell_cost(r, e, ks[i]);
            }
        }
    }
    return c;
}

/* Whether op fits in phase k with `gone` (-1: none) taken out of k first. */
static int fits(const lanes_run *r, int32_t op, int k, int32_t gone)
{
    for (int64_t q = r->plen[op]; q < r->plen[op + 1]; q++) {
        int e = r->paths[q];
        int32_t n = r->cnt[CELL(r, e, k)];
        if (gone >= 0)
            for (int64_t u = r->plen[gone]; u < r->plen[gone + 1]; u++) n -= r->paths[u] == e;
        if (n + 1 > r->cap[e]) return 0;
    }
    return 1;
}

#define NO_MOVE (-2)

/* The move of x, in phase a: to phase *b, alone (returns -1) or swapped with
 * the message it returns; NO_MOVE where nothing fits.  Kinds, drawn: a swap
 * with another message of x's sender (1) or receiver (2), whose host link
 * then stays as it was, so that such swaps fit often; or a phase drawn at
 * random, where x goes if its path has room, else swaps with a user of its
 * first full link there (0). */
static int32_t draw_move(const lanes_run *r, int32_t x, uint64_t *seed, int *b)
{
    const int a = r->phase[x], kind = (int)(tc_random_next(seed) % 3);
    if (kind) {
        const int side = kind - 1, end = side ? r->s->ops[x].dst : r->s->ops[x].src;
        const int64_t *begin = r->by_begin[side], k = begin[end + 1] - begin[end];
        if (k < 2) return NO_MOVE;
        const int32_t y = r->by[side][begin[end] + (int64_t)(tc_random_next(seed) % (uint64_t)k)];
        *b = r->phase[y];
        return y != x && *b != a && fits(r, x, *b, y) && fits(r, y, a, x) ? y : NO_MOVE;
    }
    *b = (int)(tc_random_next(seed) % (uint64_t)(r->n - 1));
    if (*b >= a) (*b)++;
    if (fits(r, x, *b, -1)) return -1;
    for (int64_t q = r->plen[x]; q < r->plen[x + 1]; q++) {
        const int64_t c = CELL(r, r->paths[q], *b);
        if (r->cnt[c] < r->cap[r->paths[q]]) continue;
        int pick = (int)(tc_random_next(seed) % (uint64_t)r->cnt[c]);
        int32_t u = r->head[c];
        while (pick-- > 0 && r->next[u] >= 0) u = r->next[u];
        const int32_t y = r->node_op[u];
        return fits(r, x, *b, y) && fits(r, y, a, x) ? y : NO_MOVE;
    }
    return NO_MOVE;
}

static int64_t lane_move(void *ctx, int32_t x, int64_t threshold, uint64_t *seed)
{
    lanes_run *r = ctx;
    const int a = r->phase[x];
    int b;
    const int32_t y = draw_move(r, x, seed, &b);
    if (y == NO_MOVE) return TC_RUNS_NONE;
    const int64_t before = touched_cost(r, x, y, a, b);
    take(r, x);
    if (y >= 0) take(r, y);
    put(r, x, b);
    if (y >= 0) put(r, y, a);
    const int64_t after = touched_cost(r, x, y, a, b);
    if (after - before <= threshold) return after - before;
    take(r, x);   /* undo */
    if (y >= 0) take(r, y);
    put(r, x, a);
    if (y >= 0) put(r, y, b);
    return TC_RUNS_NONE;
}

tc_status tc_schedule_group_lanes(tc_schedule *s, const tc_topology *topo)
{
    const int n = s->num_steps, E = 2 * tc_topology_num_links(topo), p = s->num_ranks;
    const int64_t ops = s->num_ops;
    if (s->num_syncs) TC_FAIL(TC_ERR_ARG, "lane runs: '%s' has syncs already; group its senders first", s->algorithm);
    for (int64_t i = 0; i < ops; i++)
        if (s->ops[i].first_block >= 0 || s->ops[i].parts > 1) return TC_OK;   /* forwarding or segments */
    if (n < 2 || ops > INT32_MAX / 8 || (int64_t)E * n > OCC_WORK) return TC_OK;

    tc_status rc = TC_OK;
    int *cap = tc_schedule_edge_capacities(s, topo);
    int64_t *plen = NULL;
    int32_t *paths = NULL, *best = NULL, *by_src = NULL, *by_dst = NULL;
    int64_t *by_src_begin = NULL, *by_dst_begin = NULL;
    char *net = tc_xmalloc((size_t)E + 1);
    lanes_run r = {s, n, E, cap, net, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, {NULL, NULL}, {NULL, NULL}};
    if (!cap || !net) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "lane runs: out of memory");
    for (int e = 0; e < E; e++) net[e] = !tc_topology_link_is_local(topo, e / 2);
    TC_TRY(rc, out, tc_schedule_op_paths(s, topo, &plen, &paths));
    const int64_t entries = plen[ops];
    if (entries >= INT32_MAX) goto out;
    r.plen = plen;
    r.paths = paths;
    r.node_op = tc_xmalloc(sizeof(int32_t) * (size_t)(entries + 1));
    r.next = tc_xmalloc(sizeof(int32_t) * (size_t)(entries + 1));
    r.prev = tc_xmalloc(sizeof(int32_t) * (size_t)(entries + 1));
    r.head = tc_xmalloc(sizeof(int32_t) * (size_t)E * (size_t)n);
    r.cnt = tc_xcalloc((size_t)E * (size_t)n, sizeof(int32_t));
    r.phase = tc_xmalloc(sizeof(int32_t) * (size_t)(ops + 1));
    best = tc_xmalloc(sizeof(int32_t) * (size_t)(ops + 1));
    by_src = tc_xmalloc(sizeof(int32_t) * (size_t)(ops + 1));
    by_dst = tc_xmalloc(sizeof(int32_t) * (size_t)(ops + 1));
    by_src_begin = tc_xcalloc((size_t)p + 2, sizeof(int64_t));
    by_dst_begin = tc_xcalloc((size_t)p + 2, sizeof(int64_t));
    if (!r.node_op || !r.next || !r.prev || !r.head || !r.cnt || !r.phase || !best || !by_src || !by_dst ||
        !by_src_begin || !by_dst_begin)
        TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "lane runs: out of memory");
    for (int64_t i = 0; i < (int64_t)E * n; i++) r.head[i] = -1;
    for (int64_t i = 0; i < ops; i++)
        for (int64_t q = plen[i]; q < plen[i + 1]; q++) r.node_op[q] = (int32_t)i;
    for (int64_t i = 0; i < ops; i++) {
        by_src_begin[s->ops[i].src + 2]++;
        by_dst_begin[s->ops[i].dst + 2]++;
    }
    for (int q = 2; q <= p + 1; q++) {
        by_src_begin[q] += by_src_begin[q - 1];
        by_dst_begin[q] += by_dst_begin[q - 1];
    }
    for (int64_t i = 0; i < ops; i++) {
        by_src[by_src_begin[s->ops[i].src + 1]++] = (int32_t)i;
        by_dst[by_dst_begin[s->ops[i].dst + 1]++] = (int32_t)i;
    }
    for (int k = 0; k < n; k++)
        for (int64_t i = s->step_begin[k]; i < s->step_begin[k + 1]; i++) put(&r, (int32_t)i, k);
    for (int e = 0; e < E; e++)
        for (int k = 0; k < n; k++) {
            const int32_t c = r.cnt[CELL(&r, e, k)];
            if (c > cap[e]) goto out;          /* over capacity already: not ours to judge */
            if (c > MAX_LANES) goto out;       /* the cost walks a cell's users twice over */
        }
    int64_t cost = 0;
    for (int e = 0; e < E; e++)
        for (int k = 1; k < n; k++) cost += cell_cost(&r, e, k);
    if (cost == 0 || ops == 0) goto out;

    r.by_begin[0] = by_src_begin;
    r.by_begin[1] = by_dst_begin;
    r.by[0] = by_src;
    r.by[1] = by_dst;
    tc_runs_search(&r, lane_move, ops, cost, r.phase, best);

    /* drop phases the moves emptied */
    int32_t *renum = r.head;   /* n entries suffice; head is no longer needed */
    for (int k = 0; k < n; k++) renum[k] = 0;
    for (int64_t i = 0; i < ops; i++) renum[best[i]] = 1;
    int kept = 0;
    for (int k = 0; k < n; k++) renum[k] = renum[k] ? kept++ : -1;
    for (int64_t i = 0; i < ops; i++) best[i] = renum[best[i]];
    s->num_steps = kept;
    rc = tc_schedule_set_steps(s, best);
out:
    free(cap); free(net); free(plen); free(paths); free(best);
    free(by_src); free(by_dst); free(by_src_begin); free(by_dst_begin);
    free(r.node_op); free(r.next); free(r.prev); free(r.head); free(r.cnt); free(r.phase);
    return rc;
}
