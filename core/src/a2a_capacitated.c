/*
 * All-to-all on links of unequal rates: Faraj & Yuan's phases, generalised so
 * that a link carries its capacity of messages a phase.
 *
 * A link's capacity is floor(rate / r), r the slowest host link's rate
 * (tc_topology_link_capacity); the phase bound is B = max over directed
 * links of ceil(load / capacity) (tc_topology_capacitated_load).  With every
 * capacity 1 this is Faraj & Yuan's bound and their construction meets it:
 * that schedule is returned as it is.  Otherwise their proof does not carry
 * over (their global phases give each subtree exactly one message out and
 * one in a phase; with capacities a subtree must send up to c at once while
 * its hosts keep their one each), and no construction meeting B on every
 * tree is known to us.  This departure from the paper is a search
 * (docs/design.md, "Links of unequal rates"):
 *
 *  1. a start: Faraj & Yuan's L phases folded into B, phase f into f B / L,
 *     else the nearest phase where every link of the path has room, else the
 *     one where adding the message costs least;
 *  2. weighted min-conflicts (a breakout search): a message on a link over
 *     its capacity in some phase moves to a phase with room, else swaps with
 *     a message there that fits where it came from, else goes where it costs
 *     least in weights; with no better move its overflowing cells weigh one
 *     more;
 *  3. after a budget of moves with cells still over capacity, phases more
 *     (one, or B/256 on large trees); past B + B/16 the rest first-fit into
 *     new phases (a message alone in a phase always fits).
 *
 * Only links that could be over capacity (capacity below their load) are
 * tracked.  A fixed seed and integer arithmetic: every rank plans the same
 * schedule.  Measured (benchmarks/capacitated_planning.py, the property
 * tests): the bound on every one of 1,000 random trees of up to 80 machines
 * with capacities 1-8; 1,024-machine leaf-spine trees within 0.4 % of it.
 * Memory: 16 bytes a tracked (link, phase) cell and 12 a message's path entry.
 */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

/* The search's state.  Cells: (tracked edge, phase); a cell's messages are
 * a doubly linked list of path entries (node m * H + i: message m's i-th
 * tracked edge).  A cell over its capacity is "violated"; the violated
 * cells form an array with each cell's position. */
typedef struct cap_search {
    int p, E, T, H;           /* machines, directed edges, tracked edges, path entries a message */
    int64_t n, K, Kmax;       /* messages; phases in use; phases allocated */
    int *cap;                 /* per tracked edge */
    int32_t *path;            /* n x H: tracked edge index of each entry */
    uint8_t *plen;
    int32_t *phase;           /* per message */
    int32_t *next, *prev;     /* per node */
    int32_t *head;            /* T x Kmax: first node of a cell, -1 */
    int32_t *cnt, *weight;    /* T x Kmax */
    int64_t *vpos;            /* T x Kmax: position in viol, -1 */
    int64_t *viol, nviol;
    uint64_t *full;           /* T x Kmax/64: a bit a cell at or over capacity */
    uint64_t rng;
} cap_search;

#define CELL(c, e, k) ((int64_t)(e) * (c)->Kmax + (k))

static void viol_set(cap_search *c, int64_t cell, int on)
{
    if (on && c->vpos[cell] < 0) {
        c->vpos[cell] = c->nviol;
        c->viol[c->nviol++] = cell;
    } else if (!on && c->vpos[cell] >= 0) {
        int64_t at = c->vpos[cell], last = c->viol[--c->nviol];
        c->viol[at] = last;
        c->vpos[last] = at;
        c->vpos[cell] = -1;
    }
}

static void place(cap_search *c, int64_t m, int64_t k)
{
    c->phase[m] = (int32_t)k;
    for (int i = 0; i < c->plen[m]; i++) {
        int e = c->path[m * c->H + i];
        int64_t cell = CELL(c, e, k);
        int32_t node = (int32_t)(m * c->H + i), h = c->head[cell];
        c->next[node] = h;
        c->prev[node] = -1;
        if (h >= 0) c->prev[h] = node;
        c->head[cell] = node;
        if (++c->cnt[cell] >= c->cap[e]) c->full[cell / 64] |= 1ULL << (cell % 64);
        if (c->cnt[cell] > c->cap[e]) viol_set(c, cell, 1);
    }
}

static void unplace(cap_search *c, int64_t m)
{
    int64_t k = c->phase[m];
    for (int i = 0; i < c->plen[m]; i++) {
        int e = c->path[m * c->H + i];
        int64_t cell = CELL(c, e, k);
        int32_t node = (int32_t)(m * c->H + i);
        if (c->prev[node] >= 0) c->next[c->prev[node]] = c->next[node];
        else c->head[cell] = c->next[node];
        if (c->next[node] >= 0) c->prev[c->next[node]] = c->prev[node];
        if (--c->cnt[cell] <= c->cap[e]) viol_set(c, cell, 0);
        if (c->cnt[cell] < c->cap[e]) c->full[cell / 64] &= ~(1ULL << (cell % 64));
    }
    c->phase[m] = -1;
}

/* What adding m (not placed) to phase q costs: the weights of its links
 * full there; 0 when it fits (weights are at least 1). */
static int64_t cost_at(const cap_search *c, int64_t m, int64_t q)
{
    int64_t x = 0;
    for (int i = 0; i < c->plen[m]; i++) {
        int e = c->path[m * c->H + i];
        int64_t cell = CELL(c, e, q);
        if (c->cnt[cell] >= c->cap[e]) x += c->weight[cell];
    }
    return x;
}

/* The cheapest phase for m but `not` (ties: the first from `from` on,
 * cyclically, or a random one when from < 0), and its cost. */
static int64_t cheapest(cap_search *c, int64_t m, int64_t from, int64_t not, int64_t *cost)
{
    int64_t best = -1, bc = INT64_MAX, ties = 0;
    for (int64_t d = 0; d < c->K; d++) {
        int64_t k = from >= 0 ? (from + d) % c->K : d;
        if (k == not) continue;
        int64_t x = cost_at(c, m, k);
        if (x < bc) { bc = x; best = k; ties = 1; }
        else if (x == bc && from < 0 && tc_random_next(&c->rng) % (uint64_t)++ties == 0) best = k;
    }
    *cost = bc;
    return best;
}

/* The first phase from k on (cyclically) where m fits, no link of its path
 * full; -1 if none.  A word of 64 phases at a time, from k's word outwards:
 * usually one or two words, not the K/64 of a whole mask. */
static int64_t free_from(const cap_search *c, int64_t m, int64_t k)
{
    int64_t W = (c->K + 63) / 64;
    for (int64_t d = 0; d <= W; d++) {
        int64_t w = (k / 64 + d) % W;
        uint64_t used = 0;
        for (int i = 0; i < c->plen[m]; i++) used |= c->full[CELL(c, c->path[m * c->H + i], 0) / 64 + w];
        uint64_t bits = ~used;
        if (w == W - 1 && c->K % 64) bits &= (1ULL << (c->K % 64)) - 1;
        if (d == 0) bits &= ~0ULL << (k % 64);
        if (d == W) bits &= (1ULL << (k % 64)) - 1;
        if (bits) return w * 64 + __builtin_ctzll(bits);
    }
    return -1;
}

static tc_status grow_phases(cap_search *c, int64_t K)
{
    if (K <= c->Kmax && c->head) { c->K = K; return TC_OK; }
    int64_t na = c->Kmax * 2;
    while (na < K) na *= 2;
    int64_t cells = (int64_t)c->T * na;
    if (cells > TC_MAX_CAPACITATED_CELLS)
        TC_FAIL(TC_ERR_LIMIT, "capacitated: %lld phases on %d links that may overflow are more than the limit of %lld "
                "(link, phase) cells", (long long)K, c->T, (long long)TC_MAX_CAPACITATED_CELLS);
    int32_t *head = tc_xmalloc(sizeof(int32_t) * (size_t)cells), *cnt = tc_xcalloc((size_t)cells, sizeof(int32_t));
    int32_t *w = tc_xmalloc(sizeof(int32_t) * (size_t)cells);
    int64_t *vpos = tc_xmalloc(sizeof(int64_t) * (size_t)cells), *viol = tc_xmalloc(sizeof(int64_t) * (size_t)cells);
    uint64_t *full = tc_xcalloc((size_t)(cells / 64 + 1), sizeof(uint64_t));
    if (!head || !cnt || !w || !vpos || !viol || !full) {
        free(head); free(cnt); free(w); free(vpos); free(viol); free(full);
        TC_FAIL(TC_ERR_NOMEM, "capacitated: out of memory for %lld phases", (long long)na);
    }
    for (int64_t i = 0; i < cells; i++) { head[i] = -1; w[i] = 1; vpos[i] = -1; }
    for (int e = 0; e < c->T; e++)
        for (int64_t k = 0; k < c->K; k++) {
            int64_t from = CELL(c, e, k), to = (int64_t)e * na + k;
            head[to] = c->head[from];
            cnt[to] = c->cnt[from];
            w[to] = c->weight[from];
            if (cnt[to] >= c->cap[e]) full[to / 64] |= 1ULL << (to % 64);
        }
    int64_t nv = 0;
    for (int64_t i = 0; i < c->nviol; i++) {
        int64_t cell = c->viol[i], to = cell / c->Kmax * na + cell % c->Kmax;
        vpos[to] = nv;
        viol[nv++] = to;
    }
    free(c->head); free(c->cnt); free(c->weight); free(c->vpos); free(c->viol); free(c->full);
    c->head = head; c->cnt = cnt; c->weight = w; c->vpos = vpos; c->viol = viol;
    c->full = full;
    c->Kmax = na;
    c->K = K;
    return TC_OK;
}

/* Past SAMPLE phases a move weighs SAMPLE phases drawn at random, not all. */
#define SAMPLE 32
#define SEARCH_MOVES 50000
static int64_t cheapest_sampled(cap_search *c, int64_t m, int64_t k, int64_t *cost)
{
    int64_t best = -1, bc = INT64_MAX;
    for (int t = 0; t < SAMPLE; t++) {
        int64_t q = (int64_t)(tc_random_next(&c->rng) % (uint64_t)c->K);
        if (q == k) continue;
        int64_t x = cost_at(c, m, q);
        if (x < bc) { bc = x; best = q; }
    }
    *cost = bc;
    return best;
}

/* m (placed nowhere, from phase k) fits in a phase q but for one full link
 * x, and a message v on x in q fits in k: v goes to k, m to q.  At most
 * SWAP_LOOK candidates from a random phase on; 1 if done. */
#define SWAP_LOOK 64

static int swap(cap_search *c, int64_t m, int64_t k)
{
    int64_t start = (int64_t)(tc_random_next(&c->rng) % (uint64_t)c->K), seen = 0;
    for (int64_t d = 0; d < c->K && d < 4 * SWAP_LOOK && seen < SWAP_LOOK; d++) {
        int64_t q = (start + d) % c->K;
        if (q == k) continue;
        int x = -1, nfull = 0;
        for (int i = 0; i < c->plen[m] && nfull < 2; i++) {
            int y = c->path[m * c->H + i];
            if (c->cnt[CELL(c, y, q)] >= c->cap[y]) { x = y; nfull++; }
        }
        if (nfull != 1) continue;
        for (int32_t node = c->head[CELL(c, x, q)]; node >= 0 && seen < SWAP_LOOK; node = c->next[node], seen++) {
            int64_t v = node / c->H;
            if (cost_at(c, v, k)) continue;   /* v does not fit in k */
            unplace(c, v);
            place(c, v, k);
            place(c, m, q);
            return 1;
        }
    }
    return 0;
}

/* Weighted min-conflicts (a breakout search): take a message on a random
 * cell over capacity to the phase where adding it costs least in weights;
 * when no move lowers the cost, every violated cell weighs one more.
 * Stops when no cell is violated or after `budget` moves. */
static void search(cap_search *c, int64_t budget)
{
    for (int64_t it = 0; it < budget && c->nviol > 0; it++) {
        int64_t cell = c->viol[tc_random_next(&c->rng) % (uint64_t)c->nviol];
        int64_t k = cell % c->Kmax, pick = (int64_t)(tc_random_next(&c->rng) % (uint64_t)c->cnt[cell]);
        int32_t node = c->head[cell];
        while (pick--) node = c->next[node];
        int64_t m = node / c->H;
        /* what leaving k saves */
        int64_t save = 0;
        for (int i = 0; i < c->plen[m]; i++) {
            int x = c->path[m * c->H + i];
            int64_t cx = CELL(c, x, k);
            if (c->cnt[cx] > c->cap[x]) save += c->weight[cx];
        }
        unplace(c, m);
        int64_t room = free_from(c, m, (int64_t)(tc_random_next(&c->rng) % (uint64_t)c->K));
        if (room >= 0) {   /* a phase with room (the first from a random one): cost 0 */
            place(c, m, room);
            continue;
        }
        if (swap(c, m, k)) continue;
        int64_t cost, to;
        if (c->K <= SAMPLE)
            to = cheapest(c, m, -1, k, &cost);   /* k: staying is not a move */
        else
            to = cheapest_sampled(c, m, k, &cost);
        if (cost < save) {
            place(c, m, to);
        } else {   /* a local minimum for m: its violated cells weigh more */
            place(c, m, k);
            for (int i = 0; i < c->plen[m]; i++) {
                int64_t cx = CELL(c, c->path[m * c->H + i], k);
                if (c->cnt[cx] > c->cap[c->path[m * c->H + i]] && c->weight[cx] < INT32_MAX / 2) c->weight[cx]++;
            }
        }
    }
}

static void search_free(cap_search *c)
{
    free(c->cap); free(c->path); free(c->plen); free(c->phase); free(c->next); free(c->prev);
    free(c->head); free(c->cnt); free(c->weight); free(c->vpos); free(c->viol);
    free(c->full);
}

tc_status tc_a2a_capacitated(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    const int p = tc_topology_num_machines(topo), L = tc_topology_num_links(topo);
    const double bw = opt && opt->bandwidth > 0 ? opt->bandwidth : TC_DEFAULT_BANDWIDTH;
    int all_one = 1;
    for (int l = 0; l < L; l++) all_one &= tc_topology_link_capacity(topo, l, bw) == 1;
    if (all_one || p < 3) {   /* Faraj & Yuan meet the bound */
        tc_status rc = tc_a2a_faraj_yuan(topo, opt, sched);
        if (rc == TC_OK) snprintf((*sched)->algorithm, sizeof (*sched)->algorithm, "capacitated");
        return rc;
    }
    tc_status rc = TC_OK;
    cap_search c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.E = 2 * L;
    c.H = 2 * tc_topology_height(topo) + 2;
    c.n = (int64_t)p * (p - 1);
    c.rng = 0x9e3779b97f4a7c15ULL;
    /* tracked edges: those that could be over capacity (capacity < load) */
    int *track = tc_xmalloc(sizeof(int) * (size_t)(c.E + 1));
    int32_t *full_path = tc_xmalloc(sizeof(int32_t) * (size_t)c.H);
    c.cap = tc_xmalloc(sizeof(int) * (size_t)(c.E + 1));
    if (!track || !full_path || !c.cap) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "capacitated: out of memory");
    for (int e = 0; e < c.E; e++) {
        int k = tc_topology_link_capacity(topo, e / 2, bw);
        track[e] = k < tc_topology_link_load(topo, e / 2) ? c.T : -1;
        if (track[e] >= 0) c.cap[c.T++] = k;
    }
    c.path = tc_xmalloc(sizeof(int32_t) * (size_t)(c.n * c.H));
    c.plen = tc_xmalloc((size_t)c.n);
    c.phase = tc_xmalloc(sizeof(int32_t) * (size_t)c.n);
    c.next = tc_xmalloc(sizeof(int32_t) * (size_t)(c.n * c.H));
    c.prev = tc_xmalloc(sizeof(int32_t) * (size_t)(c.n * c.H));
    if (!c.path || !c.plen || !c.phase || !c.next || !c.prev)
        TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "capacitated: out of memory for %lld messages", (long long)c.n);
    if (c.n * c.H > INT32_MAX) TC_FAIL_GOTO(rc, out, TC_ERR_LIMIT, "capacitated: %d machines are too many", p);
    int64_t m = 0;
    for (int s = 0; s < p; s++)
        for (int j = 0; j < p - 1; j++, m++) {
            int d = (s + 1 + j) % p, len = tc_topology_path(topo, s, d, full_path), n = 0;
            for (int i = 0; i < len; i++)
                if (track[full_path[i]] >= 0) c.path[m * c.H + n++] = track[full_path[i]];
            c.plen[m] = (uint8_t)n;
        }
    int64_t B = tc_topology_capacitated_load(topo, bw, NULL, NULL);
    c.Kmax = 32;   /* no cells yet: grow_phases allocates B's */
    TC_TRY(rc, out, grow_phases(&c, B));
    /* 1. a start: Faraj & Yuan's L phases folded into B, phase f into
     * f B / L, else the nearest phase with room, else the cheapest */
    {
        tc_schedule *fy = NULL;
        TC_TRY(rc, out, tc_a2a_faraj_yuan(topo, opt, &fy));
        int64_t Lf = fy->num_steps > 0 ? fy->num_steps : 1;
        for (int st = 0; st < fy->num_steps; st++)
            for (int64_t i = fy->step_begin[st]; i < fy->step_begin[st + 1]; i++) {
                int s = fy->ops[i].src, d = fy->ops[i].dst;
                int64_t mm = (int64_t)s * (p - 1) + ((d - s - 1 + p) % p), want = (int64_t)st * B / Lf, cost;
                int64_t room = free_from(&c, mm, want);
                if (room >= 0) { place(&c, mm, room); continue; }
                place(&c, mm, cheapest(&c, mm, want, -1, &cost));
            }
        tc_schedule_destroy(fy);
    }
    /* 2. the search; after each budget that ends with cells over capacity,
     * phases more (one, or B/256 on large trees) */
    int64_t limit = B + B / 16 + 1, more = B / 256 > 1 ? B / 256 : 1;
    while (c.nviol > 0) {
        search(&c, SEARCH_MOVES + c.n / 16);
        if (c.nviol == 0) break;
        TC_TRY(rc, out, grow_phases(&c, c.K + more));
        if (c.K > limit) {   /* give up searching: each message on a violated cell to a phase with room */
            while (c.nviol > 0) {
                int64_t cell = c.viol[0], mm = c.head[cell] / c.H;
                unplace(&c, mm);
                int64_t room = free_from(&c, mm, 0);
                if (room < 0) {
                    TC_TRY(rc, out, grow_phases(&c, c.K + 1));
                    room = c.K - 1;
                }
                place(&c, mm, room);
            }
        }
    }
    tc_schedule_builder *b;
    TC_TRY(rc, out, tc_builder_create("capacitated", p, c.n, &b));
    tc_builder_set_min_steps(b, (int32_t)c.K);
    m = 0;
    for (int s = 0; s < p && rc == TC_OK; s++)
        for (int j = 0; j < p - 1 && rc == TC_OK; j++, m++) rc = tc_builder_add(b, c.phase[m], s, (s + 1 + j) % p);
    if (rc != TC_OK) { tc_builder_destroy(b); goto out; }
    rc = tc_builder_finish(b, sched);
out:
    free(track);
    free(full_path);
    search_free(&c);
    return rc;
}
