/*
 * All-to-all: Faraj & Yuan, "Message Scheduling for All-to-all Personalized
 * Communication on Ethernet Switched Clusters" (IPDPS 2005), section 4.
 *
 * Phases: exactly the all-to-all load of the bottleneck link,
 *   P = |M0| (|M| - |M0|), every phase contention-free; so with per-link
 *   bandwidth B the time is P (alpha + msize/B) plus synchronisation.
 * Restrictions: none (any tree, any |M| >= 1).  The paper assumes |M| >= 3;
 *   |M| = 1 gives no phase and |M| = 2 the one phase {0->1, 1->0}.
 * Planning: O(|M|^2) time and memory (one operation per message); one
 *   rank's part (the phase oracle below, rank_plan.c): O(|M| log k).
 *
 * Read literally where the paper is loose (each misreading fails on small
 * trees, found by the property tests):
 *  - subtrees are sorted largest first; a machine on the root is a subtree of
 *    size 1 and branches without machines are dropped (tc_topology_aapc_root);
 *  - "(p - P) mod |Mj|" is the non-negative residue;
 *  - rotations of the rotate pattern count from the start of each t0->tj block;
 *  - Table 3's rounds count globally (round = p div |M0|), round 0 meaning
 *    receiver = sender + 1; they never restart per ti->t0 block;
 *  - step 3 uses phases [0, |M0|(|M0|-1)), upper end excluded;
 *  - step 5 takes, for each local message, the first phase that fits.
 */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

static int64_t mod(int64_t a, int64_t n) { int64_t r = a % n; return r < 0 ? r + n : r; }
static int64_t gcd(int64_t a, int64_t b) { while (b) { int64_t t = a % b; a = b; b = t; } return a; }

/* ---- the construction, phase by phase -------------------------------------
 *
 * The formulas of steps 1-6 live in fy_global and fy_local: the generator
 * (tc_a2a_faraj_yuan) runs them over every block, and per-rank planning
 * (rank_plan.c), which needs a rank's messages with their phases and the
 * message a directed link carries in a phase without the whole schedule,
 * asks them directly.  The per-rank questions have closed forms:
 *  - the ti -> tj block occupies phases [START(i,j), START(i,j) + |Mi||Mj|);
 *    ti's outgoing blocks start in the ring order j = i+1, .., k-1, 0, ..,
 *    i-1 and its incoming blocks in the order i = j-1, .., 0, k-1, .., j+1,
 *    both increasing, so a phase's block is a binary search;
 *  - START(0, j) and P are multiples of |M0| and lcm(|M0|, |Mj|) is, so over
 *    an aligned window of |M0| phases t0's sender is (p + c) mod |M0| for
 *    one shift c: a t0 machine sends, and receives from ti, once a window;
 *  - step 5's local messages take the first |Mi| phases of each sender's
 *    |Mi-1| phases (sizes are sorted, so |Mi-1| >= |Mi| residues fit).
 * A rank's messages: O(|M| log k); the user of a link in a phase: at most
 * three candidates (the subtree's outgoing, incoming and local message),
 * O(log k + height).  core/tests/test_rank_plan.c checks every answer
 * against the generator's schedule; tests/test_rank_plan.py joins every
 * rank's part on random trees. */
typedef struct fy_oracle {
    const tc_topology *t;
    int M, k, pi;               /* machines, subtrees, the subtree on the root's parent side (-1) */
    int64_t P, M0;
    int *sizes, *sub_of, *sub_node, *members, *first, *idx;
    int64_t *S;
    int *link_sub;              /* per link: subtree of its far side (the side without the root); -1: unused */
    char *link_up_out;          /* per link: its up direction leaves the far side */
    /* caches of the last answers (walks over phases ask the same again):
     * per subtree and direction the block [lo, hi) and its other subtree,
     * and t0's shift over the window starting at shift_p0 */
    int64_t *block_lo, *block_hi;
    int *block_other;
    int64_t shift_p0, shift;
    int64_t *range_lo, *range_hi;   /* per link: its far side's indices in its subtree, [lo, hi); lo -1: not a run */
} fy_oracle;

#define FY_T(o, i, x) ((o)->members[(o)->first[i] + (x)])
static int64_t fy_start(const fy_oracle *o, int i, int j)
{
    const int *s = o->sizes;
    return j > i ? (int64_t)s[i] * (o->S[j] - o->S[i + 1]) : o->P - (int64_t)s[j] * (o->S[i + 1] - o->S[j + 1]);
}

/* The block of ti's outgoing (out = 1) or tj's incoming (out = 0) messages
 * holding phase p: the other subtree, or -1. */
static int fy_block_search(const fy_oracle *o, int i, int out, int64_t p);
static int fy_block(const fy_oracle *o, int i, int out, int64_t p)
{
    fy_oracle *c = (fy_oracle *)o;   /* the caches only */
    const int slot = 2 * i + out;
    if (p >= c->block_lo[slot] && p < c->block_hi[slot]) return c->block_other[slot];
    int other = fy_block_search(o, i, out, p);
    if (other >= 0) {
        c->block_lo[slot] = out ? fy_start(o, i, other) : fy_start(o, other, i);
        c->block_hi[slot] = c->block_lo[slot] + (int64_t)o->sizes[i] * o->sizes[other];
        c->block_other[slot] = other;
    }
    return other;
}

static int fy_block_search(const fy_oracle *o, int i, int out, int64_t p)
{
    int lo = 0, hi = o->k - 2, found = -1;
    while (lo <= hi) {          /* last t whose block starts at or before p */
        int mid = (lo + hi) / 2, other = out ? (i + 1 + mid) % o->k : (int)mod(i - 1 - mid, o->k);
        if ((out ? fy_start(o, i, other) : fy_start(o, other, i)) <= p) { found = mid; lo = mid + 1; }
        else hi = mid - 1;
    }
    if (found < 0) return -1;
    int other = out ? (i + 1 + found) % o->k : (int)mod(i - 1 - found, o->k);
    int64_t st = out ? fy_start(o, i, other) : fy_start(o, other, i);
    return p < st + (int64_t)o->sizes[i] * o->sizes[other] ? other : -1;
}

/* t0's global sender over the aligned window starting at p0 is
 * (p - p0 + shift) mod |M0|. */
static int64_t fy_t0_shift(const fy_oracle *o, int64_t p0)
{
    if (p0 == o->shift_p0) return o->shift;
    int j = fy_block(o, 0, 1, p0);
    int64_t Mj = o->sizes[j], lcm = o->M0 / gcd(o->M0, Mj) * Mj;
    fy_oracle *c = (fy_oracle *)o;   /* the cache only */
    c->shift_p0 = p0;
    c->shift = ((p0 - fy_start(o, 0, j)) / lcm) % o->M0;
    return c->shift;
}
static int64_t fy_t0_send(const fy_oracle *o, int64_t p) { return (p % o->M0 + fy_t0_shift(o, p - p % o->M0)) % o->M0; }
static int64_t fy_t0_recv(const fy_oracle *o, int64_t p) { return (fy_t0_send(o, p) + 1 + (p / o->M0) % o->M0) % o->M0; }

/* The global message of block ti -> tj in phase p (inside the block). */
static void fy_global(const fy_oracle *o, int i, int j, int64_t p, tc_op_at *m)
{
    int64_t q = p - fy_start(o, i, j), Mj = o->sizes[j];
    m->phase = p;
    if (i == 0) { m->src = FY_T(o, 0, fy_t0_send(o, p)); m->dst = FY_T(o, j, mod(p - o->P, Mj)); }
    else if (j == 0) { m->src = FY_T(o, i, q / o->M0); m->dst = FY_T(o, 0, fy_t0_recv(o, p)); }
    else if (i > j) { m->src = FY_T(o, i, q / Mj); m->dst = FY_T(o, j, mod(p - o->P, Mj)); }
    else { m->src = FY_T(o, i, q / Mj); m->dst = FY_T(o, j, q % Mj); }
}

/* Subtree i's local message in phase p: 1 and *m, or 0. */
static int fy_local(const fy_oracle *o, int i, int64_t p, tc_op_at *m)
{
    m->phase = p;
    if (i == 0) {
        if (p >= o->M0 * (o->M0 - 1)) return 0;
        m->src = FY_T(o, 0, fy_t0_recv(o, p));
        m->dst = FY_T(o, 0, fy_t0_send(o, p));
        return 1;
    }
    int64_t st = fy_start(o, i, i - 1), Mi = o->sizes[i], Mprev = o->sizes[i - 1];
    if (p < st || p >= st + Mi * Mprev || (p - st) % Mprev >= Mi) return 0;
    int64_t v = (p - st) / Mprev, u = mod(p - o->P, Mi);
    if (u == v) return 0;
    m->src = FY_T(o, i, u);
    m->dst = FY_T(o, i, v);
    return 1;
}

/* The generator: every block's phases through the formulas, steps 1-6 in
 * the paper's order (the order of the operations within a phase is theirs). */
tc_status tc_a2a_faraj_yuan(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    (void)opt;
    tc_status rc = TC_OK;
    const int M = tc_topology_num_machines(topo);
    tc_schedule_builder *b = NULL;
    tc_phase_oracle po = {0};
    tc_op_at m;
    TC_TRY(rc, out, tc_builder_create("faraj-yuan", M, (int64_t)M * (M - 1), &b));
    if (M == 2) {
        TC_TRY(rc, out, tc_builder_add(b, 0, 0, 1));
        TC_TRY(rc, out, tc_builder_add(b, 0, 1, 0));
    }
    if (M <= 2) goto finish;
    TC_TRY(rc, out, tc_a2a_faraj_yuan_oracle(topo, &po));
    const fy_oracle *o = po.ctx;
    const int k = o->k;
    if (o->P > INT32_MAX) TC_FAIL_GOTO(rc, out, TC_ERR_LIMIT, "faraj-yuan: %lld phases is too many", (long long)o->P);
#define FY_BLOCK(i, j)                                                                              \
    for (int64_t p = fy_start(o, i, j); p < fy_start(o, i, j) + (int64_t)o->sizes[i] * o->sizes[j]; p++) { \
        fy_global(o, i, j, p, &m);                                                                  \
        TC_TRY(rc, out, tc_builder_add(b, (int32_t)p, m.src, m.dst));                               \
    }
    for (int j = 1; j < k; j++) FY_BLOCK(0, j)             /* step 1: t0 -> tj, rotate pattern */
    for (int i = 1; i < k; i++) FY_BLOCK(i, 0)             /* step 2: ti -> t0, Table 3's receivers */
    for (int64_t p = 0; p < o->M0 * (o->M0 - 1); p++)      /* step 3: t0's local messages */
        if (fy_local(o, 0, p, &m)) TC_TRY(rc, out, tc_builder_add(b, (int32_t)p, m.src, m.dst));
    for (int i = 2; i < k; i++)                            /* step 4: ti -> tj, i > j >= 1 */
        for (int j = 1; j < i; j++) FY_BLOCK(i, j)
    for (int i = 1; i < k; i++) {                          /* step 5: ti's local messages */
        int64_t st = fy_start(o, i, i - 1);
        for (int64_t p = st; p < st + (int64_t)o->sizes[i] * o->sizes[i - 1]; p++)
            if (fy_local(o, i, p, &m)) TC_TRY(rc, out, tc_builder_add(b, (int32_t)p, m.src, m.dst));
    }
    for (int i = 1; i < k; i++)                            /* step 6: ti -> tj, 1 <= i < j */
        for (int j = i + 1; j < k; j++) FY_BLOCK(i, j)
#undef FY_BLOCK
finish:
    rc = tc_builder_finish(b, sched);
    b = NULL;
out:
    tc_builder_destroy(b);
    if (po.destroy) po.destroy(po.ctx);
    return rc;
}

static int fy_below(const tc_topology *t, int node, int c)
{
    while (t->depth[node] > t->depth[c]) node = t->parent[node];
    return node == c;
}

static int fy_link_user(const void *ctx, int32_t e, int64_t p, tc_op_at *m)
{
    const fy_oracle *o = ctx;
    const tc_topology *t = o->t;
    if (p < 0 || p >= o->P) return 0;
    if (o->M == 2) {            /* the one phase {0->1, 1->0} (no root subtrees) */
        int32_t path[2 * TC_MAX_LEVELS + 4];
        for (int s = 0; s < 2; s++) {
            int L = tc_topology_path(t, s, 1 - s, path);
            for (int q = 0; q < L; q++)
                if (path[q] == e) { *m = (tc_op_at){s, 1 - s, 0}; return 1; }
        }
        return 0;
    }
    int l = e / 2, i = o->link_sub[l], c = t->links[l].child;
    if (i < 0) return 0;
    int out = (e % 2 == 0) == (o->link_up_out[l] != 0);   /* this direction leaves the far side */
    int far_is_below = o->link_up_out[l];                 /* far side = below c (else above it) */
    tc_op_at cand[3];
    int n = 0, other = fy_block(o, i, out, p);
    if (other >= 0) fy_global(o, out ? i : other, out ? other : i, p, &cand[n++]);
    if (fy_local(o, i, p, &cand[n])) n++;
    for (int q = 0; q < n; q++) {
        int s_in = fy_below(t, t->machines[cand[q].src], c) == far_is_below;
        int d_in = fy_below(t, t->machines[cand[q].dst], c) == far_is_below;
        if (out ? (s_in && !d_in) : (d_in && !s_in)) { *m = cand[q]; return 1; }
    }
    return 0;
}

static tc_status fy_rank_messages(const void *ctx, int r, tc_op_at *out, int64_t *n)
{
    const fy_oracle *o = ctx;
    if (o->M == 2) {
        out[0] = (tc_op_at){0, 1, 0};
        out[1] = (tc_op_at){1, 0, 0};
        *n = 2;
        return TC_OK;
    }
    const int i = o->sub_of[r], x = o->idx[r], k = o->k;
    const int64_t M0 = o->M0, P = o->P, Mi = o->sizes[i];
    int64_t w = 0;
    tc_op_at m;
#define FY_ADD(p_, s_, d_) do { out[w].phase = (p_); out[w].src = (s_); out[w].dst = (d_); w++; } while (0)
    for (int j = 0; j < k; j++) {
        if (j == i) continue;
        const int64_t Mj = o->sizes[j], so = fy_start(o, i, j), si = fy_start(o, j, i);
        /* sends: block i -> j */
        if (i == 0) {
            int64_t lcm = M0 / gcd(M0, Mj) * Mj;
            for (int64_t g = 0; g < Mj; g++) {
                int64_t q = g * M0 + mod(x - (g * M0) / lcm, M0);
                fy_global(o, 0, j, so + q, &m);
                FY_ADD(m.phase, m.src, m.dst);
            }
        } else {
            int64_t per = j == 0 ? M0 : Mj;
            for (int64_t q = x * per; q < (x + 1) * per; q++) {
                fy_global(o, i, j, so + q, &m);
                FY_ADD(m.phase, m.src, m.dst);
            }
        }
        /* receives: block j -> i */
        if (i == 0) {           /* once an aligned window of |M0| phases */
            for (int64_t p0 = si; p0 < si + M0 * Mj; p0 += M0) {
                int64_t c = fy_t0_shift(o, p0), u = mod(x - c - 1 - (p0 / M0) % M0, M0);
                fy_global(o, j, 0, p0 + u, &m);
                FY_ADD(m.phase, m.src, m.dst);
            }
        } else if (j == 0 || j > i) {   /* receiver (p - P) mod |Mi| */
            for (int64_t p = si + mod(x - (si - P), Mi); p < si + (int64_t)o->sizes[j] * Mi; p += Mi) {
                fy_global(o, j, i, p, &m);
                FY_ADD(m.phase, m.src, m.dst);
            }
        } else {                /* step 6: receiver q mod |Mi| */
            for (int64_t q = x; q < (int64_t)o->sizes[j] * Mi; q += Mi) {
                fy_global(o, j, i, si + q, &m);
                FY_ADD(m.phase, m.src, m.dst);
            }
        }
    }
    /* local messages */
    if (i == 0) {
        for (int64_t p0 = 0; p0 < M0 * (M0 - 1); p0 += M0) {
            int64_t c = fy_t0_shift(o, p0);
            int64_t ps = p0 + mod(x - c - 1 - p0 / M0, M0), pr = p0 + mod(x - c, M0);
            if (fy_local(o, 0, ps, &m)) FY_ADD(m.phase, m.src, m.dst);
            if (fy_local(o, 0, pr, &m)) FY_ADD(m.phase, m.src, m.dst);
        }
    } else {
        int64_t st = fy_start(o, i, i - 1), Mprev = o->sizes[i - 1];
        for (int64_t v = 0; v < Mi; v++) {
            if (v == x) continue;
            int64_t base = st + v * Mprev;
            if (fy_local(o, i, base + mod(x - (base - P), Mi), &m)) FY_ADD(m.phase, m.src, m.dst);
        }
        for (int64_t off = 0; off < Mi; off++)
            if (fy_local(o, i, st + x * Mprev + off, &m)) FY_ADD(m.phase, m.src, m.dst);
    }
#undef FY_ADD
    *n = w;
    return TC_OK;
}

/* ---- the nearest user of a link, without walking the phases ----
 * Where the far side F of a link holds machines with consecutive indices
 * [a, b) in its subtree (rank order within a subtree: the usual case), the
 * phases in which F's machines send (or receive) are runs: within a block
 * the sender is q / |Mj| (a run of phases) or, for t0, turns through a
 * window of |M0| phases; the receiver is a residue of the phase (a run in
 * each period).  So the nearest user is found a block, window or chunk at a
 * time: O(log k + blocks passed).  Other links walk the phases. */

/* The nearest phase in [lo, hi), searching from the top (dir < 0) or the
 * bottom, whose residue (ph - off) mod n lies in [ra, ra + len) mod n; -1. */
static int64_t fy_residue(int64_t lo, int64_t hi, int dir, int64_t off, int64_t n, int64_t ra, int64_t len)
{
    if (lo >= hi || len <= 0) return -1;
    if (len >= n) return dir < 0 ? hi - 1 : lo;
    int64_t s = dir < 0 ? hi - 1 : lo, r = mod(s - off - ra, n);
    if (r < len) return s;
    s = dir < 0 ? s - (r - (len - 1)) : s + (n - r);
    return s >= lo && s < hi ? s : -1;
}

/* The search range of a block [lo, hi) from phase p: strictly before or after. */
static void fy_clip(int64_t *lo, int64_t *hi, int64_t p, int dir)
{
    if (dir < 0) { if (*hi > p) *hi = p; }
    else if (*lo < p + 1) *lo = p + 1;
}

/* In t0's aligned windows of [lo, hi): the nearest phase whose index
 * (ph - p0 + C(p0)) mod |M0| is in [a, b), C = shift (+ 1 + window number
 * for t0's global receiver, `recv`). */
static int64_t fy_t0_windows(const fy_oracle *o, int64_t lo, int64_t hi, int dir, int recv, int64_t a, int64_t b)
{
    const int64_t M0 = o->M0;
    if (lo >= hi) return -1;
    for (int64_t p0 = (dir < 0 ? hi - 1 : lo) / M0 * M0; p0 + M0 > lo && p0 < hi; p0 += dir < 0 ? -M0 : M0) {
        int64_t C = fy_t0_shift(o, p0) + (recv ? 1 + (p0 / M0) % M0 : 0);
        int64_t wl = p0 > lo ? p0 : lo, wh = p0 + M0 < hi ? p0 + M0 : hi;
        int64_t ph = fy_residue(wl, wh, dir, p0 - C, M0, a, b - a);
        if (ph >= 0) return ph;
    }
    return -1;
}

/* The nearest global message of subtree i leaving (out) or entering it
 * whose end in i has an index in [a, b). */
static int64_t fy_global_near(const fy_oracle *o, int i, int out, int64_t a, int64_t b, int64_t p, int dir)
{
    const int k = o->k;
    int lo = 0, hi = k - 2, t = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, other = out ? (i + 1 + mid) % k : (int)mod(i - 1 - mid, k);
        if ((out ? fy_start(o, i, other) : fy_start(o, other, i)) <= p) { t = mid; lo = mid + 1; }
        else hi = mid - 1;
    }
    for (int tt = dir < 0 ? t : (t < 0 ? 0 : t); tt >= 0 && tt <= k - 2; tt += dir) {
        int other = out ? (i + 1 + tt) % k : (int)mod(i - 1 - tt, k);
        int64_t st = out ? fy_start(o, i, other) : fy_start(o, other, i), L = st, H = st + (int64_t)o->sizes[i] * o->sizes[other];
        fy_clip(&L, &H, p, dir);
        int64_t ph, Mi = o->sizes[i];
        if (i == 0) ph = fy_t0_windows(o, L, H, dir, !out, a, b);
        else if (out) {                         /* sender q / per: a run of phases */
            int64_t per = other == 0 ? o->M0 : o->sizes[other], rl = st + a * per, rh = st + b * per;
            if (rl < L) rl = L;
            if (rh > H) rh = H;
            ph = rl < rh ? (dir < 0 ? rh - 1 : rl) : -1;
        } else                                  /* receiver: a residue */
            ph = fy_residue(L, H, dir, other >= 1 && other < i ? st : o->P, Mi, a, b - a);
        if (ph >= 0) return ph;
    }
    return -1;
}

/* The nearest local message of subtree i crossing out of (or into) the
 * part with indices [a, b), no farther than `bound` (-1: none). */
static int64_t fy_local_near(const fy_oracle *o, int i, int out, int64_t a, int64_t b, int64_t p, int dir, int64_t bound)
{
    const int64_t Mi = o->sizes[i];
#define FY_IN(x) ((x) >= a && (x) < b)
#define FY_PAST(ph) (bound >= 0 && (dir < 0 ? (ph) < bound : (ph) > bound))
    if (i == 0) {               /* every phase below |M0|(|M0|-1): receiver-of-global -> sender-of-global */
        const int64_t M0 = o->M0;
        int64_t L = 0, H = M0 * (M0 - 1);
        fy_clip(&L, &H, p, dir);
        while (L < H) {
            int64_t ph = dir < 0 ? H - 1 : L;
            if (FY_PAST(ph)) return -1;
            /* the end inside: sender (t0_recv) out, receiver (t0_send) in */
            int64_t p0 = ph / M0 * M0, c = fy_t0_shift(o, p0), wl = p0 > L ? p0 : L, wh = p0 + M0 < H ? p0 + M0 : H;
            int64_t off = out ? p0 - c - 1 - p0 / M0 : p0 - c, q = fy_residue(wl, wh, dir, off, M0, a, b - a);
            if (q < 0) { if (dir < 0) H = wl; else L = wh; continue; }
            if (FY_PAST(q)) return -1;
            int64_t other = out ? fy_t0_send(o, q) : fy_t0_recv(o, q);
            if (!FY_IN(other)) return q;
            if (dir < 0) H = q; else L = q + 1;
        }
        return -1;
    }
    const int64_t st = fy_start(o, i, i - 1), Mprev = o->sizes[i - 1];
    int64_t L = st, H = st + Mi * Mprev;
    fy_clip(&L, &H, p, dir);
    if (L >= H) return -1;
    /* chunk v (receiver T(i,v)) holds phases [st + v Mprev, + Mi); sender u = (ph - P) mod Mi */
    for (int64_t v = ((dir < 0 ? H - 1 : L) - st) / Mprev; v >= 0 && v < Mi; v += dir) {
        int64_t cl = st + v * Mprev, ch = cl + Mi;
        if (FY_PAST(dir < 0 ? ch - 1 : cl)) return -1;
        if (out ? FY_IN(v) : !FY_IN(v)) continue;    /* the receiver must be on the other side */
        if (cl < L) cl = L;
        if (ch > H) ch = H;
        int64_t q = out ? fy_residue(cl, ch, dir, o->P, Mi, a, b - a)
                        : fy_residue(cl, ch, dir, o->P, Mi, b, Mi - (b - a));
        if (q >= 0) return FY_PAST(q) ? -1 : q;
    }
    return -1;
#undef FY_IN
#undef FY_PAST
}

/* The nearest user of directed link e before (dir < 0) or after phase p. */
static int fy_near_user(const void *ctx, int32_t e, int64_t p, int dir, tc_op_at *m)
{
    const fy_oracle *o = ctx;
    const int l = e / 2, i = o->M > 2 ? o->link_sub[l] : -1;
    if (i < 0 || o->range_lo[l] < 0) {   /* walk the phases */
        for (int64_t q = p + dir; q >= 0 && q < o->P; q += dir)
            if (fy_link_user(ctx, e, q, m)) return 1;
        return 0;
    }
    const int out = (e % 2 == 0) == (o->link_up_out[l] != 0);
    const int64_t a = o->range_lo[l], b = o->range_hi[l];
    int64_t g = fy_global_near(o, i, out, a, b, p, dir), loc = fy_local_near(o, i, out, a, b, p, dir, g);
    if (loc >= 0 && (g < 0 || (dir < 0 ? loc > g : loc < g))) return fy_local(o, i, loc, m);
    if (g < 0) return 0;
    int other = fy_block(o, i, out, g);
    fy_global(o, out ? i : other, out ? other : i, g, m);
    return 1;
}

static void fy_destroy(void *ctx)
{
    fy_oracle *o = ctx;
    if (!o) return;
    free(o->sizes); free(o->sub_of); free(o->sub_node); free(o->members); free(o->first); free(o->idx);
    free(o->S); free(o->link_sub); free(o->link_up_out);
    free(o->block_lo); free(o->block_hi); free(o->block_other); free(o->range_lo); free(o->range_hi);
    free(o);
}

tc_status tc_a2a_faraj_yuan_oracle(const tc_topology *topo, tc_phase_oracle *out)
{
    tc_status rc = TC_OK;
    const int M = tc_topology_num_machines(topo), L = topo->num_links, V = topo->num_nodes;
    int *branch = NULL;
    fy_oracle *o = tc_xcalloc(1, sizeof *o);
    if (!o) TC_FAIL(TC_ERR_NOMEM, "faraj-yuan: out of memory");
    o->t = topo;
    o->M = M;
    memset(out, 0, sizeof *out);
    o->P = M == 2;
    if (M <= 2) goto done;
    o->sizes = tc_xmalloc(sizeof(int) * (size_t)M);
    o->sub_of = tc_xmalloc(sizeof(int) * (size_t)M);
    o->sub_node = tc_xmalloc(sizeof(int) * (size_t)M);
    o->members = tc_xmalloc(sizeof(int) * (size_t)M);
    o->idx = tc_xmalloc(sizeof(int) * (size_t)M);
    o->first = tc_xcalloc((size_t)M + 1, sizeof(int));
    o->S = tc_xcalloc((size_t)M + 1, sizeof(int64_t));
    o->link_sub = tc_xmalloc(sizeof(int) * ((size_t)L + 1));
    o->link_up_out = tc_xcalloc((size_t)L + 1, 1);
    branch = tc_xmalloc(sizeof(int) * (size_t)V);
    o->block_lo = tc_xcalloc(2 * (size_t)M, sizeof(int64_t));
    o->block_hi = tc_xcalloc(2 * (size_t)M, sizeof(int64_t));   /* empty ranges: nothing cached */
    o->block_other = tc_xcalloc(2 * (size_t)M, sizeof(int));
    o->shift_p0 = -1;
    o->range_lo = tc_xmalloc(sizeof(int64_t) * ((size_t)L + 1));
    o->range_hi = tc_xmalloc(sizeof(int64_t) * ((size_t)L + 1));
    if (!o->sizes || !o->sub_of || !o->sub_node || !o->members || !o->idx || !o->first || !o->S || !o->link_sub ||
        !o->link_up_out || !branch || !o->block_lo || !o->block_hi || !o->block_other || !o->range_lo || !o->range_hi)
        TC_FAIL_GOTO(rc, out_, TC_ERR_NOMEM, "faraj-yuan: out of memory");
    int root;
    TC_TRY(rc, out_, tc_topology_aapc_root(topo, &root, &o->k, o->sizes, o->sub_of, o->sub_node));
    for (int r = 0; r < M; r++) o->first[o->sub_of[r] + 1]++;
    for (int i = 0; i < o->k; i++) o->first[i + 1] += o->first[i];
    for (int r = 0; r < M; r++) o->idx[r] = 0;
    {
        int *fill = o->link_sub;    /* scratch, k <= M <= L + 1 entries */
        for (int i = 0; i < o->k; i++) fill[i] = 0;
        for (int r = 0; r < M; r++) { o->idx[r] = fill[o->sub_of[r]]++; FY_T(o, o->sub_of[r], o->idx[r]) = r; }
    }
    for (int i = 0; i < o->k; i++) o->S[i + 1] = o->S[i] + o->sizes[i];
    o->M0 = o->sizes[0];
    o->P = o->M0 * (M - o->M0);
    if (o->P != tc_topology_alltoall_load(topo))
        TC_FAIL_GOTO(rc, out_, TC_ERR_VERIFY, "faraj-yuan: internal error: root load %lld differs from the bottleneck "
                     "load %lld", (long long)o->P, (long long)tc_topology_alltoall_load(topo));
    /* each link's far side: below its child unless the root is; its subtree */
    o->pi = -1;
    for (int v = 0; v < V; v++) branch[v] = -1;
    for (int i = 0; i < o->k; i++) {
        branch[o->sub_node[i]] = i;
        if (o->sub_node[i] == topo->parent[root]) o->pi = i;
    }
    for (int l = 0; l < L; l++) {
        int c = topo->links[l].child;
        o->link_sub[l] = -1;
        if (topo->below[c] == 0 || topo->below[c] == M) continue;   /* no message crosses it */
        if (fy_below(topo, root, c)) { o->link_sub[l] = o->pi; continue; }   /* far side above c */
        o->link_up_out[l] = 1;
        int y = c;
        while (branch[y] < 0 && topo->parent[y] >= 0 && topo->parent[y] != root) y = topo->parent[y];
        o->link_sub[l] = branch[y] >= 0 ? branch[y] : o->pi;
    }
    /* each link's far side as a run of indices: below a node, the least and
     * greatest index of its machines (a run when they count its machines);
     * above (the parent-side subtree), all of it when nothing of it is below */
    {
        int64_t *lo = tc_xmalloc(sizeof(int64_t) * (size_t)V), *hi = tc_xmalloc(sizeof(int64_t) * (size_t)V);
        if (!lo || !hi) { free(lo); free(hi); TC_FAIL_GOTO(rc, out_, TC_ERR_NOMEM, "faraj-yuan: out of memory"); }
        for (int v = 0; v < V; v++) { lo[v] = INT64_MAX; hi[v] = -1; }
        for (int r = 0; r < M; r++)
            for (int v = topo->machines[r]; v >= 0; v = topo->parent[v]) {
                if (o->idx[r] < lo[v]) lo[v] = o->idx[r];
                if (o->idx[r] > hi[v]) hi[v] = o->idx[r];
            }
        for (int l = 0; l < L; l++) {
            int c = topo->links[l].child;
            o->range_lo[l] = o->range_hi[l] = -1;
            if (o->link_sub[l] < 0) continue;
            if (o->link_up_out[l]) {
                if (hi[c] - lo[c] + 1 == topo->below[c]) { o->range_lo[l] = lo[c]; o->range_hi[l] = hi[c] + 1; }
            } else if (topo->below[c] == M - o->sizes[o->pi]) {
                o->range_lo[l] = 0;
                o->range_hi[l] = o->sizes[o->pi];
            }
        }
        free(lo);
        free(hi);
    }
done:
    out->topo = topo;
    out->phases = o->P;
    out->ctx = o;
    out->rank_messages = fy_rank_messages;
    out->link_user = fy_link_user;
    out->near_user = fy_near_user;
    out->destroy = fy_destroy;
    free(branch);
    return TC_OK;
out_:
    free(branch);
    fy_destroy(o);
    return rc;
}
