/* The verifier: proves a schedule against the all-to-all postcondition and
 * measures contention by re-deriving every path on the topology.  It shares
 * nothing with the generators but the IR.  Cost: O(ops * height) time
 * (O(ops log ops) for segmented schedules); memory p^2 bytes (direct
 * schedules), 8 bytes a piece (segmented) or p^3 bits (forwarding). */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

#define PROBLEM(rep, ...)                                                        \
    do {                                                                         \
        if (!(rep)->problem[0]) snprintf((rep)->problem, sizeof (rep)->problem, __VA_ARGS__); \
    } while (0)

/* Forwarding schedules: a bit per (block, holder). */
#define VERIFY_MAX_FORWARD_RANKS 1024

#define MNAME(r) tc_topology_node_name(topo, tc_topology_machine_node(topo, (r)))

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Segmented schedules (direct ops carrying pieces of blocks): every block
 * must arrive as pieces 0..parts-1 of one `parts`, each exactly once. */
static tc_status check_pieces(const tc_schedule *s, const tc_topology *topo, tc_verify_report *rep)
{
    int p = s->num_ranks;
    int64_t *key = tc_xmalloc(sizeof(int64_t) * (size_t)(s->num_ops ? s->num_ops : 1));
    if (!key) TC_FAIL(TC_ERR_NOMEM, "verify: out of memory for %lld pieces", (long long)s->num_ops);
    int64_t n = 0;
    rep->complete = 1;
    for (int64_t i = 0; i < s->num_ops; i++) {
        const tc_op *op = &s->ops[i];
        if (op->first_block >= 0) {
            rep->complete = 0;
            PROBLEM(rep, "operation %s->%s forwards blocks in a segmented schedule", MNAME(op->src), MNAME(op->dst));
        } else if (op->src == op->dst) {
            rep->complete = 0;
            PROBLEM(rep, "operation %s->%s sends to itself", MNAME(op->src), MNAME(op->dst));
        } else
            key[n++] = (((int64_t)op->src * p + op->dst) << 32) | ((int64_t)op->parts << 16) | op->part;
    }
    qsort(key, (size_t)n, sizeof *key, cmp_i64);
    int64_t i = 0;
    for (int64_t blk = 0; blk < (int64_t)p * p && rep->complete; blk++) {
        int o = (int)(blk / p), d = (int)(blk % p);
        if (o == d) continue;
        int64_t b = i;
        while (i < n && key[i] >> 32 == blk) i++;
        if (i == b) {
            rep->complete = 0;
            PROBLEM(rep, "block %s->%s never arrives", MNAME(o), MNAME(d));
            break;
        }
        int parts = (int)(key[b] >> 16 & 0xffff);
        for (int64_t k = b; k < i; k++) {
            int kp = (int)(key[k] >> 16 & 0xffff), part = (int)(key[k] & 0xffff);
            if (kp != parts || part != k - b || i - b != parts) {
                rep->complete = 0;
                PROBLEM(rep, "block %s->%s arrives as %lld pieces, not pieces 0..%d of %d, each once", MNAME(o),
                        MNAME(d), (long long)(i - b), parts - 1, parts);
                break;
            }
        }
    }
    free(key);
    return TC_OK;
}

static tc_status check_delivery(const tc_schedule *s, const tc_topology *topo, tc_verify_report *rep)
{
    int p = s->num_ranks;
    bool forwarding = false;
    for (int64_t i = 0; i < s->num_ops && !forwarding; i++) forwarding = s->ops[i].first_block >= 0;
    const char *name_src, *name_dst;
    rep->max_parts = 1;
    for (int64_t i = 0; i < s->num_ops; i++)
        if (s->ops[i].parts > rep->max_parts) rep->max_parts = s->ops[i].parts;
    if (rep->max_parts > 1) return check_pieces(s, topo, rep);
    unsigned char *arrived = tc_xcalloc((size_t)p * (size_t)p, 1);
    if (!arrived) TC_FAIL(TC_ERR_NOMEM, "verify: out of memory for %d x %d blocks", p, p);
    uint64_t *held = NULL;
    size_t words = ((size_t)p + 63) / 64;
    if (forwarding) {
        if (p > VERIFY_MAX_FORWARD_RANKS) {
            free(arrived);
            TC_FAIL(TC_ERR_LIMIT, "verify: forwarding schedules are checked up to %d ranks (%d given)",
                    VERIFY_MAX_FORWARD_RANKS, p);
        }
        held = tc_xcalloc((size_t)p * (size_t)p * words, sizeof(uint64_t));
        if (!held) { free(arrived); TC_FAIL(TC_ERR_NOMEM, "verify: out of memory"); }
        for (int o = 0; o < p; o++)
            for (int d = 0; d < p; d++) held[((size_t)o * p + d) * words + o / 64] |= 1ull << (o % 64);
    }
    rep->complete = 1;
    for (int st = 0; st < s->num_steps; st++) {
        int64_t b = s->step_begin[st], e = s->step_begin[st + 1];
        for (int pass = 0; pass < 2; pass++) {    /* sends see holdings from before the step */
            for (int64_t i = b; i < e; i++) {
                const tc_op *op = &s->ops[i];
                name_src = MNAME(op->src);
                name_dst = MNAME(op->dst);
                if (op->src == op->dst) {
                    if (pass == 0) {
                        rep->complete = 0;
                        PROBLEM(rep, "step %d: operation %s->%s sends to itself", st, name_src, name_dst);
                    }
                    continue;
                }
                int32_t nb = op->first_block < 0 ? 1 : op->num_blocks;
                for (int32_t k = 0; k < nb; k++) {
                    int o = op->first_block < 0 ? op->src : s->blocks[2 * (op->first_block + k)];
                    int d = op->first_block < 0 ? op->dst : s->blocks[2 * (op->first_block + k) + 1];
                    uint64_t *h = held ? &held[((size_t)o * p + d) * words] : NULL;
                    if (pass == 0) {
                        if (h && !(h[op->src / 64] >> (op->src % 64) & 1)) {
                            rep->complete = 0;
                            PROBLEM(rep, "step %d: %s->%s forwards block %s->%s, which %s does not hold yet", st,
                                    name_src, name_dst, MNAME(o), MNAME(d), name_src);
                        }
                        continue;
                    }
                    if (h) h[op->dst / 64] |= 1ull << (op->dst % 64);
                    if (op->dst == d && o != d) {
                        unsigned char *a = &arrived[(size_t)o * p + d];
                        if (*a) {
                            rep->complete = 0;
                            PROBLEM(rep, "step %d: block %s->%s arrives a second time", st, MNAME(o), MNAME(d));
                        } else
                            *a = 1;
                    }
                }
            }
        }
    }
    for (int o = 0; o < p && rep->complete; o++)
        for (int d = 0; d < p; d++)
            if (o != d && !arrived[(size_t)o * p + d]) {
                rep->complete = 0;
                PROBLEM(rep, "block %s->%s never arrives", MNAME(o), MNAME(d));
                break;
            }
    free(arrived);
    free(held);
    return TC_OK;
}

/* Contention and capacity: the uses of each directed edge within a step,
 * against 1 and against the edge's capacity (tc_topology_link_capacity,
 * links without a rate at the schedule's bandwidth). */
static tc_status check_contention(const tc_schedule *s, const tc_topology *topo, tc_verify_report *rep)
{
    int E = 2 * tc_topology_num_links(topo), h = tc_topology_height(topo);
    double bw = s->bandwidth > 0 ? s->bandwidth : TC_DEFAULT_BANDWIDTH;
    int32_t *stamp = tc_xmalloc(sizeof(int32_t) * (size_t)(E ? E : 1));
    int32_t *use = tc_xcalloc((size_t)(E ? E : 1), sizeof(int32_t));
    int32_t *cap = tc_xmalloc(sizeof(int32_t) * (size_t)(E ? E : 1));
    int64_t *first_op = tc_xmalloc(sizeof(int64_t) * (size_t)(E ? E : 1));
    int32_t *path = tc_xmalloc(sizeof(int32_t) * (size_t)(2 * h + 2));
    if (!stamp || !use || !cap || !first_op || !path) {
        free(stamp); free(use); free(cap); free(first_op); free(path);
        TC_FAIL(TC_ERR_NOMEM, "verify: out of memory");
    }
    for (int i = 0; i < E; i++) {
        stamp[i] = -1;
        cap[i] = tc_topology_link_capacity(topo, i / 2, bw);
    }
    rep->contention_free = rep->within_capacity = 1;
    rep->capacitated_load = tc_topology_capacitated_load(topo, bw, NULL, NULL);
    for (int st = 0; st < s->num_steps; st++) {
        bool contended = false, over = false;
        for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) {
            const tc_op *op = &s->ops[i];
            if (op->src == op->dst) continue;
            int n = tc_topology_path(topo, op->src, op->dst, path);
            for (int k = 0; k < n; k++) {
                int32_t e = path[k];
                if (stamp[e] != st) { stamp[e] = st; use[e] = 1; first_op[e] = i; continue; }
                use[e]++;
                if (use[e] > rep->max_edge_use) rep->max_edge_use = use[e];
                if (!contended) {
                    contended = true;
                    rep->contended_steps++;
                    rep->contention_free = 0;
                }
                if (use[e] > cap[e] && !over) {
                    over = true;
                    rep->over_capacity_steps++;
                    rep->within_capacity = 0;
                    const tc_op *other = &s->ops[first_op[e]];
                    int child, parent;
                    tc_topology_link(topo, e / 2, &child, &parent, NULL, NULL);
                    int from = e % 2 ? parent : child, to = e % 2 ? child : parent;
                    if (cap[e] == 1)
                        PROBLEM(rep, "step %d: %s->%s and %s->%s both use edge %s->%s", st, MNAME(other->src),
                                MNAME(other->dst), MNAME(op->src), MNAME(op->dst), tc_topology_node_name(topo, from),
                                tc_topology_node_name(topo, to));
                    else
                        PROBLEM(rep, "step %d: edge %s->%s carries %d messages (%s->%s among them), its capacity is %d",
                                st, tc_topology_node_name(topo, from), tc_topology_node_name(topo, to), use[e],
                                MNAME(op->src), MNAME(op->dst), cap[e]);
                }
            }
        }
    }
    if (rep->max_edge_use == 0 && s->num_ops) rep->max_edge_use = 1;
    free(stamp); free(use); free(cap); free(first_op); free(path);
    return TC_OK;
}

/* Single port: within a step no rank sends twice or receives twice; per
 * host, the same for messages that leave or enter the host. */
static tc_status check_ports(const tc_schedule *s, const tc_topology *topo, tc_verify_report *rep)
{
    int p = s->num_ranks, V = tc_topology_num_nodes(topo);
    int32_t *sent = tc_xmalloc(sizeof(int32_t) * (size_t)(p ? p : 1));
    int32_t *recvd = tc_xmalloc(sizeof(int32_t) * (size_t)(p ? p : 1));
    int32_t *hsent = tc_xmalloc(sizeof(int32_t) * (size_t)V), *hrecvd = tc_xmalloc(sizeof(int32_t) * (size_t)V);
    if (!sent || !recvd || !hsent || !hrecvd) {
        free(sent); free(recvd); free(hsent); free(hrecvd);
        TC_FAIL(TC_ERR_NOMEM, "verify: out of memory");
    }
    for (int i = 0; i < p; i++) sent[i] = recvd[i] = -1;
    for (int i = 0; i < V; i++) hsent[i] = hrecvd[i] = -1;
    rep->single_port = rep->host_single_port = 1;
    for (int st = 0; st < s->num_steps; st++)
        for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) {
            const tc_op *op = &s->ops[i];
            if (sent[op->src] == st || recvd[op->dst] == st) rep->single_port = 0;
            sent[op->src] = recvd[op->dst] = st;
            int a = tc_topology_machine_host(topo, op->src), b = tc_topology_machine_host(topo, op->dst);
            if (a == b) continue;
            if (hsent[a] == st || hrecvd[b] == st) {
                if (rep->host_single_port)
                    PROBLEM(rep, "step %d: host %s sends or host %s receives a second message", st,
                            tc_topology_node_name(topo, a), tc_topology_node_name(topo, b));
                rep->host_single_port = 0;
            }
            hsent[a] = hrecvd[b] = st;
        }
    free(sent); free(recvd); free(hsent); free(hrecvd);
    return TC_OK;
}

/* Traffic on the bottleneck links (largest load / bandwidth; 100 Mbit/s
 * where none is given, the CLI's default): with every block delivered,
 * traffic == load in each direction means each block whose path crosses the
 * link crossed it exactly once and no other block crossed it. */
static tc_status check_bottleneck(const tc_schedule *s, const tc_topology *topo, tc_verify_report *rep)
{
    int L = tc_topology_num_links(topo), h = tc_topology_height(topo);
    double *traffic = tc_xcalloc((size_t)(2 * L + 1), sizeof(double)), worst = 0;
    int32_t *path = tc_xmalloc(sizeof(int32_t) * (size_t)(2 * h + 2));
    if (!traffic || !path) { free(traffic); free(path); TC_FAIL(TC_ERR_NOMEM, "verify: out of memory"); }
    for (int64_t i = 0; i < s->num_ops; i++) {
        const tc_op *op = &s->ops[i];
        if (op->src == op->dst) continue;
        double w = (double)(op->first_block < 0 ? 1 : op->num_blocks) / (op->parts > 0 ? op->parts : 1);
        int n = tc_topology_path(topo, op->src, op->dst, path);
        for (int k = 0; k < n; k++) traffic[path[k]] += w;
    }
    for (int l = 0; l < L; l++) {
        double bw;
        tc_topology_link(topo, l, NULL, NULL, &bw, NULL);
        double x = (double)tc_topology_link_load(topo, l) / (bw > 0 ? bw : TC_DEFAULT_BANDWIDTH);
        if (x > worst) worst = x;
    }
    rep->bottleneck_once = 1;
    for (int l = 0; l < L; l++) {
        double bw;
        int child, parent;
        tc_topology_link(topo, l, &child, &parent, &bw, NULL);
        double load = (double)tc_topology_link_load(topo, l);
        if (load / (bw > 0 ? bw : TC_DEFAULT_BANDWIDTH) < worst * (1 - 1e-9)) continue;
        for (int dir = 0; dir < 2; dir++)
            if (traffic[2 * l + dir] > load + 1e-6 || traffic[2 * l + dir] < load - 1e-6) {
                if (rep->bottleneck_once)
                    PROBLEM(rep, "bottleneck link %s->%s carries %.6g blocks, its load is %lld",
                            tc_topology_node_name(topo, dir ? parent : child),
                            tc_topology_node_name(topo, dir ? child : parent), traffic[2 * l + dir], (long long)load);
                rep->bottleneck_once = 0;
            }
    }
    free(traffic);
    free(path);
    return TC_OK;
}

tc_status tc_schedule_verify(const tc_schedule *s, const tc_topology *topo, tc_verify_report *rep)
{
    if (!s || !topo || !rep) TC_FAIL(TC_ERR_ARG, "verify: missing argument");
    if (!topo->finalized) TC_FAIL(TC_ERR_ARG, "verify: topology not finalized");
    if (s->num_ranks != tc_topology_num_machines(topo))
        TC_FAIL(TC_ERR_ARG, "verify: the schedule has %d ranks but the topology has %d machines", s->num_ranks,
                tc_topology_num_machines(topo));
    memset(rep, 0, sizeof *rep);
    rep->num_steps = s->num_steps;
    rep->num_ops = s->num_ops;
    rep->load = tc_topology_alltoall_load(topo);
    tc_status rc = check_delivery(s, topo, rep);
    if (rc == TC_OK) rc = check_contention(s, topo, rep);
    if (rc == TC_OK) rc = check_ports(s, topo, rep);
    if (rc == TC_OK) rc = check_bottleneck(s, topo, rep);
    if (rc != TC_OK) return rc;
    rep->optimal = rep->complete && rep->contention_free && (int64_t)rep->num_steps == rep->load;
    rep->capacitated_optimal = rep->complete && rep->within_capacity && (int64_t)rep->num_steps == rep->capacitated_load;
    if (rep->complete && rep->contention_free && !rep->optimal)
        PROBLEM(rep, "%d steps, but the bottleneck load is %lld", rep->num_steps, (long long)rep->load);
    return TC_OK;
}
