/* The verifier for unequal blocks: a direct schedule against a traffic
 * matrix D.  Every block with bytes arrives as pieces 0..c-1 of one c, each
 * exactly once (so every byte exactly once), no piece is empty, and an
 * empty block has at most whole zero-byte messages (the topology-oblivious
 * algorithms send them); then every path is re-derived and each directed
 * link's pieces counted per step.  It shares nothing with the planner but
 * the IR, and reports without printing.  Cost O(ops x height) time, p^2
 * ints and a bit a piece of memory. */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

#define PROBLEM(rep, ...)                                                                     \
    do {                                                                                      \
        if (!(rep)->problem[0]) snprintf((rep)->problem, sizeof (rep)->problem, __VA_ARGS__); \
    } while (0)
#define MNAME(r) tc_topology_node_name(t, tc_topology_machine_node(t, (r)))

tc_status tc_traffic_verify(const tc_schedule *s, const tc_topology *t, const tc_traffic *d,
                            const tc_model_network *net, tc_traffic_report *rep)
{
    memset(rep, 0, sizeof *rep);
    if (!t || !t->finalized || !s || !d) TC_FAIL(TC_ERR_ARG, "verify: no schedule, matrix or finalized topology");
    const int p = s->num_ranks, E = 2 * t->num_links;
    if (tc_traffic_ranks(d) != p || tc_topology_num_machines(t) != p)
        TC_FAIL(TC_ERR_ARG, "verify: the schedule has %d ranks, the matrix %d, the topology %d machines", p,
                tc_traffic_ranks(d), tc_topology_num_machines(t));
    const int64_t *D = tc_traffic_bytes(d);
    const int64_t nb = (int64_t)p * p;
    int32_t *parts = tc_xcalloc((size_t)nb + 1, sizeof(int32_t));
    int64_t *first = tc_xcalloc((size_t)nb + 1, sizeof(int64_t));
    int64_t *load = tc_xcalloc((size_t)E + 1, sizeof(int64_t)), *stamp = tc_xmalloc(sizeof(int64_t) * ((size_t)E + 1));
    int32_t *edges = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    uint8_t *seen = NULL;
    tc_status rc = TC_OK;
    if (!parts || !first || !load || !stamp || !edges) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "verify: out of memory");
    rep->complete = rep->contention_free = 1;
    rep->num_steps = s->num_steps;
    rep->pieces = s->num_ops;
    /* pass 1: every op of a block names the same piece count */
    for (int64_t i = 0; i < s->num_ops; i++) {
        const tc_op *op = &s->ops[i];
        int64_t k = (int64_t)op->src * p + op->dst, n = D[k];
        if (op->first_block >= 0 || op->src == op->dst) {
            rep->complete = 0;
            PROBLEM(rep, "operation %s->%s %s: unequal blocks are moved by direct messages between two ranks",
                    MNAME(op->src), MNAME(op->dst), op->src == op->dst ? "sends to itself" : "forwards blocks");
            continue;
        }
        if (op->parts > rep->max_parts) rep->max_parts = op->parts;
        if (n == 0) {
            if (op->parts != 1) {
                rep->complete = 0;
                PROBLEM(rep, "block %s->%s is empty but cut into %d pieces", MNAME(op->src), MNAME(op->dst), op->parts);
            }
            rep->empty_messages++;
            continue;
        }
        if (op->parts > n) {
            rep->complete = 0;
            PROBLEM(rep, "block %s->%s of %lld bytes cut into %d pieces (some empty)", MNAME(op->src), MNAME(op->dst),
                    (long long)n, op->parts);
        }
        if (parts[k] && parts[k] != op->parts) {
            rep->complete = 0;
            PROBLEM(rep, "block %s->%s cut both into %d and %d pieces", MNAME(op->src), MNAME(op->dst), parts[k],
                    op->parts);
        }
        parts[k] = op->parts;
    }
    int64_t bits = 0;
    for (int64_t k = 0; k < nb; k++) {
        first[k] = bits;
        bits += parts[k];
        if (D[k] > 0 && k / p != k % p && !parts[k]) {
            rep->complete = 0;
            PROBLEM(rep, "block %s->%s (%lld bytes) is never sent", MNAME((int)(k / p)), MNAME((int)(k % p)),
                    (long long)D[k]);
        }
    }
    seen = tc_xcalloc((size_t)bits / 8 + 1, 1);
    if (!seen) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "verify: out of memory for %lld pieces", (long long)bits);
    /* pass 2: each piece exactly once; pass over steps: each link's pieces */
    for (int e = 0; e < E; e++) stamp[e] = -1;
    for (int st = 0; st < s->num_steps; st++) {
        int contended = 0;
        for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) {
            const tc_op *op = &s->ops[i];
            if (i + 16 < s->num_ops) {   /* blocks come in no order: fetch ahead */
                int64_t ahead = (int64_t)s->ops[i + 16].src * p + s->ops[i + 16].dst;
                __builtin_prefetch(&D[ahead]);
                __builtin_prefetch(&parts[ahead]);
                __builtin_prefetch(&first[ahead]);
            }
            if (op->first_block >= 0 || op->src == op->dst) continue;
            int64_t k = (int64_t)op->src * p + op->dst;
            if (D[k] > 0 && op->parts == parts[k]) {
                int64_t bit = first[k] + op->part;
                if (seen[bit / 8] >> (bit % 8) & 1) {
                    rep->complete = 0;
                    PROBLEM(rep, "piece %d of %d of block %s->%s is sent twice", op->part, op->parts, MNAME(op->src),
                            MNAME(op->dst));
                }
                seen[bit / 8] |= (uint8_t)(1u << (bit % 8));
            }
            int L = tc_topology_path(t, op->src, op->dst, edges);
            for (int e = 0; e < L; e++) {
                load[edges[e]]++;
                if (stamp[edges[e]] == st) {
                    if (!contended) rep->contended_steps++;
                    contended = 1;
                    if (rep->contention_free) {
                        int child, parent;
                        tc_topology_link(t, edges[e] / 2, &child, &parent, NULL, NULL);
                        PROBLEM(rep, "step %d: link %s %s %s carries two pieces", st,
                                tc_topology_node_name(t, child), edges[e] % 2 ? "<-" : "->",
                                tc_topology_node_name(t, parent));
                    }
                    rep->contention_free = 0;
                }
                stamp[edges[e]] = st;
            }
        }
    }
    for (int64_t k = 0; k < nb && rep->complete; k++)
        for (int32_t j = 0; j < parts[k]; j++)
            if (!(seen[(first[k] + j) / 8] >> ((first[k] + j) % 8) & 1)) {
                rep->complete = 0;
                PROBLEM(rep, "piece %d of %d of block %s->%s is never sent", j, parts[k], MNAME((int)(k / p)),
                        MNAME((int)(k % p)));
                break;
            }
    for (int e = 0; e < E; e++)
        if (load[e] > rep->piece_load) rep->piece_load = load[e];
    tc_traffic_bound bound;
    TC_TRY(rc, out, tc_traffic_bounds(d, t, net ? net->default_rate : TC_DEFAULT_BANDWIDTH, &bound));
    rep->bound_seconds = bound.link_seconds;
    if (net) TC_TRY(rc, out, tc_model_traffic_time(s, t, d, net, &rep->predicted_seconds));
out:
    free(parts); free(first); free(load); free(stamp); free(edges); free(seen);
    return rc;
}
