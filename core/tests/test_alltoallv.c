/* The unequal-block planner and its verifier: every pattern on several
 * trees planned, proved (every byte once, contention-free steps), timed by
 * the model against the bound; a uniform matrix is faraj-yuan's schedule;
 * the verifier catches what a broken plan does; bad calls are refused. */
#include "topocoll/topocoll.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static tc_traffic *pattern(const char *spec, int p, int64_t mean)
{
    tc_traffic *d = NULL;
    tc_status rc = tc_traffic_pattern(spec, p, mean, 7, &d);
    CHECK(rc == TC_OK, "pattern %s: %s", spec, tc_error_message());
    return d;
}

static void plan_and_prove(const char *spec, const char *pat, long long piece)
{
    tc_topology *t = NULL;
    CHECK(tc_topology_synthetic(spec, &t) == TC_OK, "%s", tc_error_message());
    if (!t) return;
    int p = tc_topology_num_machines(t);
    tc_traffic *d = pattern(pat, p, 100000);
    tc_model_network net;
    tc_model_default_network(&net, 1e8, 50e-6);
    tc_alltoallv_options o = {piece, 1, 0, &net};
    tc_alltoallv_info info;
    tc_schedule *s = NULL;
    tc_status rc = tc_alltoallv_plan(t, d, &o, 1, &s, &info);
    CHECK(rc == TC_OK, "%s %s: %s", spec, pat, tc_error_message());
    if (rc == TC_OK) {
        tc_traffic_report r;
        CHECK(tc_traffic_verify(s, t, d, &net, &r) == TC_OK, "%s", tc_error_message());
        CHECK(r.complete && r.contention_free, "%s %s piece %lld: %s", spec, pat, piece, r.problem);
        CHECK(r.num_steps >= r.piece_load, "%s %s: %d steps under the piece load %lld", spec, pat, r.num_steps,
              (long long)r.piece_load);
        CHECK(r.predicted_seconds >= r.bound_seconds * (1 - 1e-12) && r.predicted_seconds < 3 * r.bound_seconds,
              "%s %s: predicted %g s, bound %g s", spec, pat, r.predicted_seconds, r.bound_seconds);
        CHECK(info.predicted_seconds == r.predicted_seconds, "the planner's prediction is the verifier's");
        const int64_t *D = tc_traffic_bytes(d);
        int uniform = p > 1 && D[1] > 0;
        for (int x = 0; x < p * p; x++)
            if (x / p != x % p && D[x] != D[1]) uniform = 0;
        CHECK(info.uniform == uniform, "%s: uniform %d", pat, info.uniform);
        CHECK(piece == 0 || info.uniform || info.piece_bytes == piece, "piece size %lld asked, %lld used", piece, info.piece_bytes);
        tc_sync_report sr;
        if (tc_schedule_num_syncs(s)) {
            CHECK(tc_schedule_verify_syncs(s, t, 1, &sr) == TC_OK && sr.ordered && sr.acyclic, "%s %s syncs: %s", spec,
                  pat, sr.problem);
        }
    }
    tc_schedule_destroy(s);
    tc_traffic_destroy(d);
    tc_topology_destroy(t);
}

/* A copy of s with op k moved to step `to` or made to carry piece `part`. */
static tc_schedule *mutate(const tc_schedule *s, int64_t k, int to, int part)
{
    int64_t n = tc_schedule_num_ops(s);
    const tc_op *ops = tc_schedule_ops(s);
    tc_schedule_builder *b = NULL;
    tc_schedule *out = NULL;
    tc_builder_create("mutant", tc_schedule_num_ranks(s), n, &b);
    for (int st = 0; st < tc_schedule_num_steps(s); st++)
        for (int64_t i = tc_schedule_step_begin(s, st); i < tc_schedule_step_begin(s, st + 1); i++)
            tc_builder_add_part(b, i == k && to >= 0 ? to : st, ops[i].src, ops[i].dst,
                                i == k && part >= 0 ? part : ops[i].part, ops[i].parts);
    tc_builder_finish(b, &out);
    return out;
}

int main(void)
{
    const char *trees[] = {"2", "5", "chain:3,4", "chain:4,4,4", "star:2,3,1", "tree:2,3,3", "chain:1,1,1,1,3"};
    const char *pats[] = {"uniform", "zipf:1.0", "zipf:2.0", "hot:1", "hot:2", "sparse:0.3", "sparse:1", "random"};
    for (size_t i = 0; i < sizeof trees / sizeof *trees; i++)
        for (size_t j = 0; j < sizeof pats / sizeof *pats; j++) {
            if (!strncmp(pats[j], "hot:2", 5) && !strcmp(trees[i], "2")) continue;   /* needs K < p */
            plan_and_prove(trees[i], pats[j], 0);
            plan_and_prove(trees[i], pats[j], 30000);
        }

    /* uniform: faraj-yuan's schedule, op for op */
    tc_topology *t = NULL;
    tc_topology_synthetic("chain:3,4,2", &t);
    tc_traffic *u = pattern("uniform", 9, 4096);
    tc_schedule *a = NULL, *fy = NULL;
    tc_alltoallv_info info;
    CHECK(tc_alltoallv_plan(t, u, NULL, 0, &a, &info) == TC_OK, "%s", tc_error_message());
    tc_alltoall_plan("faraj-yuan", t, &fy);
    CHECK(a && fy && tc_schedule_num_ops(a) == tc_schedule_num_ops(fy) &&
              tc_schedule_num_steps(a) == tc_schedule_num_steps(fy) &&
              !memcmp(tc_schedule_ops(a), tc_schedule_ops(fy), sizeof(tc_op) * (size_t)tc_schedule_num_ops(fy)),
          "uniform is not faraj-yuan's schedule");
    CHECK(tc_schedule_num_steps(a) == tc_topology_alltoall_load(t), "uniform: %d steps, load %lld",
          tc_schedule_num_steps(a), (long long)tc_topology_alltoall_load(t));
    tc_schedule_destroy(a);
    tc_schedule_destroy(fy);

    /* the verifier catches a broken plan */
    tc_traffic *z = pattern("zipf:1.0", 9, 50000);
    tc_alltoallv_options o = {10000, 1, 0, NULL};
    CHECK(tc_alltoallv_plan(t, z, &o, 0, &a, &info) == TC_OK, "%s", tc_error_message());
    tc_traffic_report r;
    int64_t k = 0;
    while (k < tc_schedule_num_ops(a) && tc_schedule_ops(a)[k].parts < 2) k++;
    CHECK(k < tc_schedule_num_ops(a), "zipf cut some block");
    if (k < tc_schedule_num_ops(a)) {
        const tc_op *op = &tc_schedule_ops(a)[k];
        tc_schedule *m = mutate(a, k, -1, (op->part + 1) % op->parts);   /* a piece twice, another never */
        tc_traffic_verify(m, t, z, NULL, &r);
        CHECK(!r.complete && strstr(r.problem, "twice"), "duplicate piece: %s", r.problem);
        tc_schedule_destroy(m);
        /* the same op in a step with another user of its sender's link */
        int64_t other = 0;
        while (other < tc_schedule_num_ops(a) &&
               (tc_schedule_ops(a)[other].src != op->src || tc_schedule_ops(a)[other].dst == op->dst))
            other++;
        int to = 0;
        for (int st = 0; st < tc_schedule_num_steps(a); st++)
            if (tc_schedule_step_begin(a, st) <= other && other < tc_schedule_step_begin(a, st + 1)) to = st;
        m = mutate(a, k, to, -1);
        tc_traffic_verify(m, t, z, NULL, &r);
        CHECK(r.complete && !r.contention_free && strstr(r.problem, "carries two pieces"), "contention: %s",
              r.problem);
        tc_schedule_destroy(m);
    }
    /* a plan for another matrix: a block it cuts is empty there, or a block it never sends is not */
    if (k < tc_schedule_num_ops(a)) {
        const tc_op *op = &tc_schedule_ops(a)[k];
        int64_t bytes[81];
        memcpy(bytes, tc_traffic_bytes(z), sizeof bytes);
        bytes[op->src * 9 + op->dst] = 0;
        tc_traffic *z2 = NULL;
        tc_traffic_from(9, bytes, &z2);
        tc_traffic_verify(a, t, z2, NULL, &r);
        CHECK(!r.complete && strstr(r.problem, "is empty but cut"), "emptied block: %s", r.problem);
        tc_traffic_destroy(z2);
        memcpy(bytes, tc_traffic_bytes(z), sizeof bytes);
        int zeroed = 0;
        for (int b = 0; b < 81 && !zeroed; b++)
            if (b / 9 != b % 9 && bytes[b] == 0) { bytes[b] = 5; zeroed = 1; }
        for (int b = 0; b < 81 && !zeroed; b++)   /* every block had bytes: grow one past its pieces */
            if (b / 9 != b % 9) { bytes[b] = 1; zeroed = 2; }
        tc_traffic_from(9, bytes, &z2);
        tc_traffic_verify(a, t, z2, NULL, &r);
        CHECK(!r.complete, "a plan of another matrix passed: %s", r.problem);
        tc_traffic_destroy(z2);
    }
    /* a forwarding schedule is refused as a plan of blocks */
    tc_schedule *br = NULL;
    tc_alltoall_plan("bruck", t, &br);
    tc_traffic_verify(br, t, z, NULL, &r);
    CHECK(!r.complete && strstr(r.problem, "forwards"), "bruck: %s", r.problem);
    tc_model_network net;
    tc_model_default_network(&net, 1e8, 50e-6);
    double secs;
    CHECK(tc_model_traffic_time(br, t, z, &net, &secs) == TC_ERR_UNSUPPORTED, "model of bruck over D");
    /* the topology-oblivious algorithms run over D: complete, zero-byte messages for empty blocks */
    tc_traffic *sp = pattern("sparse:0.3", 9, 50000);
    tc_schedule *pw = NULL;
    tc_alltoall_plan("pairwise", t, &pw);
    tc_traffic_verify(pw, t, sp, &net, &r);
    CHECK(r.complete && r.empty_messages > 0 && r.predicted_seconds >= r.bound_seconds, "pairwise over sparse: %s",
          r.problem);
    tc_schedule_destroy(pw);
    tc_schedule_destroy(br);

    /* refused */
    tc_topology *small = NULL;
    tc_topology_synthetic("chain:2,2", &small);
    tc_schedule *none = NULL;
    CHECK(tc_alltoallv_plan(small, z, NULL, 0, &none, NULL) == TC_ERR_ARG &&
              strstr(tc_error_message(), "9 ranks but the topology 4"),
          "size mismatch: %s", tc_error_message());
    o.piece_bytes = -1;
    CHECK(tc_alltoallv_plan(t, z, &o, 0, &none, NULL) == TC_ERR_ARG && strstr(tc_error_message(), "piece size"),
          "negative piece: %s", tc_error_message());
    CHECK(tc_traffic_verify(a, small, z, NULL, &r) == TC_ERR_ARG, "verify size mismatch");
    /* nothing to send */
    int64_t zero[9 * 9] = {0};
    tc_traffic *e = NULL;
    tc_traffic_from(9, zero, &e);
    CHECK(tc_alltoallv_plan(t, e, NULL, 1, &none, &info) == TC_OK && tc_schedule_num_ops(none) == 0,
          "empty matrix: %s", tc_error_message());
    tc_schedule_destroy(none);
    tc_traffic_destroy(e);
    tc_schedule_destroy(a);
    tc_traffic_destroy(u);
    tc_traffic_destroy(z);
    tc_traffic_destroy(sp);
    tc_topology_destroy(t);
    tc_topology_destroy(small);
    return CHECK_SUMMARY();
}
