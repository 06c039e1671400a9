/* The schedule JSON of docs/interfaces.md, written and read here only:
 *
 *   {"format": "topocoll-schedule/1", "algorithm": "faraj-yuan",
 *    "machines": ["n0", ...], "phases": [[[0, 3], [1, 4]], [[3, 0]]],
 *    "syncs": [{"from": 0, "to": 2, "after": [0, 3], "before": [2, 5]}]}
 *
 * The reader is strict JSON (RFC 8259) in UTF-8, with the limits of
 * topocoll.h (file size, nesting), and it reads the document's types as
 * they are: a rank is a whole number, never true or 1.0.  Every phase
 * counts, empty ones too (a schedule with an empty phase is not optimal).
 * Cost: O(bytes) time; 12 bytes a message and 24 a sync of memory. */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

#define FORMAT "topocoll-schedule/1"

/* ---- writer ---- */

/* A JSON string; bytes below 0x20 escaped (names are validated to a safe
 * alphabet, but an algorithm name read from a file may hold anything). */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* Hand-rolled integer output: fprintf("%d") costs ~10x more and 16.7 M pairs
 * are written for 4,096 machines. */
static void put_int(FILE *f, int32_t v)
{
    char buf[12];
    int n = 0;
    uint32_t u = v < 0 ? (uint32_t)(-(int64_t)v) : (uint32_t)v;
    do { buf[n++] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) buf[n++] = '-';
    while (n) putc_unlocked(buf[--n], f);
}

tc_status tc_schedule_write_json(const tc_schedule *s, const tc_topology *topo, FILE *f)
{
    if (topo && tc_topology_num_machines(topo) != s->num_ranks)
        TC_FAIL(TC_ERR_ARG, "schedule has %d ranks but the topology %d machines", s->num_ranks,
                tc_topology_num_machines(topo));
    for (int64_t i = 0; i < s->num_ops; i++)
        if (s->ops[i].first_block >= 0)
            TC_FAIL(TC_ERR_UNSUPPORTED, "schedule JSON holds direct messages only; '%s' forwards blocks",
                    s->algorithm);
        else if (s->ops[i].parts > 1)
            TC_FAIL(TC_ERR_UNSUPPORTED, "schedule JSON holds whole blocks only; '%s' cuts them into %d segments",
                    s->algorithm, s->ops[i].parts);
    fputs("{\n  \"format\": \"" FORMAT "\",\n  \"algorithm\": ", f);
    json_string(f, s->algorithm);
    fputs(",\n  \"machines\": [", f);
    for (int r = 0; r < s->num_ranks; r++) {
        if (r) fputs(", ", f);
        if (topo) json_string(f, tc_topology_node_name(topo, tc_topology_machine_node(topo, r)));
        else fprintf(f, "\"%d\"", r);
    }
    fputs("],\n  \"phases\": [", f);
    /* a rank's part: every phase of the whole, each with the rank's own
     * messages (the others a part holds are its syncs' other ends) */
    const int64_t phases = tc_schedule_num_phases(s);
    for (int64_t ph = 0, st = 0; ph < phases; ph++) {
        fputs(ph ? ",\n    [" : "\n    [", f);
        if (st < s->num_steps && tc_schedule_step_phase(s, (int)st) == ph) {
            int first = 1;
            for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) {
                if (s->part_rank >= 0 && s->ops[i].src != s->part_rank && s->ops[i].dst != s->part_rank) continue;
                if (!first) putc_unlocked(',', f);
                first = 0;
                putc_unlocked('[', f);
                put_int(f, s->ops[i].src);
                putc_unlocked(',', f);
                put_int(f, s->ops[i].dst);
                putc_unlocked(']', f);
            }
            st++;
        }
        putc_unlocked(']', f);
    }
    fputs(phases ? "\n  ]" : "]", f);
    if (s->num_syncs) {
        fputs(",\n  \"syncs\": [", f);
        for (int64_t i = 0; i < s->num_syncs; i++) {
            const tc_op *a = &s->ops[s->syncs[i].after], *b = &s->ops[s->syncs[i].before];
            fprintf(f, "%s\n    {\"from\": %d, \"to\": %d, \"after\": [%d, %d], \"before\": [%d, %d]}", i ? "," : "",
                    a->src, b->src, a->src, a->dst, b->src, b->dst);
        }
        fputs("\n  ]", f);
    }
    fputs("\n}\n", f);
    if (ferror(f)) TC_FAIL(TC_ERR_IO, "could not write the schedule");
    return TC_OK;
}

/* ---- reader ---- */

/* A whole number >= 0 of at most 9 digits (a rank); what names it in
 * messages (the caller checks it against the rank count). */
static tc_status read_rank(tc_json *r, int32_t *v, const char *what)
{
    tc_json_ws(r);
    const char *start = r->p;
    if (r->p < r->end && *r->p == '-') r->p++;
    const char *digits = r->p;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    size_t nd = (size_t)(r->p - digits);
    int fraction = r->p < r->end && (*r->p == '.' || *r->p == 'e' || *r->p == 'E');
    if (!nd || fraction || *start == '-' || (nd > 1 && *digits == '0')) {
        r->p = start;
        char b[32];
        if (nd || fraction) TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: expected a rank (a whole number >= 0)", what);
        TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: expected a rank (a whole number >= 0), found %s", what, tc_json_what(r, b, sizeof b));
    }
    if (nd > 9) { r->p = start; TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: rank %.*s is out of range", what, (int)(nd > 40 ? 40 : nd), digits); }
    long x = 0;
    for (const char *q = digits; q < r->p; q++) x = x * 10 + (*q - '0');
    *v = (int32_t)x;
    return TC_OK;
}

/* [src, dst] */
static tc_status read_pair(tc_json *r, int32_t *pair, const char *what)
{
    tc_status rc;
    char b[32];
    tc_json_ws(r);
    if (r->p >= r->end || *r->p != '[')
        TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: expected [src, dst], found %s", what, tc_json_what(r, b, sizeof b));
    r->p++;
    if ((rc = read_rank(r, &pair[0], what)) || (rc = tc_json_expect(r, ',')) || (rc = read_rank(r, &pair[1], what)))
        return rc;
    tc_json_ws(r);
    if (r->p >= r->end || *r->p != ']')
        TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: expected [src, dst] (two ranks), found %s", what, tc_json_what(r, b, sizeof b));
    r->p++;
    return TC_OK;
}

typedef struct ivec { int32_t *v; int64_t n, cap; } ivec;

static int ivec_push(ivec *a, int32_t x)
{
    if (a->n == a->cap) {
        int64_t cap = a->cap ? a->cap * 2 : 1024;
        int32_t *v = realloc(a->v, sizeof(int32_t) * (size_t)cap);
        if (!v) return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

typedef struct jdoc {
    char *format, *algorithm;
    char **machines;
    int num_machines, cap_machines;
    int have_machines, have_phases, have_syncs;
    int num_phases;
    ivec msgs;          /* (phase, src, dst) */
    ivec syncs;         /* (from, to, after src, after dst, before src, before dst) */
    ivec sync_pos;      /* byte offset of each sync, for messages */
} jdoc;

static void jdoc_free(jdoc *d)
{
    free(d->format);
    free(d->algorithm);
    for (int i = 0; i < d->num_machines; i++) free(d->machines[i]);
    free(d->machines);
    free(d->msgs.v);
    free(d->syncs.v);
    free(d->sync_pos.v);
}

static tc_status read_phases(tc_json *r, jdoc *d)
{
    tc_status rc;
    char what[64], expected[96];
    int empty;
    if ((rc = tc_json_list_open(r, "\"phases\" must be a list of phases", &empty)) || empty) return rc;
    do {
        if (d->num_phases == INT32_MAX - 1) TC_JSON_FAIL(r, TC_ERR_LIMIT, "%s", "too many phases");
        int p = d->num_phases++;
        snprintf(what, sizeof what, "phase %d", p);
        snprintf(expected, sizeof expected, "phase %d must be a list of [src, dst]", p);
        if ((rc = tc_json_list_open(r, expected, &empty))) return rc;
        if (empty) continue;
        do {
            int32_t pair[2];
            if ((rc = read_pair(r, pair, what))) return rc;
            if (ivec_push(&d->msgs, p) || ivec_push(&d->msgs, pair[0]) || ivec_push(&d->msgs, pair[1]))
                TC_FAIL(TC_ERR_NOMEM, "schedule: out of memory");
        } while (tc_json_take(r, ','));
        if ((rc = tc_json_expect(r, ']'))) return rc;
    } while (tc_json_take(r, ','));
    return tc_json_expect(r, ']');
}

static tc_status read_sync(tc_json *r, jdoc *d, int64_t i)
{
    tc_status rc;
    char b[32], what[64], *key = NULL;
    int32_t v[6];
    int seen = 0;
    static const char *const keys[] = {"from", "to", "after", "before"};
    snprintf(what, sizeof what, "sync %lld", (long long)i);
    if (ivec_push(&d->sync_pos, (int32_t)(r->p - r->text))) TC_FAIL(TC_ERR_NOMEM, "schedule: out of memory");
    tc_json_ws(r);
    if (r->p >= r->end || *r->p != '{')
        TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: expected {\"from\", \"to\", \"after\", \"before\"}, found %s", what, tc_json_what(r, b, sizeof b));
    r->p++;
    if (!tc_json_take(r, '}')) {
        do {
            if ((rc = tc_json_string(r, &key))) return rc;
            int k = 0;
            while (k < 4 && strcmp(key, keys[k])) k++;
            free(key);
            if ((rc = tc_json_expect(r, ':'))) return rc;
            if (k == 4) { if ((rc = tc_json_skip(r))) return rc; continue; }
            if (seen & 1 << k) TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: \"%s\" given twice", what, keys[k]);
            seen |= 1 << k;
            if (k < 2) rc = read_rank(r, &v[k], what);
            else rc = read_pair(r, &v[2 * k - 2], what);
            if (rc) return rc;
        } while (tc_json_take(r, ','));
        if ((rc = tc_json_expect(r, '}'))) return rc;
    }
    if (seen != 15) TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: needs \"from\", \"to\", \"after\" and \"before\"", what);
    for (int k = 0; k < 6; k++)
        if (ivec_push(&d->syncs, v[k])) TC_FAIL(TC_ERR_NOMEM, "schedule: out of memory");
    return TC_OK;
}

static tc_status read_syncs(tc_json *r, jdoc *d)
{
    tc_status rc;
    int empty;
    if ((rc = tc_json_list_open(r, "\"syncs\" must be a list of syncs", &empty)) || empty) return rc;
    int64_t i = 0;
    do {
        if ((rc = read_sync(r, d, i++))) return rc;
    } while (tc_json_take(r, ','));
    return tc_json_expect(r, ']');
}

static tc_status read_document(tc_json *r, jdoc *d)
{
    tc_status rc;
    char b[32], *key = NULL;
    if ((rc = tc_json_expect(r, '{'))) return rc;
    r->depth = 1;
    if (!tc_json_take(r, '}')) {
        do {
            const char *at = r->p;
            if ((rc = tc_json_string(r, &key))) return rc;
            if ((rc = tc_json_expect(r, ':'))) { free(key); return rc; }
            int *have = !strcmp(key, "machines") ? &d->have_machines : !strcmp(key, "phases") ? &d->have_phases
                      : !strcmp(key, "syncs") ? &d->have_syncs : NULL;
            char **str = !strcmp(key, "format") ? &d->format : !strcmp(key, "algorithm") ? &d->algorithm : NULL;
            if ((have && *have) || (str && *str)) {
                r->p = at;
                char k[64];
                snprintf(k, sizeof k, "%s", key);
                free(key);
                TC_JSON_FAIL(r, TC_ERR_PARSE, "\"%s\" given twice", k);
            }
            if (have) *have = 1;
            if (!strcmp(key, "machines")) rc = tc_json_machines(r, &d->machines, &d->num_machines, &d->cap_machines);
            else if (!strcmp(key, "phases")) rc = read_phases(r, d);
            else if (!strcmp(key, "syncs")) rc = read_syncs(r, d);
            else if (str) {
                tc_json_ws(r);
                if (r->p < r->end && *r->p != '"') {
                    char k[64];
                    snprintf(k, sizeof k, "%s", key);
                    free(key);
                    TC_JSON_FAIL(r, TC_ERR_PARSE, "\"%s\" must be a string, found %s", k, tc_json_what(r, b, sizeof b));
                }
                rc = tc_json_string(r, str);
            } else
                rc = tc_json_skip(r);   /* keys added later are for other readers */
            free(key);
            key = NULL;
            if (rc) return rc;
        } while (tc_json_take(r, ','));
        if ((rc = tc_json_expect(r, '}'))) return rc;
    }
    tc_json_ws(r);
    if (r->p < r->end) TC_JSON_FAIL(r, TC_ERR_PARSE, "not JSON: %s after the document", tc_json_what(r, b, sizeof b));
    return TC_OK;
}

/* Messages sorted by (src, dst), to find the op a sync names. */
typedef struct msg_key { int64_t key; int64_t op; } msg_key;

static int cmp_key(const void *a, const void *b)
{
    const msg_key *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key ? 1 : 0;
}

/* The op of message (src, dst): -1 none, -2 more than one. */
static int64_t find_message(const msg_key *keys, int64_t n, int64_t key)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (keys[mid].key < key) lo = mid + 1;
        else hi = mid;
    }
    if (lo == n || keys[lo].key != key) return -1;
    return lo + 1 < n && keys[lo + 1].key == key ? -2 : keys[lo].op;
}

static tc_status attach_syncs(tc_json *r, jdoc *d, tc_schedule *s)
{
    int64_t n = d->syncs.n / 6, p = s->num_ranks;
    if (!n) return TC_OK;
    tc_sync *syncs = tc_xmalloc(sizeof(tc_sync) * (size_t)n);
    msg_key *keys = tc_xmalloc(sizeof(msg_key) * (size_t)(s->num_ops ? s->num_ops : 1));
    tc_status rc = TC_OK;
    if (!syncs || !keys) TC_FAIL_GOTO(rc, done, TC_ERR_NOMEM, "schedule: out of memory");
    for (int64_t i = 0; i < s->num_ops; i++) keys[i] = (msg_key){s->ops[i].src * p + s->ops[i].dst, i};
    qsort(keys, (size_t)s->num_ops, sizeof *keys, cmp_key);
    for (int64_t i = 0; i < n; i++) {
        const int32_t *v = &d->syncs.v[6 * i];
        char w[600];
        r->p = r->text + d->sync_pos.v[i];
        tc_json_where(r, w, sizeof w);
        for (int k = 0; k < 6; k++)
            if (v[k] >= p)
                TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "%s: sync %lld: rank %d is out of range (ranks 0..%lld)", w,
                             (long long)i, v[k], (long long)p - 1);
        if (v[0] != v[2] || v[1] != v[4])
            TC_FAIL_GOTO(rc, done, TC_ERR_PARSE,
                         "%s: sync %lld: \"from\" must be the sender of \"after\" and \"to\" the sender of \"before\"", w,
                         (long long)i);
        int64_t a = find_message(keys, s->num_ops, v[2] * p + v[3]), b = find_message(keys, s->num_ops, v[4] * p + v[5]);
        if (a < 0 || b < 0)
            TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "%s: sync %lld: message [%d, %d] is %s in the phases", w, (long long)i,
                         a < 0 ? v[2] : v[4], a < 0 ? v[3] : v[5], (a < 0 ? a : b) == -1 ? "not" : "more than once");
        syncs[i] = (tc_sync){a, b};
    }
    rc = tc_schedule_set_syncs(s, syncs, n);
done:
    free(keys);
    free(syncs);
    return rc;
}

tc_status tc_schedule_read_json(const char *text, size_t len, const char *filename, const tc_topology *topo,
                                tc_schedule **out)
{
    if (!text || !out) TC_FAIL(TC_ERR_ARG, "schedule: missing argument");
    tc_json r = {text, text + len, text, filename ? filename : "<string>", 0};
    jdoc d = {0};
    tc_schedule_builder *b = NULL;
    tc_schedule *s = NULL;
    tc_status rc = TC_OK;
    if (len > (size_t)TC_MAX_FILE_BYTES)
        TC_FAIL(TC_ERR_LIMIT, "%s: %zu bytes is more than the limit of %ld bytes", r.file, len, (long)TC_MAX_FILE_BYTES);
    if (len >= 2 && ((text[0] == '\xff' && text[1] == '\xfe') || (text[0] == '\xfe' && text[1] == '\xff')))
        TC_FAIL(TC_ERR_PARSE, "%s: the file is UTF-16; a schedule is JSON in UTF-8", r.file);
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) r.p += 3;   /* a UTF-8 byte-order mark */
    TC_TRY(rc, done, read_document(&r, &d));
    if (!d.format || strcmp(d.format, FORMAT))
        TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "%s: not a schedule (expected \"format\": \"" FORMAT "\")", r.file);
    if (!d.have_machines) TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "%s: no \"machines\" list", r.file);
    if (!d.have_phases) TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "%s: no \"phases\" list", r.file);
    if (topo) {
        int m = tc_topology_num_machines(topo);
        if (d.num_machines != m)
            TC_FAIL_GOTO(rc, done, TC_ERR_ARG, "%s: the schedule has %d machines, the topology %d", r.file, d.num_machines, m);
        for (int i = 0; i < m; i++) {
            const char *name = tc_topology_node_name(topo, tc_topology_machine_node(topo, i));
            if (strcmp(d.machines[i], name))
                TC_FAIL_GOTO(rc, done, TC_ERR_ARG, "%s: rank %d is '%.64s' in the schedule but '%s' in the topology", r.file,
                             i, d.machines[i], name);
        }
    }
    int n = d.num_machines;
    for (int64_t i = 0; i < d.msgs.n; i += 3)
        if (d.msgs.v[i + 1] >= n || d.msgs.v[i + 2] >= n)
            TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "%s: phase %d: [%d, %d] is not [src, dst] with ranks 0..%d", r.file,
                         d.msgs.v[i], d.msgs.v[i + 1], d.msgs.v[i + 2], n - 1);
    TC_TRY(rc, done, tc_builder_create(d.algorithm ? d.algorithm : "", n, d.msgs.n / 3, &b));
    for (int64_t i = 0; i < d.msgs.n; i += 3) TC_TRY(rc, done, tc_builder_add(b, d.msgs.v[i], d.msgs.v[i + 1], d.msgs.v[i + 2]));
    tc_builder_set_min_steps(b, d.num_phases);
    TC_TRY(rc, done, tc_builder_finish(b, &s));
    b = NULL;
    TC_TRY(rc, done, attach_syncs(&r, &d, s));
    *out = s;
    s = NULL;
done:
    tc_builder_destroy(b);
    tc_schedule_destroy(s);
    jdoc_free(&d);
    return rc;
}

tc_status tc_schedule_load_json(const char *path, const tc_topology *topo, tc_schedule **out)
{
    char *text = NULL;
    size_t len = 0;
    tc_status rc = tc_read_file(path, "schedule", &text, &len);
    if (rc == TC_OK) rc = tc_schedule_read_json(text, len, path, topo, out);
    free(text);
    return rc;
}
