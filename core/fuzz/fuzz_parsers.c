/* libFuzzer target for every reader of the core: the first byte picks one,
 * the rest is its input.  Besides "no crash, no sanitizer report", what a
 * reader accepts must survive its writer: a topology written as YAML (and
 * as Slurm where that can say it) reads back equal, a schedule written as
 * JSON reads back with the same steps and syncs, a compressed hostlist
 * expands to the same names; Slurm's topology.yaml, MPICH's coordinates
 * and ibnetdiscover's output (first byte 0xd0-0xdf) likewise; a tuning file's rules tile the block sizes
 * (first byte >= 0xf0); recorded starts (0xc8-0xcf) read back equal; a traffic matrix (0xe0-0xef) reads back equal and
 * its bounds hold and, up to 12 ranks, the unequal-block planner's plan
 * proves (every byte once, contention-free); and on a small tree read from the bytes,
 * faraj-yuan keeps its promises and its syncs pass the sync verifier.
 *
 *   make fuzz FUZZ_SECONDS=600      (corpus: core/fuzz/corpus)
 */
#include "tc_internal.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* Write with fn into memory; NULL when the writer refuses. */
static char *written(tc_status (*fn)(const void *, tc_format, FILE *), const void *obj, tc_format fmt, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    CHECK(f);
    tc_status rc = fn(obj, fmt, f);
    fclose(f);
    if (rc != TC_OK) { free(text); return NULL; }
    return text;
}

static tc_status write_topology(const void *t, tc_format fmt, FILE *f) { return tc_topology_write(t, fmt, f); }

/* Every writer: YAML always writes, the others where they can say the
 * topology; what they write reads back equal (MPICH's coordinates name
 * their own switches and machines: it reads back to the same ranks and
 * writes the same text again). */
static void round_trip_topology(const tc_topology *t)
{
    const tc_format formats[] = {TC_FORMAT_SLURM, TC_FORMAT_YAML, TC_FORMAT_SLURM_YAML, TC_FORMAT_MPICH};
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
        tc_format fmt = formats[i];
        size_t len;
        char *text = written(write_topology, t, fmt, &len);
        if (!text) {   /* YAML says everything but ranks interleaving switches */
            CHECK(fmt != TC_FORMAT_YAML || strstr(tc_error_message(), "interleave"));
            continue;
        }
        tc_topology *back = NULL;
        tc_status rc = tc_topology_parse(text, len, fmt, "<written>", &back);
        if (rc != TC_OK) fprintf(stderr, "written topology refused: %s\n%s\n", tc_error_message(), text);
        CHECK(rc == TC_OK);
        if (fmt == TC_FORMAT_MPICH) {
            CHECK(tc_topology_num_machines(back) == tc_topology_num_machines(t));
            size_t len2;
            char *again = written(write_topology, back, fmt, &len2);
            CHECK(again && len2 == len && !memcmp(again, text, len));
            free(again);
        } else
            CHECK(tc_topology_equal(t, back));
        tc_topology_destroy(back);
        free(text);
    }
}

/* A small tree read from the fuzzer's bytes: faraj-yuan as the executor
 * runs it keeps its promises (complete, contention-free, optimal) and its
 * syncs pass the sync verifier. */
static void plan_small(const tc_topology *t)
{
    if (tc_topology_num_machines(t) > 16) return;
    tc_schedule *s = NULL;
    tc_verify_report rep;
    tc_sync_report sr;
    /* the paper's phase order: the grouped order's search (a fifth of a
     * second at 12 machines) would slow the fuzzer a hundredfold */
    tc_plan_options opt = {1, TC_DEFAULT_FANOUT, NULL, 1, TC_PHASE_ORDER_PAPER, 0};
    CHECK(tc_alltoall_plan_with_options("faraj-yuan", t, &opt, 1, &s) == TC_OK);
    CHECK(tc_schedule_verify(s, t, &rep) == TC_OK);
    if (!(rep.complete && rep.contention_free && rep.optimal)) fprintf(stderr, "faraj-yuan: %s\n", rep.problem);
    CHECK(rep.complete && rep.contention_free && rep.optimal);
    CHECK(tc_schedule_verify_syncs(s, t, 1, &sr) == TC_OK);
    if (!(sr.ordered && sr.acyclic)) fprintf(stderr, "faraj-yuan syncs: %s\n", sr.problem);
    CHECK(sr.ordered && sr.acyclic);
    tc_schedule_destroy(s);
}

static void fuzz_topology(const char *data, size_t len, tc_format fmt)
{
    tc_topology *t = NULL;
    if (tc_topology_parse(data, len, fmt, "<fuzz>", &t) != TC_OK) return;
    round_trip_topology(t);
    plan_small(t);
    tc_topology_destroy(t);
}

static tc_status write_schedule(const void *s, tc_format fmt, FILE *f)
{
    (void)fmt;
    return tc_schedule_write_json(s, NULL, f);
}

static void fuzz_schedule(const char *data, size_t len)
{
    tc_schedule *s = NULL;
    if (tc_schedule_read_json(data, len, "<fuzz>", NULL, &s) != TC_OK) return;
    int n = tc_schedule_num_ranks(s);
    /* the verifier on a star of that many machines */
    if (n >= 1 && n <= 64) {
        char spec[16];
        tc_topology *t = NULL;
        tc_verify_report rep;
        snprintf(spec, sizeof spec, "%d", n);
        CHECK(tc_topology_synthetic(spec, &t) == TC_OK);
        CHECK(tc_schedule_verify(s, t, &rep) == TC_OK);
        tc_sync_report sr;   /* whatever syncs the file has: a report, never a crash */
        tc_status rc = tc_schedule_verify_syncs(s, t, 1, &sr);
        CHECK(rc == TC_OK || rc == TC_ERR_UNSUPPORTED);
        tc_topology_destroy(t);
    }
    size_t wlen;
    char *text = written(write_schedule, s, TC_FORMAT_AUTO, &wlen);
    CHECK(text);
    tc_schedule *back = NULL;
    tc_status rc = tc_schedule_read_json(text, wlen, "<written>", NULL, &back);
    if (rc != TC_OK) fprintf(stderr, "written schedule refused: %s\n", tc_error_message());
    CHECK(rc == TC_OK);
    CHECK(tc_schedule_num_steps(back) == tc_schedule_num_steps(s) && tc_schedule_num_ops(back) == tc_schedule_num_ops(s));
    CHECK(tc_schedule_num_syncs(back) == tc_schedule_num_syncs(s));
    CHECK(!strcmp(tc_schedule_algorithm(back), tc_schedule_algorithm(s)));
    tc_schedule_destroy(back);
    tc_schedule_destroy(s);
    free(text);
}

static void fuzz_hostlist(const char *text)
{
    char *names = NULL, *again = NULL, *expr = NULL;
    size_t n, m;
    if (tc_hostlist_expand(text, &names, &n) != TC_OK) return;
    if (n <= 100000) {
        const char **list = malloc(sizeof(char *) * (n ? n : 1));
        CHECK(list);
        const char *p = names;
        for (size_t i = 0; i < n; i++, p += strlen(p) + 1) {
            CHECK(strlen(p) <= TC_MAX_NAME_LEN);
            list[i] = p;
        }
        CHECK(tc_hostlist_compress(list, n, &expr) == TC_OK);
        CHECK(tc_hostlist_expand(expr, &again, &m) == TC_OK && m == n);
        p = again;
        for (size_t i = 0; i < n; i++, p += strlen(p) + 1) CHECK(!strcmp(p, list[i]));
        free(list);
    }
    free(names);
    free(again);
    free(expr);
}

static void fuzz_words(const char *text)
{
    double v;
    char buf[32];
    if (tc_parse_rate(text, TC_BARE_RATE_UNIT, &v) == TC_OK) {
        CHECK(v >= TC_MIN_RATE && v <= TC_MAX_RATE);
        tc_format_rate(v, buf, sizeof buf);
    }
    if (tc_parse_time(text, 1, &v) == TC_OK) {
        CHECK(v >= 0 && v <= TC_MAX_TIME);
        tc_format_time(v, buf, sizeof buf);
    }
    tc_topology *t = NULL;
    if (tc_topology_synthetic(text, &t) == TC_OK) {
        CHECK(tc_topology_num_machines(t) <= TC_MAX_MACHINES);
        if (tc_topology_num_machines(t) <= 64) round_trip_topology(t);
        tc_topology_destroy(t);
    }
}

/* A tuning file the reader accepts tiles every process count's block sizes:
 * each rule's ends select that rule, and one past its end the next one. */
static void fuzz_tuning(const char *data, size_t len)
{
    tc_tuning *t = NULL;
    if (tc_tuning_read(data, len, "<fuzz>", &t) != TC_OK) return;
    CHECK(tc_tuning_num_rules(t) > 0 && tc_tuning_num_machines(t) > 0);
    for (int i = 0; i < tc_tuning_num_rules(t); i++) {
        const tc_tuning_rule *u = tc_tuning_rule_at(t, i), *got = NULL;
        CHECK(tc_tuning_select(t, u->ranks, u->min_block, &got) == TC_OK && got == u);
        if (u->max_block >= 0) {
            CHECK(tc_tuning_select(t, u->ranks, u->max_block, &got) == TC_OK && got == u);
            CHECK(tc_tuning_select(t, u->ranks, u->max_block + 1, &got) == TC_OK && got == u + 1);
        }
        CHECK(u->algorithm == TC_NATIVE || (u->algorithm >= 0 && u->algorithm < tc_algorithm_count()));
    }
    tc_tuning_destroy(t);
}

/* A traffic matrix the reader accepts is square, within its limits, and
 * reads back the same from what its writer writes; its bounds are finite. */
static tc_status write_traffic(const void *d, tc_format fmt, FILE *f) { (void)fmt; return tc_traffic_write(d, f); }

/* Recorded starts: machines from the first byte, the algorithm the first
 * line's first word; what it accepts is in range, and the same lines written
 * back with %.17g read back equal. */
static void fuzz_starts(unsigned char first, const char *data, size_t len)
{
    const int machines = 1 + first % 8;
    char algorithm[32] = "linear";
    size_t k = 0;
    while (k < len && k < sizeof algorithm - 1 && data[k] > ' ' && data[k] < 0x7f) { algorithm[k] = data[k]; k++; }
    if (k) algorithm[k] = '\0';
    for (int64_t block = 1; block <= 1024; block *= 1024) {
        double *rows = NULL;
        int calls = 0;
        if (tc_starts_read(data, len, "<fuzz>", algorithm, block, machines, &rows, &calls) != TC_OK) continue;
        CHECK(calls >= 1 && calls <= TC_MAX_STARTS_LINES);
        char *text = NULL;
        size_t n;
        FILE *f = open_memstream(&text, &n);
        CHECK(f);
        for (int c = 0; c < calls; c++) {
            fprintf(f, "%s %lld %d", algorithm, (long long)block, c);
            for (int m = 0; m < machines; m++) {
                double v = rows[(size_t)c * machines + m];
                CHECK(v >= 0 && v <= TC_MAX_START_OFFSET);
                fprintf(f, " %.17g", v);
            }
            fputc('\n', f);
        }
        fclose(f);
        double *back = NULL;
        int again = 0;
        CHECK(tc_starts_read(text, n, "<written>", algorithm, block, machines, &back, &again) == TC_OK &&
              again == calls && !memcmp(back, rows, sizeof(double) * (size_t)calls * (size_t)machines));
        free(back);
        free(text);
        free(rows);
    }
}

static void fuzz_traffic(const char *data, size_t len)
{
    tc_traffic *d = NULL, *e = NULL;
    if (tc_traffic_read(data, len, "<fuzz>", &d) != TC_OK) return;
    const int p = tc_traffic_ranks(d);
    const int64_t *b = tc_traffic_bytes(d);
    int64_t total = 0;
    for (int64_t k = 0; k < (int64_t)p * p; k++) { CHECK(b[k] >= 0); total += b[k]; }
    CHECK(p >= 1 && total <= TC_MAX_TRAFFIC_BYTES);
    size_t n;
    char *text = written(write_traffic, d, TC_FORMAT_AUTO, &n);
    CHECK(text && tc_traffic_read(text, n, "<written>", &e) == TC_OK && tc_traffic_ranks(e) == p &&
          !memcmp(tc_traffic_bytes(e), b, sizeof(int64_t) * (size_t)p * (size_t)p));
    free(text);
    tc_traffic_destroy(e);
    tc_topology *t = NULL;
    char spec[32];
    snprintf(spec, sizeof spec, "%d", p);
    if (p <= 256 && tc_topology_synthetic(spec, &t) == TC_OK) {
        tc_traffic_bound bd;
        CHECK(tc_traffic_bounds(d, t, 1e8, &bd) == TC_OK && bd.total_bytes == total && isfinite(bd.link_seconds) &&
              bd.link_seconds >= bd.port_seconds * 0.999999);
        /* small matrices: the planner's plan proves, whatever the blocks */
        tc_schedule *s = NULL;
        tc_alltoallv_options o = {total % 3 == 0 ? 0 : 1 + total % 1000, 1, 0, NULL};
        if (p <= 12 && tc_alltoallv_plan(t, d, &o, 1, &s, NULL) == TC_OK) {
            tc_traffic_report r;
            CHECK(tc_traffic_verify(s, t, d, NULL, &r) == TC_OK && r.complete && r.contention_free);
        }
        tc_schedule_destroy(s);
        tc_topology_destroy(t);
    }
    tc_traffic_destroy(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (data[0] >= 0xf0) {   /* the tuning reader (the others keep their first bytes) */
        fuzz_tuning(text, len);
        tc_error_clear();
        return 0;
    }
    if (data[0] >= 0xc8 && data[0] < 0xd0) {   /* recorded starts */
        fuzz_starts(data[0], text, len);
        tc_error_clear();
        return 0;
    }
    if (data[0] >= 0xd0 && data[0] < 0xe0) {   /* Slurm's topology.yaml, MPICH's coordinates, ibnetdiscover, by contents */
        static const tc_format more[] = {TC_FORMAT_SLURM_YAML, TC_FORMAT_MPICH, TC_FORMAT_IBNET, TC_FORMAT_AUTO};
        fuzz_topology(text, len, more[(data[0] - 0xd0) % 4]);
        tc_error_clear();
        return 0;
    }
    if (data[0] >= 0xe0) {   /* the traffic matrix reader */
        fuzz_traffic(text, len);
        tc_error_clear();
        return 0;
    }
    switch (data[0] % 5) {
    case 0: fuzz_topology(text, len, TC_FORMAT_SLURM); break;
    case 1: fuzz_topology(text, len, TC_FORMAT_YAML); break;
    case 2: fuzz_schedule(text, len); break;
    default: {   /* the string readers take C strings */
        if (len > 4096) return 0;
        char *s = malloc(len + 1);
        CHECK(s);
        memcpy(s, text, len);
        s[len] = '\0';
        if (data[0] % 5 == 3) fuzz_hostlist(s);
        else fuzz_words(s);
        free(s);
    }
    }
    tc_error_clear();
    return 0;
}
