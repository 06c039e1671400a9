/* The tuning file of docs/interfaces.md, read here only (`topocoll tune`
 * writes it, the PMPI library's `auto` reads it through TOPOCOLL_TUNING):
 *
 *   {"format": "topocoll-tuning/1", "topology": "chain:4,4,4",
 *    "machines": ["n0", ...],
 *    "rules": [{"ranks": 12, "min_block": 0, "max_block": 4095, "algorithm": "native"},
 *              {"ranks": 12, "min_block": 4096, "algorithm": "faraj-yuan"}]}
 *
 * Strict: unknown keys in a rule, unknown algorithms, rules that overlap or
 * leave a block size of a process count uncovered are refused, each with the
 * file and line.  Cost: O(bytes + rules log rules). */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

#define FORMAT "topocoll-tuning/1"
#define MAX_RULES TC_MAX_TUNING_RULES

struct tc_tuning {
    char *file, *format, *topology;
    char **machines;
    int num_machines, cap_machines;
    tc_tuning_rule *rules;
    int num_rules, cap_rules;
};

void tc_tuning_destroy(tc_tuning *t)
{
    if (!t) return;
    free(t->file);
    free(t->format);
    free(t->topology);
    for (int i = 0; i < t->num_machines; i++) free(t->machines[i]);
    free(t->machines);
    free(t->rules);
    free(t);
}

static const char *const rule_keys[] = {"ranks", "min_block", "max_block", "algorithm", "segment_size", "fanout"};
enum { K_RANKS, K_MIN, K_MAX, K_ALGORITHM, K_SEGMENT, K_FANOUT, NUM_KEYS };

static tc_status read_rule(tc_json *r, tc_tuning *t)
{
    tc_status rc;
    char b[32], what[64], *key = NULL, *alg = NULL;
    if (t->num_rules >= MAX_RULES) TC_JSON_FAIL(r, TC_ERR_LIMIT, "more than the limit of %d rules", MAX_RULES);
    if (t->num_rules == t->cap_rules) {
        int cap = t->cap_rules ? t->cap_rules * 2 : 16;
        tc_tuning_rule *v = realloc(t->rules, sizeof *v * (size_t)cap);
        if (!v) TC_FAIL(TC_ERR_NOMEM, "tuning: out of memory");
        t->rules = v;
        t->cap_rules = cap;
    }
    tc_json_ws(r);
    tc_tuning_rule *u = &t->rules[t->num_rules];
    *u = (tc_tuning_rule){0, 0, -1, TC_NATIVE, 0, 0, tc_json_line(r, r->p)};
    snprintf(what, sizeof what, "rule %d", t->num_rules);
    if (r->p >= r->end || *r->p != '{')
        TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: expected {\"ranks\", \"algorithm\", ...}, found %s", what,
                     tc_json_what(r, b, sizeof b));
    r->p++;
    int seen = 0;
    if (!tc_json_take(r, '}')) {
        do {
            const char *at = (tc_json_ws(r), r->p);
            if ((rc = tc_json_string(r, &key))) return rc;
            int k = 0;
            while (k < NUM_KEYS && strcmp(key, rule_keys[k])) k++;
            if (k == NUM_KEYS) {
                r->p = at;
                char name[64];
                snprintf(name, sizeof name, "%s", key);
                free(key);
                TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: unknown key \"%s\" (valid: ranks, min_block, max_block, algorithm, "
                                              "segment_size, fanout)", what, name);
            }
            free(key);
            key = NULL;
            if (seen & 1 << k) { r->p = at; TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: \"%s\" given twice", what, rule_keys[k]); }
            seen |= 1 << k;
            if ((rc = tc_json_expect(r, ':'))) return rc;
            long long v = 0;
            char field[96];
            snprintf(field, sizeof field, "%s: \"%s\"", what, rule_keys[k]);
            switch (k) {
            case K_RANKS: rc = tc_json_integer(r, &v, 1, TC_MAX_MACHINES, field); u->ranks = (int)v; break;
            case K_MIN: rc = tc_json_integer(r, &u->min_block, 0, (long long)TC_MAX_SIZE, field); break;
            case K_MAX: rc = tc_json_integer(r, &u->max_block, 0, (long long)TC_MAX_SIZE, field); break;
            case K_SEGMENT: rc = tc_json_integer(r, &u->segment_size, 1, (long long)TC_MAX_SIZE, field); break;
            case K_FANOUT: rc = tc_json_integer(r, &v, 1, TC_MAX_MACHINES, field); u->fanout = (int)v; break;
            default: {
                const char *vat = (tc_json_ws(r), r->p);
                if ((rc = tc_json_string(r, &alg))) return rc;
                u->algorithm = !strcmp(alg, "native") ? TC_NATIVE : tc_algorithm_find(alg);
                if (u->algorithm == -1 && strcmp(alg, "native")) {
                    char names[1024], name[64];
                    tc_join_names(names, sizeof names, tc_algorithm_count(), tc_algorithm_name);
                    snprintf(name, sizeof name, "%s", alg);
                    free(alg);
                    r->p = vat;
                    TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: unknown algorithm '%s'; valid: %s, native", what, name, names);
                }
                free(alg);
                alg = NULL;
            }
            }
            if (rc) return rc;
        } while (tc_json_take(r, ','));
        if ((rc = tc_json_expect(r, '}'))) return rc;
    }
    if (!(seen & 1 << K_RANKS) || !(seen & 1 << K_ALGORITHM))
        TC_JSON_FAIL(r, TC_ERR_PARSE, "%s (line %d): needs \"ranks\" and \"algorithm\"", what, u->line);
    if (u->max_block >= 0 && u->max_block < u->min_block)
        TC_JSON_FAIL(r, TC_ERR_PARSE, "%s (line %d): max_block %lld is below min_block %lld", what, u->line,
                     u->max_block, u->min_block);
    t->num_rules++;
    return TC_OK;
}

static tc_status read_rules(tc_json *r, tc_tuning *t)
{
    tc_status rc;
    int empty;
    if ((rc = tc_json_list_open(r, "\"rules\" must be a list of rules", &empty)) || empty) return rc;
    do {
        if ((rc = read_rule(r, t))) return rc;
    } while (tc_json_take(r, ','));
    return tc_json_expect(r, ']');
}

static tc_status read_document(tc_json *r, tc_tuning *t)
{
    tc_status rc;
    char b[32], *key = NULL;
    int have_machines = 0, have_rules = 0;
    if ((rc = tc_json_expect(r, '{'))) return rc;
    r->depth = 1;
    if (!tc_json_take(r, '}')) {
        do {
            const char *at = (tc_json_ws(r), r->p);
            if ((rc = tc_json_string(r, &key))) return rc;
            if ((rc = tc_json_expect(r, ':'))) { free(key); return rc; }
            int *have = !strcmp(key, "machines") ? &have_machines : !strcmp(key, "rules") ? &have_rules : NULL;
            char **str = !strcmp(key, "format") ? &t->format : !strcmp(key, "topology") ? &t->topology : NULL;
            char k[64];
            snprintf(k, sizeof k, "%s", key);
            free(key);
            if ((have && *have) || (str && *str)) { r->p = at; TC_JSON_FAIL(r, TC_ERR_PARSE, "\"%s\" given twice", k); }
            if (have) *have = 1;
            if (!strcmp(k, "machines")) rc = tc_json_machines(r, &t->machines, &t->num_machines, &t->cap_machines);
            else if (!strcmp(k, "rules")) rc = read_rules(r, t);
            else if (str) {
                tc_json_ws(r);
                if (r->p < r->end && *r->p != '"')
                    TC_JSON_FAIL(r, TC_ERR_PARSE, "\"%s\" must be a string, found %s", k, tc_json_what(r, b, sizeof b));
                rc = tc_json_string(r, str);
            } else
                rc = tc_json_skip(r);   /* keys for people (measurements, dates) */
            if (rc) return rc;
        } while (tc_json_take(r, ','));
        if ((rc = tc_json_expect(r, '}'))) return rc;
    }
    tc_json_ws(r);
    if (r->p < r->end) TC_JSON_FAIL(r, TC_ERR_PARSE, "not JSON: %s after the document", tc_json_what(r, b, sizeof b));
    if (!t->format || strcmp(t->format, FORMAT))
        TC_FAIL(TC_ERR_PARSE, "%s: not a tuning file: \"format\" must be \"" FORMAT "\"", r->file);
    if (!have_rules || !t->num_rules) TC_FAIL(TC_ERR_PARSE, "%s: no \"rules\"", r->file);
    if (!have_machines || !t->num_machines) TC_FAIL(TC_ERR_PARSE, "%s: no \"machines\" (the topology it was tuned on)", r->file);
    return TC_OK;
}

static int cmp_rule(const void *a, const void *b)
{
    const tc_tuning_rule *x = a, *y = b;
    if (x->ranks != y->ranks) return x->ranks < y->ranks ? -1 : 1;
    return x->min_block < y->min_block ? -1 : x->min_block > y->min_block;
}

/* Each process count's rules tile the block sizes: from 0, no overlap, no
 * gap, the last one open-ended. */
static tc_status check_cover(const tc_tuning *t)
{
    for (int i = 0; i < t->num_rules; i++) {
        const tc_tuning_rule *u = &t->rules[i], *prev = i && t->rules[i - 1].ranks == u->ranks ? &t->rules[i - 1] : NULL;
        const tc_tuning_rule *next = i + 1 < t->num_rules && t->rules[i + 1].ranks == u->ranks ? &t->rules[i + 1] : NULL;
        if (!prev && u->min_block != 0)
            TC_FAIL(TC_ERR_PARSE, "%s:%d: %d ranks: no rule covers blocks below %lld bytes", t->file, u->line, u->ranks,
                    u->min_block);
        if (prev && (prev->max_block < 0 || prev->max_block >= u->min_block))
            TC_FAIL(TC_ERR_PARSE, "%s:%d: %d ranks: this rule overlaps the rule at line %d", t->file, u->line,
                    u->ranks, prev->line);
        if (prev && prev->max_block + 1 < u->min_block)
            TC_FAIL(TC_ERR_PARSE, "%s:%d: %d ranks: no rule covers blocks of %lld to %lld bytes", t->file, u->line,
                    u->ranks, prev->max_block + 1, u->min_block - 1);
        if (!next && u->max_block >= 0)
            TC_FAIL(TC_ERR_PARSE, "%s:%d: %d ranks: no rule covers blocks above %lld bytes", t->file, u->line,
                    u->ranks, u->max_block);
    }
    return TC_OK;
}

tc_status tc_tuning_read(const char *text, size_t len, const char *filename, tc_tuning **out)
{
    *out = NULL;
    if (len > (size_t)TC_MAX_FILE_BYTES)
        TC_FAIL(TC_ERR_LIMIT, "%s: larger than the limit of %lld bytes", filename, (long long)TC_MAX_FILE_BYTES);
    tc_tuning *t = tc_xcalloc(1, sizeof *t);
    if (!t || !(t->file = tc_strdup(filename ? filename : "<tuning>"))) {
        tc_tuning_destroy(t);
        TC_FAIL(TC_ERR_NOMEM, "tuning: out of memory");
    }
    tc_json r = {text, text + len, text, t->file, 0};
    tc_status rc = read_document(&r, t);
    if (rc == TC_OK) {
        qsort(t->rules, (size_t)t->num_rules, sizeof *t->rules, cmp_rule);
        rc = check_cover(t);
    }
    if (rc != TC_OK) { tc_tuning_destroy(t); return rc; }
    *out = t;
    return TC_OK;
}

tc_status tc_tuning_load(const char *path, tc_tuning **out)
{
    char *text;
    size_t len;
    *out = NULL;
    tc_status rc = tc_read_file(path, "tuning", &text, &len);
    if (rc) return rc;
    rc = tc_tuning_read(text, len, path, out);
    free(text);
    return rc;
}

const char *tc_tuning_file(const tc_tuning *t) { return t->file; }
const char *tc_tuning_topology(const tc_tuning *t) { return t->topology ? t->topology : ""; }
int tc_tuning_num_machines(const tc_tuning *t) { return t->num_machines; }
const char *tc_tuning_machine(const tc_tuning *t, int i) { return i >= 0 && i < t->num_machines ? t->machines[i] : NULL; }
int tc_tuning_num_rules(const tc_tuning *t) { return t->num_rules; }
const tc_tuning_rule *tc_tuning_rule_at(const tc_tuning *t, int i) { return i >= 0 && i < t->num_rules ? &t->rules[i] : NULL; }

tc_status tc_tuning_select(const tc_tuning *t, int ranks, long long block, const tc_tuning_rule **rule)
{
    *rule = NULL;
    for (int i = 0; i < t->num_rules; i++) {
        const tc_tuning_rule *u = &t->rules[i];
        if (u->ranks == ranks && block >= u->min_block && (u->max_block < 0 || block <= u->max_block)) {
            *rule = u;
            return TC_OK;
        }
    }
    char counts[256] = "";
    size_t used = 0;
    for (int i = 0; i < t->num_rules && used < sizeof counts - 16; i++)
        if (!i || t->rules[i].ranks != t->rules[i - 1].ranks)
            used += (size_t)snprintf(counts + used, sizeof counts - used, "%s%d", used ? ", " : "", t->rules[i].ranks);
    TC_FAIL(TC_ERR_ARG, "%s was tuned for communicators of %s ranks, not %d (run 'topocoll tune' for this job's size)",
            t->file, counts, ranks);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

tc_status tc_tuning_check_topology(const tc_tuning *t, const tc_topology *topo)
{
    int n = tc_topology_num_machines(topo);
    char **sorted = tc_xmalloc(sizeof(char *) * ((size_t)t->num_machines + 1));
    if (!sorted) TC_FAIL(TC_ERR_NOMEM, "tuning: out of memory");
    memcpy(sorted, t->machines, sizeof(char *) * (size_t)t->num_machines);
    qsort(sorted, (size_t)t->num_machines, sizeof(char *), cmp_str);
    const char *missing = NULL;
    for (int r = 0; r < n && !missing; r++) {
        const char *name = tc_topology_node_name(topo, tc_topology_machine_node(topo, r));
        if (!bsearch(&name, sorted, (size_t)t->num_machines, sizeof(char *), cmp_str)) missing = name;
    }
    free(sorted);
    if (missing)
        TC_FAIL(TC_ERR_ARG, "%s was tuned on topology '%s', which has no machine '%s' of topology '%s'", t->file,
                tc_tuning_topology(t), missing, tc_topology_name(topo));
    if (n != t->num_machines)
        TC_FAIL(TC_ERR_ARG, "%s was tuned on topology '%s' of %d machines, not on '%s' of %d", t->file,
                tc_tuning_topology(t), t->num_machines, tc_topology_name(topo), n);
    return TC_OK;
}
