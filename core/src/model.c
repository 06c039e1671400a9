/* The contention-signature model (Steffenel, Martinasso & Trystram, eqs.
 * 4-5) on a switch tree, for the MPI's own all-to-all and for every
 * algorithm of the registry alike.  Blocks of m bytes take
 *
 *     T(m) = A + gamma W m + [m >= M] delta S
 *
 * where the features come from the schedule (or, for the MPI's own, from
 * the paper's lower bound) and the signature (gamma, delta, M) from a fit:
 *   A  start-up seconds on the critical path: every step, the busiest rank's
 *      start-ups (one alpha of its path class a message, sent one after the
 *      other as the 1-port model has it), plus one sync's alpha where a
 *      step waits for syncs;
 *   W  seconds a byte of a block costs: every step, its busiest directed
 *      link (bits of the step's messages crossing it over its rate);
 *   S  messages on the critical path (the busiest rank's, step by step),
 *      each paying delta from M on.
 * The MPI's own: A = the busiest rank's n-1 start-ups, W = the busiest
 * link's all-to-all load over its rate, S = n-1.  On one switch W is
 * (n-1) beta and the formula is the paper's eq. 5; on a tree we take the
 * bottleneck link's load for (n-1), where the paper's bound (Proposition
 * 1) assumes a fully connected network that a tree is not.
 * A path's class is the number of network links it crosses (links inside a
 * machine, shared memory, do not count): 0 same machine, 2 same switch, 3
 * one more switch, ...  Cost: O(ops x height) for a schedule. */
#include "tc_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The network's alpha of a path between machines a and b: the measured
 * class's, else the overhead plus the links' latencies. */
static double edges_alpha(const tc_topology *t, const tc_model_network *net, const int32_t *edges, int n)
{
    int cls = 0;
    double lat = 0;
    for (int k = 0; k < n; k++) {
        const tc_link_decl *l = &t->links[edges[k] / 2];
        if (tc_topology_link_is_local(t, edges[k] / 2)) continue;
        cls++;
        lat += l->latency > 0 ? l->latency : net->default_latency;
    }
    if (cls < net->num_classes && net->alpha[cls] > 0) return net->alpha[cls];
    return net->overhead + lat;
}

static double path_alpha(const tc_topology *t, const tc_model_network *net, int a, int b, int32_t *edges)
{
    return edges_alpha(t, net, edges, a == b ? 0 : tc_topology_path(t, a, b, edges));
}

static double link_rate(const tc_topology *t, const tc_model_network *net, int directed)
{
    const tc_link_decl *l = &t->links[directed / 2];
    return l->bandwidth > 0 ? l->bandwidth : net->default_rate;
}

static tc_status check_network(const tc_model_network *net)
{
    if (!net || !(net->default_rate >= TC_MIN_RATE && net->default_rate <= TC_MAX_RATE) ||
        !(net->overhead >= 0 && net->overhead <= TC_MAX_TIME) ||
        !(net->default_latency >= 0 && net->default_latency <= TC_MAX_TIME) || net->num_classes < 0 ||
        net->num_classes > TC_MODEL_MAX_CLASSES || (net->num_classes && !net->alpha))
        TC_FAIL(TC_ERR_ARG, "model: network parameters out of range");
    for (int k = 0; k < net->num_classes; k++)
        if (!(net->alpha[k] >= 0 && net->alpha[k] <= TC_MAX_TIME))
            TC_FAIL(TC_ERR_ARG, "model: alpha of path class %d out of range", k);
    return TC_OK;
}

tc_status tc_model_native_features(const tc_topology *t, const tc_model_network *net, tc_model_features *out)
{
    tc_status rc = check_network(net);
    if (rc) return rc;
    const int p = tc_topology_num_machines(t);
    int32_t *edges = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    if (!edges) TC_FAIL(TC_ERR_NOMEM, "model: out of memory");
    memset(out, 0, sizeof *out);
    for (int a = 0; a < p; a++) {
        double sum = 0;
        for (int b = 0; b < p; b++)
            if (b != a) sum += path_alpha(t, net, a, b, edges);
        if (sum > out->startup) out->startup = sum;
    }
    free(edges);
    for (int l = 0; l < tc_topology_num_links(t); l++)
        for (int dir = 0; dir < 2; dir++) {
            double w = 8.0 * (double)tc_topology_link_load(t, l) / link_rate(t, net, 2 * l + dir);
            if (!tc_topology_link_is_local(t, l) && w > out->byte_time) out->byte_time = w;
        }
    out->messages = p > 1 ? p - 1 : 0;
    out->steps = out->messages;
    return TC_OK;
}

tc_status tc_model_schedule_features(const tc_schedule *s, const tc_topology *t, const tc_model_network *net,
                                     tc_model_features *out)
{
    tc_status rc = check_network(net);
    if (rc) return rc;
    const int p = s->num_ranks;
    if (tc_topology_num_machines(t) != p)
        TC_FAIL(TC_ERR_ARG, "model: schedule has %d ranks but the topology %d machines", p,
                tc_topology_num_machines(t));
    int64_t *plen = NULL;
    int32_t *paths = NULL, *edges = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    int L = 2 * tc_topology_num_links(t);
    double *bits = tc_xcalloc((size_t)L + 1, sizeof(double)), *rank_alpha = tc_xcalloc((size_t)p + 1, sizeof(double));
    int *rank_msgs = tc_xcalloc((size_t)p + 1, sizeof(int));
    char *gated = tc_xcalloc((size_t)s->num_steps + 1, 1);
    double *sync_alpha = tc_xcalloc((size_t)s->num_steps + 1, sizeof(double));
    int32_t *step_of = tc_xmalloc(sizeof(int32_t) * ((size_t)s->num_ops + 1));
    if (!edges || !bits || !rank_alpha || !rank_msgs || !gated || !sync_alpha || !step_of)
        TC_FAIL_GOTO(rc, done, TC_ERR_NOMEM, "model: out of memory");
    TC_TRY(rc, done, tc_schedule_op_paths(s, t, &plen, &paths));
    for (int st = 0; st < s->num_steps; st++)
        for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) step_of[i] = st;
    for (int64_t k = 0; k < s->num_syncs; k++) {   /* a step waits for the slowest sync into it */
        const tc_op *a = &s->ops[s->syncs[k].after], *b = &s->ops[s->syncs[k].before];
        int st = step_of[s->syncs[k].before];
        double x = a->src == b->src ? 0 : path_alpha(t, net, a->src, b->src, edges);
        gated[st] = 1;
        if (x > sync_alpha[st]) sync_alpha[st] = x;
    }
    memset(out, 0, sizeof *out);
    out->steps = s->num_steps;
    for (int st = 0; st < s->num_steps; st++) {
        int64_t b0 = s->step_begin[st], b1 = s->step_begin[st + 1];
        for (int64_t i = b0; i < b1; i++) {
            const tc_op *o = &s->ops[i];
            double share = (double)o->num_blocks / (o->parts > 1 ? o->parts : 1);
            for (int64_t k = plen[i]; k < plen[i + 1]; k++)
                if (!tc_topology_link_is_local(t, paths[k] / 2)) bits[paths[k]] += 8.0 * share / link_rate(t, net, paths[k]);
            rank_alpha[o->src] += path_alpha(t, net, o->src, o->dst, edges);
            rank_msgs[o->src]++;
        }
        double w = 0, a = 0;
        int m = 0;
        for (int64_t i = b0; i < b1; i++) {   /* read the maxima and clear what the step touched */
            const tc_op *o = &s->ops[i];
            for (int64_t k = plen[i]; k < plen[i + 1]; k++) {
                if (bits[paths[k]] > w) w = bits[paths[k]];
                bits[paths[k]] = 0;
            }
            if (rank_alpha[o->src] > a) a = rank_alpha[o->src];
            if (rank_msgs[o->src] > m) m = rank_msgs[o->src];
            rank_alpha[o->src] = 0;
            rank_msgs[o->src] = 0;
        }
        out->byte_time += w;
        out->startup += a + (gated[st] ? sync_alpha[st] : 0);
        out->messages += m;
    }
done:
    free(plen);
    free(paths);
    free(edges);
    free(bits);
    free(rank_alpha);
    free(rank_msgs);
    free(gated);
    free(sync_alpha);
    free(step_of);
    return rc;
}

int tc_plan_segments(long long block_bytes, long long segment_size, int machines)
{
    if (segment_size < 1) segment_size = TC_DEFAULT_SEGMENT_SIZE;
    long long k = block_bytes > 0 ? (block_bytes + segment_size - 1) / segment_size : 1;
    if (k < 1) k = 1;
    if (k > TC_MAX_SEGMENTS) k = TC_MAX_SEGMENTS;
    /* within the planner's message limit */
    long long pairs = (long long)machines * (machines - 1), most = TC_MAX_PLAN_MESSAGES / (pairs > 0 ? pairs : 1);
    if (k > most) k = most;
    return k < 1 ? 1 : (int)k;
}

/* A per-rank algorithm's features without its whole schedule (above
 * TC_PLAN_WHOLE_MAX_RANKS, where the PMPI library plans per rank): every
 * phase carries one message a rank and one a link, so P phases, P messages
 * on the critical path, P times the slowest used link's byte time, and P
 * times the alpha of the longest path (a phase's message crosses the root)
 * and of the longest in the largest subtree (its sync hands that subtree's
 * link on).  Checked against the planned features in
 * tests/test_rank_plan.py. */
static tc_status phase_features(const tc_topology *t, const tc_model_network *net, tc_model_features *out)
{
    const int p = t->num_machines, E = 2 * t->num_links;
    const int64_t P = tc_topology_alltoall_load(t);
    int32_t *edges = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    int *sizes = tc_xmalloc(sizeof(int) * (size_t)p), *sub = tc_xmalloc(sizeof(int) * (size_t)p);
    int *node = tc_xmalloc(sizeof(int) * (size_t)p), root, k, first = -1;
    tc_status rc = edges && sizes && sub && node ? TC_OK : TC_ERR_NOMEM;
    if (rc) TC_FAIL_GOTO(rc, out_, TC_ERR_NOMEM, "model: out of memory");
    if (p >= 2) TC_TRY(rc, out_, tc_topology_aapc_root(t, &root, &k, sizes, sub, node));
    double byte = 0, alpha = 0, sync = 0;
    for (int e = 0; e < E; e++)
        if (!tc_topology_link_is_local(t, e / 2) && tc_topology_link_load(t, e / 2) > 0 && 8.0 / link_rate(t, net, e) > byte)
            byte = 8.0 / link_rate(t, net, e);
    for (int b = 0; b < p && first < 0; b++)
        if (sub[b] == 0) first = b;
    /* a phase's message crosses the root; its sync hands the busiest link,
     * the largest subtree's, between two of that subtree's machines */
    for (int b = 0; b < p; b++) {
        double x = path_alpha(t, net, first, b, edges), y = path_alpha(t, net, p - 1, b, edges);
        if (x > alpha) alpha = x;
        if (y > alpha) alpha = y;
        if (sub[b] == 0 && x > sync) sync = x;
    }
    memset(out, 0, sizeof *out);
    out->steps = P > INT32_MAX ? INT32_MAX : (int)P;
    out->messages = (double)P;
    out->byte_time = (double)P * byte;
    out->startup = (double)P * (alpha + sync);
out_:
    free(edges); free(sizes); free(sub); free(node);
    return rc;
}

tc_status tc_model_features_of(int algorithm, const tc_topology *t, const tc_plan_options *opt,
                               const tc_model_network *net, tc_model_features *out)
{
    if (algorithm == TC_NATIVE) return tc_model_native_features(t, net, out);
    if (algorithm < 0 || algorithm >= tc_algorithm_count()) TC_FAIL(TC_ERR_ARG, "model: unknown algorithm %d", algorithm);
    if (tc_algorithm_plans_per_rank(algorithm) && tc_topology_num_machines(t) > TC_PLAN_WHOLE_MAX_RANKS) {
        tc_status rc = check_network(net);
        return rc ? rc : phase_features(t, net, out);
    }
    tc_schedule *s = NULL;
    tc_status rc = tc_alltoall_plan_with_options(tc_algorithm_name(algorithm), t, opt, 1, &s);
    if (rc == TC_OK) rc = tc_model_schedule_features(s, t, net, out);
    tc_schedule_destroy(s);
    return rc;
}

double tc_model_time(const tc_model_features *f, const tc_model_signature *sig, double block_bytes)
{
    double t = f->startup + sig->gamma * f->byte_time * block_bytes;
    if (block_bytes >= sig->threshold) t += sig->delta * f->messages;
    return t;
}

/* Without a fit, the signatures measured on the emulated cluster
 * (docs/results/2026-11-23-model.md): an all-to-all whose messages contend
 * (the MPI's own, and every algorithm that does not promise contention-free
 * steps) pays the native gamma on the bottleneck link, a contention-free
 * schedule the schedule gamma.  Any network differs; `topocoll model fit`
 * measures its own. */
void tc_model_default_signature(int algorithm, tc_model_signature *sig)
{
    int free_of_contention = algorithm >= 0 && algorithm < tc_algorithm_count() &&
                             tc_algorithm_properties(algorithm) & TC_PROP_CONTENTION_FREE;
    *sig = (tc_model_signature){free_of_contention ? TC_DEFAULT_SCHEDULE_GAMMA : TC_DEFAULT_NATIVE_GAMMA, 0, INFINITY};
}

int tc_model_path_class(const tc_topology *t, int a, int b)
{
    int32_t edges[2 * TC_MAX_LEVELS + 2];
    int n = a == b || 2 * t->height > 2 * TC_MAX_LEVELS + 2 ? 0 : tc_topology_path(t, a, b, edges), cls = 0;
    for (int k = 0; k < n; k++) cls += !tc_topology_link_is_local(t, edges[k] / 2);
    return cls;
}

void tc_model_default_network(tc_model_network *net, double default_rate, double default_latency)
{
    memset(net, 0, sizeof *net);
    net->overhead = TC_DEFAULT_MODEL_OVERHEAD;
    net->default_rate = default_rate > 0 ? default_rate : TC_DEFAULT_BANDWIDTH;
    /* links without a latency add none: the overhead is a message's whole
     * start-up through one switch (TC_DEFAULT_LATENCY, 50 us a link, made
     * faraj-yuan's 32-64 phases look 3-4x dearer than measured at 8K) */
    net->default_latency = default_latency >= 0 ? default_latency : 0;
}

/* Untuned auto (the PMPI library without TOPOCOLL_TUNING, `topocoll model
 * predict`): the MPI's own and faraj-yuan with the default network and
 * signatures; a phase schedule only where the model says it is faster. */
tc_status tc_model_auto_features(const tc_topology *t, double default_rate, const tc_plan_options *opt,
                                 tc_model_features out[2])
{
    tc_model_network net;
    tc_model_default_network(&net, default_rate, -1);
    tc_plan_options one = opt ? *opt : (tc_plan_options){0};
    one.segments = 1;
    tc_status rc = tc_model_native_features(t, &net, &out[0]);
    return rc ? rc : tc_model_features_of(tc_algorithm_find("faraj-yuan"), t, &one, &net, &out[1]);
}

int tc_model_auto_choice(const tc_model_features f[2], double block_bytes, double seconds[2])
{
    int fy = tc_algorithm_find("faraj-yuan");
    tc_model_signature sig[2];
    tc_model_default_signature(TC_NATIVE, &sig[0]);
    tc_model_default_signature(fy, &sig[1]);
    double t[2] = {tc_model_time(&f[0], &sig[0], block_bytes), tc_model_time(&f[1], &sig[1], block_bytes)};
    if (seconds) { seconds[0] = t[0]; seconds[1] = t[1]; }
    return t[1] < t[0] ? fy : TC_NATIVE;
}

/* The time a direct schedule takes over unequal blocks, as the executor
 * runs it (tc_exec.h): a rank's steps one after another (a step ends when
 * its sends have); a message starts once its sender's earlier steps are
 * done and the last user of every link of its path has finished (plus one
 * sync's start-up where that user had another sender), then takes its
 * path's alpha and its bytes over the narrowest rate of the path.  A link's
 * users take turns, so on a contended step this counts them one after the
 * other, as fair sharing would in total.  Cost O(ops x height). */
tc_status tc_model_traffic_time(const tc_schedule *s, const tc_topology *t, const tc_traffic *d,
                                const tc_model_network *net, double *seconds)
{
    tc_status rc = check_network(net);
    *seconds = 0;
    if (rc) return rc;
    const int p = s->num_ranks, E = 2 * t->num_links;
    if (tc_traffic_ranks(d) != p || tc_topology_num_machines(t) != p)
        TC_FAIL(TC_ERR_ARG, "model: the schedule has %d ranks, the matrix %d, the topology %d machines", p,
                tc_traffic_ranks(d), tc_topology_num_machines(t));
    const int64_t *D = tc_traffic_bytes(d);
    double *ready = tc_xcalloc((size_t)p * 2 + 1, sizeof(double)), *free_at = tc_xcalloc((size_t)E + 1, sizeof(double));
    int32_t *last = tc_xmalloc(sizeof(int32_t) * ((size_t)E + 1));
    int32_t *edges = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    if (!ready || !free_at || !last || !edges) {
        free(ready); free(free_at); free(last); free(edges);
        TC_FAIL(TC_ERR_NOMEM, "model: out of memory");
    }
    double *step_end = ready + p, end = 0;
    for (int e = 0; e < E; e++) last[e] = -1;
    for (int st = 0; st < s->num_steps && rc == TC_OK; st++) {
        for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) {
            const tc_op *op = &s->ops[i];
            if (op->first_block >= 0)
                TC_FAIL_GOTO(rc, out, TC_ERR_UNSUPPORTED, "model: unequal blocks need a direct schedule (%s forwards)",
                             s->algorithm);
            if (i + 16 < s->num_ops)   /* blocks come in no order: fetch ahead */
                __builtin_prefetch(&D[(int64_t)s->ops[i + 16].src * p + s->ops[i + 16].dst]);
            int64_t n = D[(int64_t)op->src * p + op->dst];
            double bytes = (double)(n * (op->part + 1) / op->parts - n * op->part / op->parts);
            int L = tc_topology_path(t, op->src, op->dst, edges);
            double start = ready[op->src], rate = TC_MAX_RATE;
            for (int k = 0; k < L; k++) {
                double f = free_at[edges[k]] + (last[edges[k]] >= 0 && last[edges[k]] != op->src ? net->overhead : 0);
                if (f > start) start = f;
                double r = link_rate(t, net, edges[k]);
                if (r < rate) rate = r;
            }
            double finish = start + edges_alpha(t, net, edges, L) + 8.0 * bytes / rate;
            for (int k = 0; k < L; k++) {
                free_at[edges[k]] = finish;
                last[edges[k]] = op->src;
            }
            if (finish > step_end[op->src]) step_end[op->src] = finish;
            if (finish > end) end = finish;
        }
        for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) ready[s->ops[i].src] = step_end[s->ops[i].src];
    }
    *seconds = end;
out:
    free(ready); free(free_at); free(last); free(edges);
    return rc;
}
