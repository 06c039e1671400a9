/* Per-rank planning (see topocoll.h, "per-rank planning").  MPI-free.
 *
 * A rank's part: its 2 (p - 1) messages from the algorithm's phase oracle,
 * then for each message it sends and each network link on its path, the
 * link's previous user (the syncs it waits for) and next user (the syncs
 * it signals), found by walking the phases from the message's own.  Memory
 * O(p + h): the part itself, no table over links or phases.  The whole
 * schedule's redundant-sync removal (vector clocks over every message)
 * has no per-rank form; the rule here keeps, of a link's consecutive users,
 * the pairs whose highest shared link it is, which the two ranks decide
 * alike (docs/design.md, "Per-rank planning", has the proof and the counts
 * against the whole schedule's). */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct sync_at { tc_op_at after, before; } sync_at;

static int cmp_at(const tc_op_at *x, const tc_op_at *y)
{
    if (x->phase != y->phase) return (x->phase > y->phase) - (x->phase < y->phase);
    if (x->src != y->src) return (x->src > y->src) - (x->src < y->src);
    return (x->dst > y->dst) - (x->dst < y->dst);
}
static int cmp_op_at(const void *a, const void *b) { return cmp_at(a, b); }
static int cmp_sync_at(const void *a, const void *b)
{
    const sync_at *x = a, *y = b;
    int c = cmp_at(&x->after, &y->after);
    return c ? c : cmp_at(&x->before, &y->before);
}

/* Priority of a directed link: nearer the root first, then up before down,
 * then by link index (a strict order: the induction of the sync rule). */
static int64_t link_key(const tc_topology *t, int32_t e)
{
    int l = e / 2;
    return ((int64_t)t->depth[t->links[l].child] * 2 + (e & 1)) * (t->num_links + 1) + l;
}

/* The highest network link the paths of x and y share (-1: none). */
static int32_t top_shared(const tc_topology *t, const tc_op_at *x, const tc_op_at *y, int32_t *px, int32_t *py)
{
    int nx = tc_topology_path(t, x->src, x->dst, px), ny = tc_topology_path(t, y->src, y->dst, py);
    int32_t best = -1;
    for (int a = 0; a < nx; a++) {
        if (tc_topology_link_is_local(t, px[a] / 2)) continue;
        for (int b = 0; b < ny; b++)
            if (px[a] == py[b] && (best < 0 || link_key(t, px[a]) < link_key(t, best))) best = px[a];
    }
    return best;
}

/* The depth-th user of link e before (dir -1) or after (dir +1) phase p. */
static int nth_user(const tc_phase_oracle *o, int32_t e, int64_t p, int dir, int depth, tc_op_at *m)
{
    for (int count = 0; count < depth; count++, p = m->phase)
        if (!o->near_user(o->ctx, e, p, dir, m)) return 0;
    return 1;
}

typedef struct growing { sync_at *v; int64_t n, cap; } growing;

static tc_status push(growing *g, const tc_op_at *a, const tc_op_at *b)
{
    if (g->n == g->cap) {
        int64_t cap = g->cap ? 2 * g->cap : 256;
        sync_at *v = realloc(g->v, sizeof(sync_at) * (size_t)cap);
        if (!v) TC_FAIL(TC_ERR_NOMEM, "per-rank plan: out of memory for %lld syncs", (long long)cap);
        g->v = v;
        g->cap = cap;
    }
    g->v[g->n++] = (sync_at){*a, *b};
    return TC_OK;
}

/* The syncs of rank's sends (waits: dir -1, x before; signals: dir +1). */
static tc_status rank_syncs(const tc_phase_oracle *o, int rank, const tc_op_at *msgs, int64_t n, int depth, int dir,
                            growing *out, int32_t *path, int32_t *px, int32_t *py)
{
    const tc_topology *t = o->topo;
    for (int64_t i = 0; i < n; i++) {
        if (msgs[i].src != rank) continue;
        int L = tc_topology_path(t, msgs[i].src, msgs[i].dst, path);
        for (int k = 0; k < L; k++) {
            int32_t e = path[k];
            int child = t->links[e / 2].child;
            if (tc_topology_link_is_local(t, e / 2)) continue;
            if (e % 2 == 0 && t->below[child] == 1 && t->nodes[child].kind == TC_NODE_MACHINE) continue;  /* only this rank sends on it */
            tc_op_at other;
            if (!nth_user(o, e, msgs[i].phase, dir, depth, &other) || other.src == rank) continue;
            const tc_op_at *x = dir < 0 ? &other : &msgs[i], *y = dir < 0 ? &msgs[i] : &other;
            if (depth == 1 && top_shared(t, x, y, px, py) != e) continue;
            tc_status rc = push(out, x, y);
            if (rc != TC_OK) return rc;
        }
    }
    return TC_OK;
}

static int64_t unique(void *base, int64_t n, size_t size, int (*cmp)(const void *, const void *))
{
    char *v = base;
    if (n <= 0) return 0;
    qsort(v, (size_t)n, size, cmp);
    int64_t w = 0;
    for (int64_t i = 0; i < n; i++)
        if (w == 0 || cmp(v + (size_t)(w - 1) * size, v + (size_t)i * size)) memmove(v + (size_t)w++ * size, v + (size_t)i * size, size);
    return w;
}

tc_status tc_alltoall_plan_rank(const char *name, const tc_topology *topo, const tc_plan_options *opt, int rank,
                                tc_schedule **part)
{
    int a = tc_algorithm_find(name);
    if (a < 0) {
        char list[512];
        tc_join_names(list, sizeof list, tc_algorithm_count(), tc_algorithm_name);
        TC_FAIL(TC_ERR_ARG, "unknown all-to-all algorithm '%s'; valid: %s", name ? name : "", list);
    }
    if (!topo || !topo->finalized) TC_FAIL(TC_ERR_ARG, "%s: topology not finalized", name);
    const int p = tc_topology_num_machines(topo);
    if (rank < 0 || rank >= p) TC_FAIL(TC_ERR_ARG, "%s: rank %d is not one of the topology's %d ranks (0-%d)", name, rank, p, p - 1);
    int depth = opt && opt->sync_depth > 1 ? opt->sync_depth : 1;

    tc_status rc = TC_OK;
    tc_phase_oracle o;
    memset(&o, 0, sizeof o);
    tc_op_at *msgs = NULL, *ops = NULL;
    int32_t *path = NULL, *px = NULL, *py = NULL;
    int64_t *step_phase = NULL, nmsg = 0;
    tc_sync *syncs = NULL;
    growing g = {NULL, 0, 0};
    tc_schedule_builder *b = NULL;
    const int h = tc_topology_height(topo);

    TC_TRY(rc, out, tc_algorithm_oracle(a, topo, &o));
    if (o.phases > INT32_MAX) TC_FAIL_GOTO(rc, out, TC_ERR_LIMIT, "%s: %lld phases is too many", name, (long long)o.phases);
    msgs = tc_xmalloc(sizeof(tc_op_at) * (size_t)(2 * p + 1));
    path = tc_xmalloc(sizeof(int32_t) * (size_t)(2 * h + 2));
    px = tc_xmalloc(sizeof(int32_t) * (size_t)(2 * h + 2));
    py = tc_xmalloc(sizeof(int32_t) * (size_t)(2 * h + 2));
    if (!msgs || !path || !px || !py) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "%s: out of memory", name);
    if (p > 1) TC_TRY(rc, out, o.rank_messages(o.ctx, rank, msgs, &nmsg));
    qsort(msgs, (size_t)nmsg, sizeof *msgs, cmp_op_at);
    if (tc_algorithm_runs_with_syncs(a)) {
        TC_TRY(rc, out, rank_syncs(&o, rank, msgs, nmsg, depth, -1, &g, path, px, py));
        TC_TRY(rc, out, rank_syncs(&o, rank, msgs, nmsg, depth, +1, &g, path, px, py));
    }
    g.n = unique(g.v, g.n, sizeof(sync_at), cmp_sync_at);

    /* the part's messages: the rank's own and the other end of each sync */
    int64_t nops = nmsg + 2 * g.n;
    ops = tc_xmalloc(sizeof(tc_op_at) * (size_t)(nops + 1));
    if (!ops) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "%s: out of memory", name);
    memcpy(ops, msgs, sizeof(tc_op_at) * (size_t)nmsg);
    for (int64_t i = 0; i < g.n; i++) { ops[nmsg + 2 * i] = g.v[i].after; ops[nmsg + 2 * i + 1] = g.v[i].before; }
    nops = unique(ops, nops, sizeof(tc_op_at), cmp_op_at);
    step_phase = tc_xmalloc(sizeof(int64_t) * (size_t)(nops + 1));
    syncs = tc_xmalloc(sizeof(tc_sync) * (size_t)(g.n + 1));
    if (!step_phase || !syncs) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "%s: out of memory", name);
    TC_TRY(rc, out, tc_builder_create(name, p, nops, &b));
    int32_t steps = 0;
    for (int64_t i = 0; i < nops; i++) {
        if (i == 0 || ops[i].phase != ops[i - 1].phase) step_phase[steps++] = ops[i].phase;
        TC_TRY(rc, out, tc_builder_add(b, steps - 1, ops[i].src, ops[i].dst));
    }
    /* ops keep this order (the builder sorts by step, stably) */
    for (int64_t i = 0; i < g.n; i++) {
        const tc_op_at *x = bsearch(&g.v[i].after, ops, (size_t)nops, sizeof *ops, cmp_op_at);
        const tc_op_at *y = bsearch(&g.v[i].before, ops, (size_t)nops, sizeof *ops, cmp_op_at);
        syncs[i] = (tc_sync){x - ops, y - ops};
    }
    TC_TRY(rc, out, tc_builder_finish(b, part));
    b = NULL;
    (*part)->part_rank = rank;
    (*part)->num_phases = o.phases;
    (*part)->step_phase = step_phase;
    step_phase = NULL;
    rc = tc_schedule_set_syncs(*part, syncs, g.n);   /* sorted by after, then before: the executor's posting order */
    if (rc != TC_OK) { tc_schedule_destroy(*part); *part = NULL; }
out:
    tc_builder_destroy(b);
    if (o.destroy) o.destroy(o.ctx);
    free(msgs); free(ops); free(path); free(px); free(py); free(step_phase); free(syncs); free(g.v);
    return rc;
}

/* ---- the whole from the parts ---- */

static int cmp_key(const void *a, const void *b) { return cmp_op_at(a, b); }

/* An op of part s as a tc_op_at (its phase in the whole). */
static tc_op_at at_of(const tc_schedule *s, const int64_t *step_of, int64_t i)
{
    return (tc_op_at){s->ops[i].src, s->ops[i].dst, tc_schedule_step_phase(s, (int)step_of[i])};
}

static int64_t *steps_of(const tc_schedule *s)
{
    int64_t *v = tc_xmalloc(sizeof(int64_t) * (size_t)(s->num_ops + 1));
    if (!v) return NULL;
    for (int st = 0; st < s->num_steps; st++)
        for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) v[i] = st;
    return v;
}

tc_status tc_schedule_from_parts(const tc_schedule *const *parts, int n, tc_schedule **whole)
{
    tc_status rc = TC_OK;
    tc_op_at *sent = NULL;
    sync_at *waits = NULL, *signals = NULL;
    int64_t nsent = 0, nwait = 0, nsignal = 0, *step_of = NULL, *recv_count = NULL;
    int32_t *triples = NULL;
    tc_sync *syncs = NULL;
    *whole = NULL;
    if (n < 1) TC_FAIL(TC_ERR_ARG, "parts: none given");
    int64_t total = 0, total_syncs = 0;
    for (int r = 0; r < n; r++) {
        if (!parts[r] || parts[r]->part_rank != r || parts[r]->num_ranks != n || parts[r]->num_phases != parts[0]->num_phases ||
            strcmp(parts[r]->algorithm, parts[0]->algorithm))
            TC_FAIL(TC_ERR_ARG, "parts: entry %d is not rank %d's part of the %d-rank schedule of %lld phases entry 0 "
                    "belongs to", r, r, n, (long long)parts[0]->num_phases);
        total += parts[r]->num_ops;
        total_syncs += parts[r]->num_syncs;
    }
    sent = tc_xmalloc(sizeof(tc_op_at) * (size_t)(total + 1));
    waits = tc_xmalloc(sizeof(sync_at) * (size_t)(total_syncs + 1));
    signals = tc_xmalloc(sizeof(sync_at) * (size_t)(total_syncs + 1));
    recv_count = tc_xcalloc((size_t)n, sizeof(int64_t));
    if (!sent || !waits || !signals || !recv_count) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "parts: out of memory");
    for (int r = 0; r < n; r++) {
        const tc_schedule *s = parts[r];
        free(step_of);
        if (!(step_of = steps_of(s))) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "parts: out of memory");
        for (int64_t i = 0; i < s->num_ops; i++) {
            if (s->ops[i].src == r) sent[nsent++] = at_of(s, step_of, i);
            if (s->ops[i].dst == r) recv_count[r]++;
        }
        for (int64_t k = 0; k < s->num_syncs; k++) {
            sync_at y = {at_of(s, step_of, s->syncs[k].after), at_of(s, step_of, s->syncs[k].before)};
            if (y.before.src == r) waits[nwait++] = y;
            if (y.after.src == r) signals[nsignal++] = y;
        }
    }
    qsort(sent, (size_t)nsent, sizeof *sent, cmp_key);
    /* every message a part receives is sent, in that phase, by its sender's part */
    for (int r = 0; r < n; r++) {
        const tc_schedule *s = parts[r];
        free(step_of);
        if (!(step_of = steps_of(s))) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "parts: out of memory");
        for (int64_t i = 0; i < s->num_ops; i++) {
            tc_op_at m = at_of(s, step_of, i);
            if ((m.dst == r || m.src != r) && !bsearch(&m, sent, (size_t)nsent, sizeof m, cmp_key))
                TC_FAIL_GOTO(rc, out, TC_ERR_VERIFY, "parts: rank %d's part has %d->%d in phase %lld, which rank %d's "
                             "part does not send", r, m.src, m.dst, (long long)m.phase, m.src);
        }
    }
    for (int64_t i = 0; i < nsent; i++) recv_count[sent[i].dst]--;
    for (int r = 0; r < n; r++)
        if (recv_count[r]) TC_FAIL_GOTO(rc, out, TC_ERR_VERIFY, "parts: rank %d's part receives %lld messages fewer than "
                                        "the others send it", r, (long long)-recv_count[r]);
    /* every sync both in its waiter's part and in its signaller's */
    qsort(waits, (size_t)nwait, sizeof *waits, cmp_sync_at);
    qsort(signals, (size_t)nsignal, sizeof *signals, cmp_sync_at);
    for (int64_t i = 0; i < nwait || i < nsignal; i++) {
        const sync_at *w = i < nwait ? &waits[i] : NULL, *g = i < nsignal ? &signals[i] : NULL;
        if (w && g && !cmp_sync_at(w, g)) continue;
        const sync_at *first = !g || (w && cmp_sync_at(w, g) < 0) ? w : g;
        TC_FAIL_GOTO(rc, out, TC_ERR_VERIFY, "parts: the sync %d->%d (phase %lld) before %d->%d (phase %lld) is in rank "
                     "%d's part but not in rank %d's", first->after.src, first->after.dst, (long long)first->after.phase,
                     first->before.src, first->before.dst, (long long)first->before.phase,
                     first == w ? first->before.src : first->after.src, first == w ? first->after.src : first->before.src);
    }
    triples = tc_xmalloc(sizeof(int32_t) * (size_t)(3 * nsent + 1));
    syncs = tc_xmalloc(sizeof(tc_sync) * (size_t)(nwait + 1));
    if (!triples || !syncs) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "parts: out of memory");
    for (int64_t i = 0; i < nsent; i++) {
        triples[3 * i] = (int32_t)sent[i].phase;
        triples[3 * i + 1] = sent[i].src;
        triples[3 * i + 2] = sent[i].dst;
    }
    TC_TRY(rc, out, tc_schedule_from_triples(parts[0]->algorithm, n, nsent, triples, whole));
    if (parts[0]->num_phases > (*whole)->num_steps) {   /* trailing empty phases count */
        int64_t *sb = realloc((*whole)->step_begin, sizeof(int64_t) * (size_t)(parts[0]->num_phases + 2));
        if (!sb) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "parts: out of memory");
        for (int64_t st = (*whole)->num_steps + 1; st <= parts[0]->num_phases; st++) sb[st] = sb[(*whole)->num_steps];
        (*whole)->step_begin = sb;
        (*whole)->num_steps = (int)parts[0]->num_phases;
    }
    /* sent is sorted by (phase, src, dst) and so are the whole's ops */
    for (int64_t i = 0; i < nwait; i++) {
        const tc_op_at *x = bsearch(&waits[i].after, sent, (size_t)nsent, sizeof *sent, cmp_key);
        const tc_op_at *y = bsearch(&waits[i].before, sent, (size_t)nsent, sizeof *sent, cmp_key);
        syncs[i] = (tc_sync){x - sent, y - sent};
    }
    rc = tc_schedule_set_syncs(*whole, syncs, nwait);
out:
    if (rc != TC_OK && *whole) { tc_schedule_destroy(*whole); *whole = NULL; }
    free(sent); free(waits); free(signals); free(step_of); free(recv_count); free(triples); free(syncs);
    return rc;
}
