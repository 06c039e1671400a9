/* Per-rank planning against the whole schedule: the phase oracle tells the
 * generator's schedule message by message and link by link, and the parts
 * of every rank join into a schedule that both verifiers accept. */
#include "../src/tc_internal.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static const char *const specs[] = {
    "2", "3", "8", "chain:1,1", "chain:4,4,4", "chain:8,8", "chain:5,1,3", "chain:3,3,3,3,2",
    "star:5,3,2,1", "star:1,1,1,6", "tree:2,3,2", "tree:3,2,2", "chain:2,7", "chain:6,6,1,1,1",
};

/* The oracle against the generator: every message, every link in every phase. */
static void check_oracle(const char *spec, const tc_topology *t)
{
    tc_schedule *whole = NULL;
    tc_phase_oracle o;
    if (tc_alltoall_plan("faraj-yuan", t, &whole) != TC_OK || tc_a2a_faraj_yuan_oracle(t, &o) != TC_OK) {
        CHECK(0, "%s: %s", spec, tc_error_message());
        tc_schedule_destroy(whole);
        return;
    }
    const int p = tc_topology_num_machines(t), E = 2 * tc_topology_num_links(t), h = tc_topology_height(t);
    CHECK(o.phases == tc_schedule_num_steps(whole), "%s: %lld phases, the generator %d", spec, (long long)o.phases,
          tc_schedule_num_steps(whole));
    const tc_op *ops = tc_schedule_ops(whole);
    int32_t *user = malloc(sizeof(int32_t) * (size_t)(E * (o.phases + 1) + 1)), *path = malloc(sizeof(int32_t) * (size_t)(2 * h + 2));
    for (int64_t i = 0; i < (int64_t)E * o.phases; i++) user[i] = -1;
    for (int st = 0; st < tc_schedule_num_steps(whole); st++)
        for (int64_t i = tc_schedule_step_begin(whole, st); i < tc_schedule_step_begin(whole, st + 1); i++) {
            int L = tc_topology_path(t, ops[i].src, ops[i].dst, path);
            for (int k = 0; k < L; k++) user[(int64_t)path[k] * o.phases + st] = (int32_t)i;
        }
    int wrong = 0;
    for (int e = 0; e < E; e++)
        for (int64_t ph = 0; ph < o.phases; ph++) {
            tc_op_at m;
            int got = o.link_user(o.ctx, e, ph, &m);
            int32_t want = user[(int64_t)e * o.phases + ph];
            if (got != (want >= 0) || (got && (m.src != ops[want].src || m.dst != ops[want].dst || m.phase != ph))) {
                if (!wrong++) CHECK(0, "%s: link %d phase %lld: oracle %d (%d->%d), generator %d", spec, e, (long long)ph,
                                    got, got ? m.src : -1, got ? m.dst : -1, want);
            }
        }
    CHECK(!wrong, "%s: %d link-phase answers differ", spec, wrong);
    /* the nearest user of every link before and after every phase, against the walk */
    wrong = 0;
    for (int e = 0; e < E; e++)
        for (int64_t ph = -1; ph <= o.phases; ph++)
            for (int dir = -1; dir <= 1; dir += 2) {
                int64_t want = -1;
                for (int64_t q = ph + dir; q >= 0 && q < o.phases && want < 0; q += dir)
                    if (user[(int64_t)e * o.phases + q] >= 0) want = q;
                tc_op_at m;
                int got = o.near_user(o.ctx, e, ph, dir, &m);
                int32_t w = want >= 0 ? user[(int64_t)e * o.phases + want] : -1;
                if (got != (want >= 0) || (got && (m.phase != want || m.src != ops[w].src || m.dst != ops[w].dst)))
                    if (!wrong++) CHECK(0, "%s: link %d, phase %lld, dir %d: oracle %d (phase %lld %d->%d), walk %lld", spec,
                                        e, (long long)ph, dir, got, got ? (long long)m.phase : -1LL, got ? m.src : -1,
                                        got ? m.dst : -1, (long long)want);
            }
    CHECK(!wrong, "%s: %d nearest users differ", spec, wrong);
    tc_op_at *msgs = malloc(sizeof(tc_op_at) * (size_t)(2 * p + 1));
    for (int r = 0; r < p; r++) {
        int64_t n = 0, matched = 0, expect = 0;
        o.rank_messages(o.ctx, r, msgs, &n);
        for (int st = 0; st < tc_schedule_num_steps(whole); st++)
            for (int64_t i = tc_schedule_step_begin(whole, st); i < tc_schedule_step_begin(whole, st + 1); i++) {
                if (ops[i].src != r && ops[i].dst != r) continue;
                expect++;
                for (int64_t k = 0; k < n; k++)
                    if (msgs[k].src == ops[i].src && msgs[k].dst == ops[i].dst && msgs[k].phase == st) { matched++; break; }
            }
        CHECK(n == expect && matched == expect, "%s: rank %d: oracle %lld messages, %lld of the generator's %lld", spec,
              r, (long long)n, (long long)matched, (long long)expect);
    }
    free(msgs); free(user); free(path);
    o.destroy(o.ctx);
    tc_schedule_destroy(whole);
}

/* Every rank's part, joined: complete, contention-free, optimal, and its
 * syncs order every shared link without a cycle. */
static void check_parts(const char *spec, const tc_topology *t, int depth)
{
    const int p = tc_topology_num_machines(t);
    tc_schedule **parts = calloc((size_t)p, sizeof *parts), *whole = NULL;
    tc_plan_options opt = {1, 0, NULL, depth, TC_PHASE_ORDER_PAPER, 0};
    int ok = 1;
    for (int r = 0; r < p && ok; r++)
        if (tc_alltoall_plan_rank("faraj-yuan", t, &opt, r, &parts[r]) != TC_OK) {
            CHECK(0, "%s: rank %d: %s", spec, r, tc_error_message());
            ok = 0;
        }
    if (ok && tc_schedule_from_parts((const tc_schedule *const *)parts, p, &whole) != TC_OK) {
        CHECK(0, "%s depth %d: %s", spec, depth, tc_error_message());
        ok = 0;
    }
    if (ok) {
        tc_verify_report vr;
        tc_sync_report sr;
        CHECK(tc_schedule_verify(whole, t, &vr) == TC_OK && vr.complete && vr.contention_free && vr.optimal,
              "%s: the parts' union: %s", spec, vr.problem);
        CHECK(tc_schedule_verify_syncs(whole, t, depth, &sr) == TC_OK && sr.ordered && sr.acyclic,
              "%s depth %d: the parts' syncs: %s", spec, depth, sr.problem);
    }
    tc_schedule_destroy(whole);
    for (int r = 0; r < p; r++) tc_schedule_destroy(parts[r]);
    free(parts);
}

int main(void)
{
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        tc_topology *t = NULL;
        if (tc_topology_synthetic(specs[i], &t) != TC_OK) { CHECK(0, "%s: %s", specs[i], tc_error_message()); continue; }
        check_oracle(specs[i], t);
        check_parts(specs[i], t, 1);
        check_parts(specs[i], t, 2);
        /* several ranks a machine: links to the host are shared memory */
        int per[64];
        for (int m = 0; m < 64; m++) per[m] = 1 + m % 3;
        tc_topology *x = NULL;
        if (tc_topology_num_machines(t) <= 64 && tc_topology_expand(t, per, &x) == TC_OK) {
            check_oracle(specs[i], x);
            check_parts(specs[i], x, 1);
        }
        tc_topology_destroy(x);
        tc_topology_destroy(t);
    }
    /* a subtree whose machines are not consecutive in rank order (s5 holds
     * m0 and m3, s4's m1 between them): its links are walked, not jumped */
    static const char interleaved[] =
        "switches:\n"
        "  - name: s3\n    machines: [m0, m5]\n"
        "  - name: s4\n    machines: [m1, m2]\n"
        "  - name: s6\n    machines: [m3]\n"
        "  - name: s2\n    machines: [m4, m6, m7, m8]\n"
        "  - name: s0\n    switches: [s1, s2]\n"
        "  - name: s1\n    switches: [s5, s4]\n"
        "  - name: s5\n    switches: [s3, s6]\n";
    tc_topology *y = NULL;
    if (tc_topology_parse(interleaved, sizeof interleaved - 1, TC_FORMAT_YAML, "interleaved.yaml", &y) == TC_OK) {
        check_oracle("interleaved", y);
        check_parts("interleaved", y, 1);
        check_parts("interleaved", y, 2);
    } else
        CHECK(0, "interleaved: %s", tc_error_message());
    tc_topology_destroy(y);
    /* refusals */
    tc_topology *t = NULL;
    tc_schedule *s = NULL;
    tc_topology_synthetic("chain:2,2", &t);
    CHECK(tc_alltoall_plan_rank("faraj-yuan", t, NULL, 4, &s) == TC_ERR_ARG && strstr(tc_error_message(), "rank 4"),
          "rank out of range: %s", tc_error_message());
    CHECK(tc_alltoall_plan_rank("bruck", t, NULL, 0, &s) == TC_ERR_UNSUPPORTED && strstr(tc_error_message(), "faraj-yuan"),
          "no per-rank form: %s", tc_error_message());
    CHECK(tc_alltoall_plan_rank("nope", t, NULL, 0, &s) == TC_ERR_ARG, "unknown: %s", tc_error_message());
    tc_topology_destroy(t);
    return CHECK_SUMMARY();
}
