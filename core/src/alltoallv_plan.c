/* The unequal-block planner (MPI_Alltoallv): a traffic matrix D into a
 * schedule of the IR whose steps are contention-free, every directed link
 * carrying at most one piece a step.  MPI-free.
 *
 * Method: first-fit colouring of the pieces' paths, heaviest links first.
 *  1. Block (i, j) of D[i][j] > 0 bytes is cut into c = ceil(D / Q) pieces
 *     (at most TC_MAX_SEGMENTS; the IR's part/parts, so piece k is bytes
 *     [k D / c, (k + 1) D / c) of the block).
 *  2. Each directed link's time load is the bytes crossing it over its rate;
 *     a block's priority is the largest time load on its path.  Blocks are
 *     taken by priority, larger blocks first among equals (then sender,
 *     receiver), and each of their pieces
 *     goes to the earliest step in which every link of its path is free.
 *     The most loaded link's pieces, placed first, fill steps 0, 1, ... with
 *     no gap, so the bottleneck is never idle for want of a step; lighter
 *     links fill the steps around them.
 *  3. Q is the piece size the model (tc_model_traffic_time: the executor's
 *     rules, one start-up a piece and a sync) predicts fastest among the
 *     mean non-empty block times 2^-3 .. 2 and whole blocks, up to
 *     TC_ALLTOALLV_SEARCH_BLOCKS blocks; past that, the mean where some
 *     block is over 4 means, else whole blocks; or the caller's.
 * Why not an exact edge colouring: a step may hold one piece a link on
 * every link of a tree, which is path colouring, NP-hard on trees in general
 * (bipartite edge colouring, König, covers one switch only); a
 * Birkhoff-von Neumann decomposition is for one switch as well.  First fit
 * in this order met the links' piece load (the fewest steps possible) on
 * every 12-rank pattern we bench, and the model puts it within 3-5 % of the
 * link-load bound there (docs/results).  It reduces to faraj-yuan: a uniform D (every block off
 * the diagonal the same, > 0) is planned as faraj-yuan's phases, which are
 * optimal (its step count is the bottleneck's load).
 * Cost: O(p^2 h) for loads and priorities, O(p^2 log p) to sort, and per
 * piece O(h) words for each 64 steps it searches (first_fit.c); candidates multiply it by 6 when Q is the
 * model's.  Measured (docs/results/2026-11-23-alltoallv.md): 256 ranks
 * 12-27 ms, 1,024 ranks 0.3-0.8 s, one candidate.
 */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct block_key { double priority; int64_t bytes; int32_t src, dst; } block_key;

static int by_priority(const void *a, const void *b)
{
    const block_key *x = a, *y = b;
    if (x->priority != y->priority) return x->priority > y->priority ? -1 : 1;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    return (x->dst > y->dst) - (x->dst < y->dst);
}

int tc_traffic_uniform(const tc_traffic *d, int64_t *block)
{
    const int p = tc_traffic_ranks(d);
    const int64_t *D = tc_traffic_bytes(d);
    *block = p > 1 ? D[1] : 0;
    for (int i = 0; i < p; i++)
        for (int j = 0; j < p; j++)
            if (i != j && D[(int64_t)i * p + j] != *block) return 0;
    return *block > 0;
}

static int64_t keys_max(const block_key *keys, int64_t n)
{
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++)
        if (keys[k].bytes > m) m = keys[k].bytes;
    return m;
}

/* Pieces of a block of n bytes cut at q bytes a piece. */
static int32_t pieces_of(int64_t n, long long q)
{
    if (n <= 0) return 0;
    int64_t c = q > 0 ? (n + q - 1) / q : 1;
    return (int32_t)(c > TC_MAX_SEGMENTS ? TC_MAX_SEGMENTS : c);
}

/* Plan with piece size q (0: whole blocks): blocks sorted (keys), first fit. */
static tc_status plan_pieces(const tc_topology *t, const tc_traffic *d, const block_key *keys, int64_t nkeys,
                             long long q, tc_schedule **out)
{
    const int p = tc_traffic_ranks(d);
    const int E = 2 * t->num_links;
    int64_t pieces = 0, steps_hint = 0;
    int64_t *load = tc_xcalloc((size_t)E + 1, sizeof(int64_t));
    int32_t *lpath = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    if (!load || !lpath) { free(load); free(lpath); TC_FAIL(TC_ERR_NOMEM, "alltoallv: out of memory"); }
    for (int64_t k = 0; k < nkeys; k++) {   /* the links' piece loads: no plan has fewer steps */
        int32_t c = pieces_of(keys[k].bytes, q);
        int L = tc_topology_path(t, keys[k].src, keys[k].dst, lpath);
        pieces += c;
        for (int e = 0; e < L; e++)
            if ((load[lpath[e]] += c) > steps_hint) steps_hint = load[lpath[e]];
    }
    free(load);
    free(lpath);
    if (pieces > TC_MAX_PLAN_MESSAGES)
        TC_FAIL(TC_ERR_LIMIT, "alltoallv: %lld pieces of %lld bytes; a plan holds at most %lld messages",
                (long long)pieces, q, (long long)TC_MAX_PLAN_MESSAGES);
    tc_first_fit *occ = NULL;
    int32_t *path = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    tc_schedule_builder *b = NULL;
    tc_status rc = tc_first_fit_create(E, steps_hint + steps_hint / 4, &occ);
    if (rc == TC_OK && !path) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "alltoallv: out of memory");
    if (rc) goto out;
    TC_TRY(rc, out, tc_builder_create("planned", p, pieces, &b));
    for (int64_t k = 0; k < nkeys && rc == TC_OK; k++) {
        int i = keys[k].src, j = keys[k].dst;
        int32_t c = pieces_of(keys[k].bytes, q);
        int L = tc_topology_path(t, i, j, path);
        /* a piece's search starts past the last piece of its block: the
         * steps between were busy on the path, and still are */
        int64_t step = -1;
        for (int32_t part = 0; part < c && rc == TC_OK; part++) {
            TC_TRY(rc, out, tc_first_fit_place(occ, path, L, step + 1, &step));
            if (rc == TC_OK) rc = tc_builder_add_part(b, (int32_t)step, i, j, part, c);
        }
    }
    if (rc == TC_OK) {
        rc = tc_builder_finish(b, out);
        b = NULL;
    }
out:
    tc_builder_destroy(b);
    tc_first_fit_destroy(occ);
    free(path);
    return rc;
}

tc_status tc_alltoallv_plan(const tc_topology *t, const tc_traffic *d, const tc_alltoallv_options *opt, int execute,
                            tc_schedule **sched, tc_alltoallv_info *info)
{
    tc_alltoallv_options o = {0};
    tc_alltoallv_info inf = {0};
    tc_model_network defnet;
    *sched = NULL;
    if (opt) o = *opt;
    if (!t || !t->finalized || !d) TC_FAIL(TC_ERR_ARG, "alltoallv: topology not finalized or no matrix");
    const int p = tc_traffic_ranks(d);
    if (tc_topology_num_machines(t) != p)
        TC_FAIL(TC_ERR_ARG, "alltoallv: the matrix has %d ranks but the topology %d machines (ranks)", p,
                tc_topology_num_machines(t));
    if (o.piece_bytes < 0 || o.piece_bytes > (long long)TC_MAX_SIZE)
        TC_FAIL(TC_ERR_ARG, "alltoallv: piece size %lld bytes (0: the model's choice, at most %.0f)", o.piece_bytes,
                TC_MAX_SIZE);
    if (!o.net) {
        tc_model_default_network(&defnet, TC_DEFAULT_BANDWIDTH, TC_DEFAULT_LATENCY);
        o.net = &defnet;
    }
    const int64_t *D = tc_traffic_bytes(d);
    int64_t uniform_block;
    tc_status rc = TC_OK;
    if (tc_traffic_uniform(d, &uniform_block)) {
        /* faraj-yuan's phases: whole blocks, every message of a phase alike */
        tc_plan_options po = {1, 0, NULL, o.sync_depth, o.phase_order, 0};
        TC_TRY(rc, done, tc_alltoall_plan_with_options("faraj-yuan", t, &po, execute, sched));
        inf.uniform = 1;
        inf.piece_bytes = uniform_block;
        TC_TRY(rc, done, tc_model_traffic_time(*sched, t, d, o.net, &inf.predicted_seconds));
        goto done;
    }
    /* priorities: the largest time load on each block's path */
    const int E = 2 * t->num_links;
    double *tload = tc_xcalloc((size_t)E + 1, sizeof(double));
    int32_t *path = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    int64_t nkeys = 0, total = 0;
    for (int64_t k = 0; k < (int64_t)p * p; k++)
        if (D[k] > 0 && k / p != k % p) nkeys++;
    block_key *keys = tc_xmalloc(sizeof(block_key) * (size_t)(nkeys + 1));
    if (!tload || !path || !keys) {
        free(tload); free(path); free(keys);
        TC_FAIL(TC_ERR_NOMEM, "alltoallv: out of memory for %lld blocks", (long long)nkeys);
    }
    nkeys = 0;
    for (int i = 0; i < p; i++)
        for (int j = 0; j < p; j++) {
            int64_t x = D[(int64_t)i * p + j];
            if (i == j || x <= 0) continue;
            int L = tc_topology_path(t, i, j, path);
            for (int e = 0; e < L; e++) tload[path[e]] += 8.0 * (double)x;
            keys[nkeys++] = (block_key){0, x, i, j};
            total += x;
        }
    for (int e = 0; e < E; e++) {
        const tc_link_decl *l = &t->links[e / 2];
        tload[e] /= l->bandwidth > 0 ? l->bandwidth : o.net->default_rate;
    }
    for (int64_t k = 0; k < nkeys; k++) {
        int L = tc_topology_path(t, keys[k].src, keys[k].dst, path);
        for (int e = 0; e < L; e++)
            if (tload[path[e]] > keys[k].priority) keys[k].priority = tload[path[e]];
    }
    qsort(keys, (size_t)nkeys, sizeof *keys, by_priority);
    /* the piece size: the caller's, or the model's fastest candidate */
    long long cand[8];
    int ncand = 0;
    if (o.piece_bytes > 0) cand[ncand++] = o.piece_bytes;
    else if (nkeys > 0 && nkeys <= TC_ALLTOALLV_SEARCH_BLOCKS) {
        long long mean = (long long)(total / nkeys);
        for (int s = -3; s <= 1; s++) {
            long long q = s < 0 ? mean >> -s : mean << s;
            if (q >= 1024 && (ncand == 0 || q != cand[ncand - 1])) cand[ncand++] = q;
        }
        cand[ncand++] = 0;   /* whole blocks */
    } else {
        /* too many blocks to plan six times: cut at the mean where some
         * block is over 4 means (a few large blocks would stretch their
         * steps), else whole blocks (the model's choice in both cases on
         * the benchmark's patterns, 256 and 1,024 ranks) */
        long long mean = nkeys ? (long long)(total / nkeys) : 0;
        cand[ncand++] = nkeys && keys_max(keys, nkeys) > 4 * mean ? mean : 0;
    }
    for (int c = 0; c < ncand && rc == TC_OK; c++) {
        tc_schedule *s = NULL;
        double secs = 0;
        rc = plan_pieces(t, d, keys, nkeys, cand[c], &s);
        if (rc == TC_OK) rc = tc_model_traffic_time(s, t, d, o.net, &secs);
        if (rc == TC_OK && (!*sched || secs < inf.predicted_seconds)) {
            tc_schedule_destroy(*sched);
            *sched = s;
            inf.predicted_seconds = secs;
            inf.piece_bytes = cand[c];
        } else
            tc_schedule_destroy(s);
        inf.candidates++;
    }
    free(tload); free(path); free(keys);
    tc_sync_stats stats;
    if (rc == TC_OK && execute) rc = tc_schedule_add_syncs(*sched, t, o.sync_depth > 0 ? o.sync_depth : 1, &stats);
done:
    if (rc != TC_OK) {
        tc_schedule_destroy(*sched);
        *sched = NULL;
    }
    if (info) *info = inf;
    return rc;
}
