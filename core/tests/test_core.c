/* C tests of the core: hostlists, units, the error convention, the paper's
 * Table 4, and the verifier catching broken schedules.  Prints
 * "N passed, N failed". */
#include "topocoll/topocoll.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_hostlist(void)
{
    static const struct { const char *expr; const char *names; size_t n; } cases[] = {
        {"n[0-3,9]", "n0 n1 n2 n3 n9", 5},
        {"tux[01-03]", "tux01 tux02 tux03", 3},
        {"a,b[1-2],c", "a b1 b2 c", 4},
        {"r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2", 4},
        {"n[8-10]", "n8 n9 n10", 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *names;
        size_t n;
        tc_status rc = tc_hostlist_expand(cases[i].expr, &names, &n);
        CHECK(rc == TC_OK && n == cases[i].n, "%s: rc %d n %zu", cases[i].expr, rc, n);
        if (rc) continue;
        char joined[256] = "";
        char *p = names;
        for (size_t k = 0; k < n; k++, p += strlen(p) + 1) {
            if (k) strcat(joined, " ");
            strcat(joined, p);
        }
        CHECK(!strcmp(joined, cases[i].names), "%s expanded to '%s'", cases[i].expr, joined);
        free(names);
    }
    static const char *bad[] = {"n[1-", "n[3-1]", "n[]", "n]", ",", "n[a]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *names = NULL;
        size_t n;
        tc_status rc = tc_hostlist_expand(bad[i], &names, &n);
        CHECK(rc == TC_ERR_PARSE && strstr(tc_error_message(), "hostlist"), "'%s' gave %d: %s", bad[i], rc,
              tc_error_message());
        free(names);
    }
    const char *in[] = {"n0", "n1", "n2", "n5", "tux01", "tux02", "x", "n7"};
    char *expr;
    CHECK(tc_hostlist_compress(in, 8, &expr) == TC_OK, "compress");
    CHECK(!strcmp(expr, "n[0-2,5],tux[01-02],x,n7"), "compressed to '%s'", expr);
    free(expr);
}

static void test_units(void)
{
    double v;
    CHECK(tc_parse_rate("100Mbit", 0, &v) == TC_OK && v == 100e6, "100Mbit -> %g", v);
    CHECK(tc_parse_rate("1Gbit/s", 0, &v) == TC_OK && v == 1e9, "1Gbit/s -> %g", v);
    CHECK(tc_parse_rate("100mbit", 0, &v) == TC_OK && v == 100e6, "100mbit (tc) -> %g", v);
    CHECK(tc_parse_rate("12.5MB/s", 0, &v) == TC_OK && v == 100e6, "12.5MB/s -> %g", v);
    CHECK(tc_parse_rate("100", 1e6, &v) == TC_OK && v == 100e6, "bare 100 as Mbit -> %g", v);
    CHECK(tc_parse_rate("100", 0, &v) == TC_ERR_PARSE && strstr(tc_error_message(), "unit"), "%s", tc_error_message());
    CHECK(tc_parse_rate("fast", 0, &v) == TC_ERR_PARSE, "fast");
    CHECK(tc_parse_time("50us", 0, &v) == TC_OK && v > 49.9e-6 && v < 50.1e-6, "50us -> %g", v);
    CHECK(tc_parse_time("2 parsecs", 0, &v) == TC_ERR_PARSE, "parsecs");
    CHECK(tc_parse_time("0", 0, &v) == TC_OK && v == 0, "a bare zero needs no unit");
    CHECK(tc_parse_time("5", 0, &v) == TC_ERR_PARSE && strstr(tc_error_message(), "needs a unit"), "a bare 5");
    char buf[32];
    tc_format_rate(100e6, buf, sizeof buf);
    CHECK(!strcmp(buf, "100Mbit"), "%s", buf);
    tc_format_time(50e-6, buf, sizeof buf);
    CHECK(!strcmp(buf, "50us"), "%s", buf);
}

static void test_errors(void)
{
    const char *text = "SwitchName=s0 Nodes=n[0-3]\nSwitchName=s1 Nodes=n3\n";
    tc_topology *t = NULL;
    tc_status rc = tc_topology_parse(text, strlen(text), TC_FORMAT_SLURM, "dup.conf", &t);
    CHECK(rc == TC_ERR_TOPOLOGY, "duplicate machine gave %d", rc);
    CHECK(strstr(tc_error_message(), "dup.conf:2") && strstr(tc_error_message(), "n3"), "message: %s",
          tc_error_message());
    CHECK(strstr(tc_error_origin(), ".c:") != NULL, "origin: %s", tc_error_origin());
    tc_topology_destroy(t);
}

/* Faraj & Yuan, Table 4, with t0 = n0..n2, t1 = n3,n4, t2 = n5. */
static void test_table4(void)
{
    static const int table4[9][4][2] = {
        {{0, 4}, {3, 5}, {5, 1}, {1, 0}}, {{1, 3}, {4, 5}, {5, 2}, {2, 1}}, {{2, 4}, {5, 0}, {0, 2}, {-1, -1}},
        {{0, 3}, {3, 2}, {2, 0}, {-1, -1}}, {{1, 4}, {3, 0}, {0, 1}, {4, 3}}, {{2, 3}, {3, 1}, {1, 2}, {-1, -1}},
        {{0, 5}, {4, 0}, {-1, -1}, {-1, -1}}, {{1, 5}, {4, 1}, {5, 3}, {3, 4}}, {{2, 5}, {4, 2}, {5, 4}, {-1, -1}},
    };
    tc_topology *t = NULL;
    tc_schedule *s = NULL;
    CHECK(tc_topology_load("examples/topologies/figure1.yaml", TC_FORMAT_AUTO, &t) == TC_OK, "%s", tc_error_message());
    if (!t) return;
    CHECK(tc_alltoall_plan("faraj-yuan", t, &s) == TC_OK, "%s", tc_error_message());
    CHECK(tc_schedule_num_steps(s) == 9, "%d phases", tc_schedule_num_steps(s));
    const tc_op *ops = tc_schedule_ops(s);
    for (int p = 0; p < 9 && tc_schedule_num_steps(s) == 9; p++) {
        int expected = 0;
        for (int k = 0; k < 4; k++) {
            if (table4[p][k][0] < 0) continue;
            expected++;
            int found = 0;
            for (int64_t i = tc_schedule_step_begin(s, p); i < tc_schedule_step_begin(s, p + 1); i++)
                found |= ops[i].src == table4[p][k][0] && ops[i].dst == table4[p][k][1];
            CHECK(found, "phase %d lacks %d->%d", p, table4[p][k][0], table4[p][k][1]);
        }
        int64_t got = tc_schedule_step_begin(s, p + 1) - tc_schedule_step_begin(s, p);
        CHECK(got == expected, "phase %d has %lld messages, Table 4 %d", p, (long long)got, expected);
    }
    tc_verify_report rep;
    CHECK(tc_schedule_verify(s, t, &rep) == TC_OK && rep.optimal, "report: %s", rep.problem);

    /* The verifier catches a moved message (contention) and a dropped one. */
    int32_t *tr = malloc(sizeof(int32_t) * 3 * (size_t)tc_schedule_num_ops(s));
    tc_schedule_copy_ops(s, tr);
    int64_t n = tc_schedule_num_ops(s);
    tr[0] = 1; /* 0->4 from phase 0 into phase 1, where n0->n2 leaves n0 as well */
    tc_schedule *bad = NULL;
    CHECK(tc_schedule_from_triples("x", 6, n, tr, &bad) == TC_OK, "from_triples");
    CHECK(tc_schedule_verify(bad, t, &rep) == TC_OK && rep.complete && !rep.contention_free, "contention not seen");
    CHECK(strstr(rep.problem, "edge") != NULL, "problem: %s", rep.problem);
    tc_schedule_destroy(bad);
    CHECK(tc_schedule_from_triples("x", 6, n - 1, tr + 3, &bad) == TC_OK, "from_triples");
    CHECK(tc_schedule_verify(bad, t, &rep) == TC_OK && !rep.complete && strstr(rep.problem, "never arrives"),
          "missing message not seen: %s", rep.problem);
    tc_schedule_destroy(bad);
    free(tr);
    tc_schedule_destroy(s);
    tc_topology_destroy(t);
}

static void test_registry(void)
{
    tc_topology *t = NULL;
    tc_schedule *s = NULL;
    CHECK(tc_topology_synthetic("8", &t) == TC_OK, "%s", tc_error_message());
    CHECK(tc_alltoall_plan("no-such", t, &s) == TC_ERR_ARG && strstr(tc_error_message(), "faraj-yuan"),
          "unknown name message: %s", tc_error_message());
    CHECK(tc_algorithm_find("faraj-yuan") >= 0, "registry lookup");
    /* untuned auto: the MPI's own for small blocks, faraj-yuan for large ones */
    tc_model_features f[2];
    double secs[2];
    CHECK(tc_model_auto_features(t, 1e8, NULL, f) == TC_OK, "%s", tc_error_message());
    CHECK(tc_model_auto_choice(f, 8, secs) == TC_NATIVE && secs[0] < secs[1], "auto at 8 bytes");
    CHECK(tc_model_auto_choice(f, 1 << 20, secs) == tc_algorithm_find("faraj-yuan") || secs[1] >= secs[0],
          "auto at 1 MB follows its predictions");
    tc_topology_destroy(t);
}

/* Segmented schedules: the verifier wants every piece of every block once. */
static void test_pieces(void)
{
    tc_topology *t = NULL;
    CHECK(tc_topology_synthetic("3", &t) == TC_OK, "%s", tc_error_message());
    for (int variant = 0; variant < 4 && t; variant++) {
        tc_schedule_builder *b = NULL;
        tc_schedule *s = NULL;
        CHECK(tc_builder_create("pieces", 3, 16, &b) == TC_OK, "%s", tc_error_message());
        for (int o = 0; o < 3; o++)
            for (int d = 0; d < 3; d++) {
                if (o == d) continue;
                for (int k = 0; k < 2; k++) {
                    int part = k;
                    if (variant == 1 && o == 2 && d == 1 && k == 1) continue;     /* a piece missing */
                    if (variant == 2 && o == 0 && d == 2) part = 0;                /* piece 0 twice */
                    tc_builder_add_part(b, k, o, d, part, variant == 3 && o == 1 ? 3 : 2);  /* mixed counts */
                }
            }
        CHECK(tc_builder_add_part(b, 0, 0, 1, 2, 2) == TC_ERR_ARG, "piece 2 of 2 accepted");
        CHECK(tc_builder_finish(b, &s) == TC_OK, "%s", tc_error_message());
        tc_verify_report rep;
        CHECK(tc_schedule_verify(s, t, &rep) == TC_OK, "%s", tc_error_message());
        CHECK(rep.complete == (variant == 0), "variant %d: complete=%d (%s)", variant, rep.complete, rep.problem);
        CHECK(rep.max_parts == (variant == 3 ? 3 : 2), "max_parts %d", rep.max_parts);
        tc_schedule_destroy(s);
    }
    tc_topology_destroy(t);
}

/* Expanded machines: ranks, hosts, loads; clusters cut at the bottleneck. */
static void test_expand_and_clusters(void)
{
    tc_topology *t = NULL, *e = NULL;
    CHECK(tc_topology_synthetic("chain:2,1", &t) == TC_OK, "%s", tc_error_message());
    if (!t) return;
    int counts[3] = {3, 1, 2}, cl[6];
    CHECK(tc_topology_expand(t, counts, &e) == TC_OK, "%s", tc_error_message());
    if (e) {
        CHECK(tc_topology_num_machines(e) == 6, "%d ranks", tc_topology_num_machines(e));
        CHECK(!strcmp(tc_topology_node_name(e, tc_topology_machine_node(e, 2)), "n0.2"), "rank 2 is %s",
              tc_topology_node_name(e, tc_topology_machine_node(e, 2)));
        CHECK(tc_topology_machine_host(e, 0) == tc_topology_machine_host(e, 2) &&
                  tc_topology_machine_host(e, 3) != tc_topology_machine_host(e, 0),
              "hosts");
        CHECK(tc_topology_alltoall_load(e) == 3 * 3, "load %lld", (long long)tc_topology_alltoall_load(e));
        /* the busiest link is n0's (3 ranks x 3 others): cut, n0's ranks | the rest */
        int k = tc_topology_clusters(e, 1e8, cl);
        CHECK(k == 2 && cl[0] == 0 && cl[2] == 0 && cl[3] == 1 && cl[5] == 1, "expanded clusters %d", k);
    }
    counts[1] = 0;
    tc_topology *bad = NULL;
    CHECK(tc_topology_expand(t, counts, &bad) == TC_ERR_ARG && strstr(tc_error_message(), "'n1'"), "%s",
          tc_error_message());
    tc_topology *c = NULL;
    CHECK(tc_topology_synthetic("chain:2,2,2", &c) == TC_OK, "%s", tc_error_message());
    int cl6[6];
    if (c) {
        int k = tc_topology_clusters(c, 1e8, cl6);
        CHECK(k == 3 && cl6[0] == 0 && cl6[1] == 0 && cl6[2] == 1 && cl6[5] == 2, "chain:2,2,2 clusters %d", k);
    }
    tc_topology_destroy(c);
    tc_topology_destroy(e);
    tc_topology_destroy(t);
}

int main(void)
{
    test_hostlist();
    test_units();
    test_errors();
    test_table4();
    test_pieces();
    test_expand_and_clusters();
    test_registry();
    return CHECK_SUMMARY();
}
