/* The schedule IR: steps of operations (see topocoll.h), built op by op and
 * sorted by step once.  Memory: 16 bytes an operation, 8 a sync. */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

struct tc_schedule_builder {
    tc_schedule *s;
    int64_t cap_ops;
    int32_t *steps;        /* step of each op, parallel to s->ops */
    int64_t cap_blocks;
    int32_t max_step;
    int32_t min_steps;     /* steps the schedule has at least (empty ones too) */
};

tc_status tc_builder_create(const char *algorithm, int num_ranks, int64_t expected, tc_schedule_builder **out)
{
    if (num_ranks < 0) TC_FAIL(TC_ERR_ARG, "schedule: negative rank count");
    tc_schedule_builder *b = tc_xcalloc(1, sizeof *b);
    if (!b) TC_FAIL(TC_ERR_NOMEM, "schedule: out of memory");
    b->s = tc_xcalloc(1, sizeof *b->s);
    b->cap_ops = expected > 16 ? expected : 16;
    if (b->s) b->s->ops = tc_xmalloc(sizeof(tc_op) * (size_t)b->cap_ops);
    b->steps = tc_xmalloc(sizeof(int32_t) * (size_t)b->cap_ops);
    if (!b->s || !b->s->ops || !b->steps) {
        tc_builder_destroy(b);
        TC_FAIL(TC_ERR_NOMEM, "schedule: out of memory for %lld operations", (long long)b->cap_ops);
    }
    snprintf(b->s->algorithm, sizeof b->s->algorithm, "%s", algorithm ? algorithm : "");
    b->s->num_ranks = num_ranks;
    b->s->part_rank = -1;
    b->max_step = -1;
    *out = b;
    return TC_OK;
}

void tc_builder_destroy(tc_schedule_builder *b)
{
    if (!b) return;
    tc_schedule_destroy(b->s);
    free(b->steps);
    free(b);
}

static tc_status push_op(tc_schedule_builder *b, int32_t step, int32_t src, int32_t dst, int32_t first, int32_t n,
                         int32_t part, int32_t parts)
{
    tc_schedule *s = b->s;
    if (step < 0 || src < 0 || dst < 0 || src >= s->num_ranks || dst >= s->num_ranks)
        TC_FAIL(TC_ERR_ARG, "schedule: operation %d->%d at step %d is out of range (%d ranks)", src, dst, step,
                s->num_ranks);
    if (s->num_ops == b->cap_ops) {
        int64_t cap = b->cap_ops * 2;
        tc_op *ops = realloc(s->ops, sizeof(tc_op) * (size_t)cap);
        if (ops) s->ops = ops;
        int32_t *st = ops ? realloc(b->steps, sizeof(int32_t) * (size_t)cap) : NULL;
        if (!st) TC_FAIL(TC_ERR_NOMEM, "schedule: out of memory at %lld operations", (long long)cap);
        b->steps = st;
        b->cap_ops = cap;
    }
    s->ops[s->num_ops] = (tc_op){src, dst, first, n, part, parts};
    b->steps[s->num_ops++] = step;
    if (step > b->max_step) b->max_step = step;
    return TC_OK;
}

tc_status tc_builder_add(tc_schedule_builder *b, int32_t step, int32_t src, int32_t dst)
{
    return push_op(b, step, src, dst, -1, 1, 0, 1);
}

tc_status tc_builder_add_part(tc_schedule_builder *b, int32_t step, int32_t src, int32_t dst, int32_t part,
                              int32_t parts)
{
    if (parts < 1 || part < 0 || part >= parts)
        TC_FAIL(TC_ERR_ARG, "schedule: piece %d of %d of block %d->%d is out of range", part, parts, src, dst);
    return push_op(b, step, src, dst, -1, 1, part, parts);
}

tc_status tc_builder_add_blocks(tc_schedule_builder *b, int32_t step, int32_t src, int32_t dst,
                                const int32_t *pairs, int32_t n)
{
    tc_schedule *s = b->s;
    if (n < 1) TC_FAIL(TC_ERR_ARG, "schedule: a forwarding operation needs at least one block");
    if (s->num_block_ints + 2 * (int64_t)n > INT32_MAX) TC_FAIL(TC_ERR_LIMIT, "schedule: too many forwarded blocks");
    if (s->num_block_ints + 2 * n > b->cap_blocks) {
        int64_t cap = b->cap_blocks ? b->cap_blocks : 1024;
        while (cap < s->num_block_ints + 2 * n) cap *= 2;
        int32_t *p = realloc(s->blocks, sizeof(int32_t) * (size_t)cap);
        if (!p) TC_FAIL(TC_ERR_NOMEM, "schedule: out of memory");
        s->blocks = p;
        b->cap_blocks = cap;
    }
    for (int32_t i = 0; i < 2 * n; i++) {
        if (pairs[i] < 0 || pairs[i] >= s->num_ranks) TC_FAIL(TC_ERR_ARG, "schedule: block rank %d out of range", pairs[i]);
        s->blocks[s->num_block_ints + i] = pairs[i];
    }
    int32_t first = (int32_t)(s->num_block_ints / 2);
    s->num_block_ints += 2 * n;
    return push_op(b, step, src, dst, first, n, 0, 1);
}

void tc_builder_set_min_steps(tc_schedule_builder *b, int32_t steps) { b->min_steps = steps; }

tc_status tc_builder_finish(tc_schedule_builder *b, tc_schedule **out)
{
    tc_schedule *s = b->s;
    int nsteps = b->max_step + 1 > b->min_steps ? b->max_step + 1 : b->min_steps;
    s->num_steps = nsteps;
    s->step_begin = tc_xcalloc((size_t)nsteps + 2, sizeof(int64_t));
    tc_op *sorted = tc_xmalloc(sizeof(tc_op) * (size_t)(s->num_ops ? s->num_ops : 1));
    if (!s->step_begin || !sorted) {
        free(sorted);
        TC_FAIL(TC_ERR_NOMEM, "schedule: out of memory sorting %lld operations", (long long)s->num_ops);
    }
    /* counting sort by step, stable */
    for (int64_t i = 0; i < s->num_ops; i++) s->step_begin[b->steps[i] + 2]++;
    for (int i = 2; i <= nsteps + 1; i++) s->step_begin[i] += s->step_begin[i - 1];
    for (int64_t i = 0; i < s->num_ops; i++) sorted[s->step_begin[b->steps[i] + 1]++] = s->ops[i];
    free(s->ops);
    s->ops = sorted;
    b->s = NULL;
    tc_builder_destroy(b);
    *out = s;
    return TC_OK;
}

void tc_schedule_destroy(tc_schedule *s)
{
    if (!s) return;
    free(s->step_begin); free(s->ops); free(s->blocks); free(s->syncs); free(s->step_phase);
    free(s);
}

const char *tc_schedule_algorithm(const tc_schedule *s) { return s->algorithm; }
int tc_schedule_num_ranks(const tc_schedule *s) { return s->num_ranks; }
int tc_schedule_num_steps(const tc_schedule *s) { return s->num_steps; }
int64_t tc_schedule_num_ops(const tc_schedule *s) { return s->num_ops; }
int64_t tc_schedule_step_begin(const tc_schedule *s, int step) { return s->step_begin[step]; }
const int64_t *tc_schedule_step_begins(const tc_schedule *s) { return s->step_begin; }
const tc_op *tc_schedule_ops(const tc_schedule *s) { return s->ops; }
const int32_t *tc_schedule_blocks(const tc_schedule *s) { return s->blocks; }
int64_t tc_schedule_num_syncs(const tc_schedule *s) { return s->num_syncs; }
const tc_sync *tc_schedule_syncs(const tc_schedule *s) { return s->syncs; }
int tc_schedule_part_rank(const tc_schedule *s) { return s->part_rank; }
int64_t tc_schedule_num_phases(const tc_schedule *s) { return s->part_rank >= 0 ? s->num_phases : s->num_steps; }
int64_t tc_schedule_step_phase(const tc_schedule *s, int step) { return s->step_phase ? s->step_phase[step] : step; }

int *tc_schedule_edge_capacities(const tc_schedule *s, const tc_topology *topo)
{
    int E = 2 * tc_topology_num_links(topo);
    int *cap = tc_xmalloc(sizeof(int) * (size_t)(E + 1));
    for (int e = 0; cap && e < E; e++)
        cap[e] = s->capacity_syncs ? tc_topology_link_capacity(topo, e / 2, s->bandwidth > 0 ? s->bandwidth
                                                                                          : TC_DEFAULT_BANDWIDTH)
                                   : 1;
    return cap;
}

tc_status tc_schedule_set_syncs(tc_schedule *s, const tc_sync *syncs, int64_t n)
{
    tc_sync *copy = tc_xmalloc(sizeof(tc_sync) * (size_t)(n ? n : 1));
    if (!copy) TC_FAIL(TC_ERR_NOMEM, "schedule: out of memory");
    for (int64_t i = 0; i < n; i++) {
        if (syncs[i].after < 0 || syncs[i].after >= s->num_ops || syncs[i].before < 0 || syncs[i].before >= s->num_ops) {
            free(copy);
            TC_FAIL(TC_ERR_ARG, "schedule: sync %lld names an operation out of range", (long long)i);
        }
        copy[i] = syncs[i];
    }
    free(s->syncs);
    s->syncs = copy;
    s->num_syncs = n;
    return TC_OK;
}

void tc_schedule_copy_ops(const tc_schedule *s, int32_t *out)
{
    for (int st = 0; st < s->num_steps; st++)
        for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) {
            *out++ = st;
            *out++ = s->ops[i].src;
            *out++ = s->ops[i].dst;
        }
}

tc_status tc_schedule_from_triples(const char *algorithm, int num_ranks, int64_t n, const int32_t *tr,
                                   tc_schedule **out)
{
    tc_schedule_builder *b;
    tc_status rc = tc_builder_create(algorithm, num_ranks, n, &b);
    if (rc) return rc;
    for (int64_t i = 0; i < n; i++)
        if ((rc = tc_builder_add(b, tr[3 * i], tr[3 * i + 1], tr[3 * i + 2]))) {
            tc_builder_destroy(b);
            return rc;
        }
    return tc_builder_finish(b, out);
}

tc_status tc_schedule_set_steps(tc_schedule *s, const int32_t *step_of)
{
    const int n = s->num_steps;
    const int64_t ops = s->num_ops;
    int64_t *begin = tc_xcalloc((size_t)n + 1, sizeof(int64_t));
    tc_op *sorted = tc_xmalloc(sizeof(tc_op) * (size_t)(ops ? ops : 1));
    if (!begin || !sorted) {
        free(begin); free(sorted);
        TC_FAIL(TC_ERR_NOMEM, "schedule '%s': out of memory", s->algorithm);
    }
    for (int64_t i = 0; i < ops; i++) begin[step_of[i] + 1]++;
    for (int k = 0; k < n; k++) begin[k + 1] += begin[k];
    for (int64_t i = 0; i < ops; i++) sorted[begin[step_of[i]]++] = s->ops[i];   /* begin[k]: end of step k */
    for (int k = n; k > 0; k--) begin[k] = begin[k - 1];
    begin[0] = 0;
    free(s->step_begin);
    free(s->ops);
    s->step_begin = begin;
    s->ops = sorted;
    return TC_OK;
}

tc_status tc_schedule_op_paths(const tc_schedule *s, const tc_topology *topo, int64_t **plen_out, int32_t **paths_out)
{
    const int h = tc_topology_height(topo);
    int32_t *path = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)h + 2)), *paths = NULL;
    int64_t *plen = tc_xmalloc(sizeof(int64_t) * ((size_t)s->num_ops + 1)), total = 0;
    if (!path || !plen) goto nomem;
    for (int64_t i = 0; i < s->num_ops; i++) {
        plen[i] = total;
        total += tc_topology_path(topo, s->ops[i].src, s->ops[i].dst, path);
    }
    plen[s->num_ops] = total;
    if (!(paths = tc_xmalloc(sizeof(int32_t) * (size_t)(total + 1)))) goto nomem;
    for (int64_t i = 0; i < s->num_ops; i++) tc_topology_path(topo, s->ops[i].src, s->ops[i].dst, paths + plen[i]);
    free(path);
    *plen_out = plen;
    *paths_out = paths;
    return TC_OK;
nomem:
    free(path); free(plen); free(paths);
    TC_FAIL(TC_ERR_NOMEM, "schedule '%s': out of memory for its messages' paths", s->algorithm);
}
