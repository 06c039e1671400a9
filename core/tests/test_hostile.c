/* Hostile inputs to the core's readers (issue 15's reproducers and their
 * kin): each is refused with the status and a message naming the problem,
 * the place and, for a limit, the limit; none crashes.  Run under ASan and
 * UBSan by `make test-san`.  Prints "N passed, N failed". */
#include "topocoll/topocoll.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parse text (len bytes) as the given format; status, and the message in msg. */
static tc_status parse(const char *text, size_t len, tc_format fmt, tc_topology **t)
{
    *t = NULL;
    return tc_topology_parse(text, len, fmt, "hostile", t);
}

static void expect_refused(const char *text, size_t len, tc_format fmt, tc_status want, const char *says)
{
    tc_topology *t;
    tc_status rc = parse(text, len, fmt, &t);
    CHECK(rc == want && strstr(tc_error_message(), says), "'%.60s': status %d (want %d), message '%s' (want '%s')",
          text, rc, want, tc_error_message(), says);
    tc_topology_destroy(t);
}

static void test_hostlist_numbers(void)
{
    /* a zero-padded number wider than any fixed buffer: every name whole */
    char *names;
    size_t n;
    const char *wide = "n[0000000000000000000000000000000000000000000000000001-2]";
    tc_status rc = tc_hostlist_expand(wide, &names, &n);
    CHECK(rc == TC_OK && n == 2, "wide: %d %s", rc, tc_error_message());
    if (rc == TC_OK) {
        CHECK(strlen(names) == 53 && !strcmp(names + 52, "1") && !strcmp(names + 54 + 52, "2"), "wide names '%s'", names);
        free(names);
    }
    const char *spec = "SwitchName=s0 Nodes=n[0000000000000000000000000000000000000000000000000001-2]";
    tc_topology *t;
    rc = parse(spec, strlen(spec), TC_FORMAT_SLURM, &t);
    CHECK(rc == TC_OK && tc_topology_num_machines(t) == 2 &&
              strlen(tc_topology_node_name(t, tc_topology_machine_node(t, 0))) == 53,
          "wide Slurm: %d %s", rc, tc_error_message());
    tc_topology_destroy(t);
    /* numbers past a long: refused by their digits, not wrapped or saturated */
    rc = tc_hostlist_expand("n[9223372036854775807],m0", &names, &n);
    CHECK(rc == TC_ERR_PARSE && strstr(tc_error_message(), "more than 18 digits"), "LONG_MAX: %d %s", rc,
          tc_error_message());
    rc = tc_hostlist_expand("n[999999999999999998-999999999999999999]", &names, &n);
    CHECK(rc == TC_OK && n == 2, "18 digits: %d %s", rc, tc_error_message());
    if (rc == TC_OK) free(names);
    /* names longer than the limit */
    char longname[400];
    memset(longname, 'a', 300);
    strcpy(longname + 300, "[1-2]");
    rc = tc_hostlist_expand(longname, &names, &n);
    CHECK(rc == TC_ERR_LIMIT && strstr(tc_error_message(), "limit of 255"), "long name: %d %s", rc, tc_error_message());
    /* a range of ten million names: refused at once */
    rc = tc_hostlist_expand("n[0-9999999]", &names, &n);
    CHECK(rc == TC_ERR_LIMIT && strstr(tc_error_message(), "limit of 1048576 names"), "range: %d %s", rc,
          tc_error_message());
}

static void test_nul_bytes(void)
{
    static const char slurm[] = "SwitchName=s0 Nodes=n[0-1]\n\0SwitchName=s1 Nodes=m[0-1]\n";
    expect_refused(slurm, sizeof slurm - 1, TC_FORMAT_SLURM, TC_ERR_PARSE, "hostile:2: a NUL byte");
    static const char yaml[] = "name: \"s0\\0junk\"\nswitches:\n  - name: s0\n    machines: n[0-1]\n";
    expect_refused(yaml, sizeof yaml - 1, TC_FORMAT_YAML, TC_ERR_PARSE, "hostile:1: a NUL character");
}

static void test_rates(void)
{
    static const char *bad[] = {"1e308", "1e300Tbit", "0x10", "inf", "nan", "-5Mbit", "0", "1e-9", "100Qbit", "1e30"};
    double v;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tc_status rc = tc_parse_rate(bad[i], TC_BARE_RATE_UNIT, &v);
        CHECK(rc == TC_ERR_PARSE, "rate '%s' accepted as %g", bad[i], v);
    }
    CHECK(tc_parse_rate("100", TC_BARE_RATE_UNIT, &v) == TC_OK && v == 100e6, "bare 100 -> %g", v);
    CHECK(tc_parse_rate("1e3", TC_BARE_RATE_UNIT, &v) == TC_OK && v == 1e9, "1e3 -> %g", v);
    CHECK(tc_parse_rate("1000Tbit", TC_BARE_RATE_UNIT, &v) == TC_OK && v == 1e15, "1000Tbit -> %g", v);
    /* one decimal rounding: the same rate however it is written, and what the
     * writers print reads back exactly (a fuzzer's finding: 1.001Gbit) */
    double a, b;
    CHECK(tc_parse_rate("1.001Gbit", 0, &a) == TC_OK && tc_parse_rate("1001", TC_BARE_RATE_UNIT, &b) == TC_OK && a == b,
          "1.001Gbit %.17g vs 1001 %.17g", a, b);
    static const double rates[] = {1001e6, 115e6, 1e15 / 3, 12345.678e3, 1e3};
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
        char buf[32];
        tc_format_rate(rates[i], buf, sizeof buf);
        CHECK(tc_parse_rate(buf, 0, &v) == TC_OK && v == rates[i], "%.17g written %s read %.17g", rates[i], buf, v);
    }
    static const double times[] = {50e-6, 1.0 / 3, 123.456e-9};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        char buf[32];
        tc_format_time(times[i], buf, sizeof buf);
        CHECK(tc_parse_time(buf, 0, &v) == TC_OK && v == times[i], "%.17g written %s read %.17g", times[i], buf, v);
    }
    CHECK(tc_parse_time("1e9s", 0, &v) == TC_ERR_PARSE && strstr(tc_error_message(), "limit"), "1e9s");
    CHECK(tc_parse_time("0x1s", 0, &v) == TC_ERR_PARSE, "0x1s");
    const char *line = "SwitchName=s0 Nodes=n[0-1] LinkSpeed=1e308";
    expect_refused(line, strlen(line), TC_FORMAT_SLURM, TC_ERR_PARSE, "hostile:1: LinkSpeed: rate '1e308' is outside");
    line = "SwitchName=s0 Nodes=n[0-1] LinkSpeed=0x10";
    expect_refused(line, strlen(line), TC_FORMAT_SLURM, TC_ERR_PARSE, "hostile:1: LinkSpeed");
    line = "bandwidth: 1e300Tbit\nswitches:\n  - name: s0\n    machines: n[0-1]\n";
    expect_refused(line, strlen(line), TC_FORMAT_YAML, TC_ERR_PARSE, "hostile:1: bandwidth");
}

/* A topology written as YAML reads back equal, whatever its names. */
static void test_yaml_writer_quotes(void)
{
    static const char *lines[] = {"SwitchName=sw: Nodes=n[0-1]", "SwitchName=- Nodes=a,b", "SwitchName=:x Nodes=-1,+2",
                                  "SwitchName=true Nodes=null,yes"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        tc_topology *t, *back = NULL;
        tc_status rc = parse(lines[i], strlen(lines[i]), TC_FORMAT_SLURM, &t);
        CHECK(rc == TC_OK, "'%s': %s", lines[i], tc_error_message());
        if (rc) continue;
        /* a topology name that is no name: quotes, a backslash, a control character */
        CHECK(tc_topology_set_name(t, "a \"b\" \\c\x01\n") == TC_OK, "set name");
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        CHECK(tc_topology_write(t, TC_FORMAT_YAML, f) == TC_OK, "write");
        fclose(f);
        rc = parse(text, len, TC_FORMAT_YAML, &back);
        CHECK(rc == TC_OK && tc_topology_equal(t, back), "'%s' written as\n%s\nread back: %s", lines[i], text,
              rc ? tc_error_message() : "not equal");
        tc_topology_destroy(back);
        tc_topology_destroy(t);
        free(text);
    }
}

static void test_limits(void)
{
    static const struct { const char *spec, *says; } cases[] = {
        {"1000000", "limit of 65536 machines"},
        {"tree:1000000,1000000", "limit of 65536 machines"},
        {"tree:2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2", "limit of 65536 machines"},
        {"chain:1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
         "more than 64 numbers"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc_topology *t = NULL;
        tc_status rc = tc_topology_synthetic(cases[i].spec, &t);
        CHECK(rc != TC_OK && strstr(tc_error_message(), cases[i].says), "'%.40s': %d %s", cases[i].spec, rc,
              tc_error_message());
        tc_topology_destroy(t);
    }
    tc_topology *t = NULL;
    CHECK(tc_topology_synthetic("65536", &t) == TC_OK && tc_topology_num_machines(t) == 65536, "65536: %s",
          tc_error_message());
    tc_topology_destroy(t);
    /* a chain of switches deeper than the level limit, in a file */
    char buf[8192] = "";
    for (int i = 0; i < 70; i++) {
        char line[64];
        snprintf(line, sizeof line, "SwitchName=s%d Nodes=n%d%s", i, i, i < 69 ? "" : "\n");
        strcat(buf, line);
        if (i < 69) { snprintf(line, sizeof line, " Switches=s%d\n", i + 1); strcat(buf, line); }
    }
    expect_refused(buf, strlen(buf), TC_FORMAT_SLURM, TC_ERR_LIMIT, "the limit is 64 levels");
    /* YAML nested past the limit: refused at the line, before libyaml builds it */
    size_t deep = 200000;
    char *y = malloc(deep + 16);
    strcpy(y, "a: ");
    memset(y + 3, '[', deep);
    y[3 + deep] = '\0';
    expect_refused(y, strlen(y), TC_FORMAT_YAML, TC_ERR_LIMIT, "hostile:1: nesting deeper than the limit of 32");
    free(y);
    const char *alias = "switches:\n  - &x {name: s0, machines: n0}\n  - *x\n";
    expect_refused(alias, strlen(alias), TC_FORMAT_YAML, TC_ERR_PARSE, "hostile:3: aliases");
    CHECK(tc_limit("machines") == TC_MAX_MACHINES && tc_limit("bare_rate_unit") == 1e6 && tc_limit("nope") < 0,
          "tc_limit");
}

/* The largest topology the limits allow, every machine with settings of
 * its own, both ways through YAML: the readers and writers are linear or
 * O(n log n) (a machine's settings were once found by a linear search, which
 * made this file take hours; a fuzzer's finding). */
static void test_largest_yaml(void)
{
    size_t cap = 64u << 20, len = 0;
    char *y = malloc(cap);
    len += (size_t)snprintf(y + len, cap - len, "switches:\n  - {name: top, switches: \"s[0-255]\"}\n");
    for (int s = 0; s < 256; s++)
        len += (size_t)snprintf(y + len, cap - len, "  - {name: s%d, machines: \"n%d-[0-255]\"}\n", s, s);
    len += (size_t)snprintf(y + len, cap - len, "machines:\n");
    for (int s = 0; s < 256; s++)
        for (int m = 0; m < 256; m++)
            len += (size_t)snprintf(y + len, cap - len, "  n%d-%d: {bandwidth: %dMbit}\n", s, m, 100 + m % 7);
    tc_topology *t = NULL, *back = NULL;
    tc_status rc = tc_topology_parse(y, len, TC_FORMAT_YAML, "large.yaml", &t);
    CHECK(rc == TC_OK && tc_topology_num_machines(t) == 65536, "large: %s", tc_error_message());
    if (rc == TC_OK) {
        char *text = NULL;
        size_t tlen = 0;
        FILE *f = open_memstream(&text, &tlen);
        CHECK(tc_topology_write(t, TC_FORMAT_YAML, f) == TC_OK, "write large");
        fclose(f);
        rc = tc_topology_parse(text, tlen, TC_FORMAT_YAML, "large-written.yaml", &back);
        CHECK(rc == TC_OK && tc_topology_equal(t, back), "large read back: %s", tc_error_message());
        free(text);
    }
    tc_topology_destroy(t);
    tc_topology_destroy(back);
    free(y);
}

static void expect_schedule_refused(const char *text, size_t len, const char *says)
{
    tc_schedule *s = NULL;
    tc_status rc = tc_schedule_read_json(text, len, "s.json", NULL, &s);
    CHECK(rc != TC_OK && strstr(tc_error_message(), says), "'%.60s': %d '%s' (want '%s')", text, rc,
          tc_error_message(), says);
    tc_schedule_destroy(s);
}

static void test_schedule_reader(void)
{
    const char *ok = "{\"format\": \"topocoll-schedule/1\", \"algorithm\": \"x\", \"machines\": [\"a\", \"b\"],"
                     " \"phases\": [[[0, 1]], [[1, 0]], []]}";
    tc_schedule *s = NULL;
    tc_status rc = tc_schedule_read_json(ok, strlen(ok), "s.json", NULL, &s);
    /* a trailing empty phase is a phase: 3, not 2 */
    CHECK(rc == TC_OK && tc_schedule_num_steps(s) == 3 && tc_schedule_num_ops(s) == 2, "trailing empty: %d %s", rc,
          tc_error_message());
    tc_schedule_destroy(s);
    static const struct { const char *text, *says; } bad[] = {
        {"{\"format\": \"topocoll-schedule/1\", \"machines\": [\"a\", \"b\"], \"phases\": [[[false, true]]]}",
         "s.json:1:72: phase 0: expected a rank"},
        {"{\"format\": \"topocoll-schedule/1\", \"machines\": [\"a\", \"b\"], \"phases\": [[[0.0, 1]]]}", "expected a rank"},
        {"{\"format\": \"topocoll-schedule/1\", \"machines\": [\"a\", \"b\"], \"phases\": [[[0, 99999999999]]]}",
         "out of range"},
        {"{\"format\": \"topocoll-schedule/1\", \"machines\": [\"a\", \"b\"], \"phases\": [[[0, 2]]]}", "ranks 0..1"},
        {"{\"format\": \"topocoll-schedule/1\", \"machines\": [\"a\", \"b\"], \"phases\": [], \"phases\": []}",
         "given twice"},
        {"{\"format\": \"other\", \"machines\": [], \"phases\": []}", "not a schedule"},
        {"{\"format\": \"topocoll-schedule/1\", \"machines\": [\"a\\u0000\"], \"phases\": []}", "NUL"},
        {"{\"format\": \"topocoll-schedule/1\", \"machines\": [\"a\xff\"], \"phases\": []}", "not UTF-8"},
        {"{\"format\": \"topocoll-schedule/1\", \"machines\": [\"a\"], \"phases\": []} x", "after the document"},
        {"\xff\xfe{", "UTF-16"},
        {"{\"format\": \"topocoll-schedule/1\", \"machines\": [\"a\", \"b\"], \"phases\": [[[0, 1]]],"
         " \"syncs\": [{\"from\": 0, \"to\": 1, \"after\": [0, 1], \"before\": [1, 0]}]}",
         "message [1, 0] is not in the phases"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) expect_schedule_refused(bad[i].text, strlen(bad[i].text), bad[i].says);
    size_t deep = 100000;
    char *d = malloc(2 * deep + 64);
    strcpy(d, "{\"x\": ");
    memset(d + 6, '[', deep);
    memset(d + 6 + deep, ']', deep);
    strcpy(d + 6 + 2 * deep, "}");
    expect_schedule_refused(d, strlen(d), "nesting deeper than the limit of 32");
    free(d);
}

int main(void)
{
    test_hostlist_numbers();
    test_nul_bytes();
    test_rates();
    test_yaml_writer_quotes();
    test_limits();
    test_schedule_reader();
    test_largest_yaml();
    return CHECK_SUMMARY();
}
