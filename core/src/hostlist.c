/* Slurm hostlist expressions: "n[0-7,9]", "tux[01-16]", "r[1-2]n[1-3]". */
#include "tc_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct strbuf { char *p; size_t len, cap; } strbuf;

static int sb_put(strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (b->len + n + 1 > cap) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

/* Digits of a bracket number after its leading zeros: 18 keep every value
 * and every range count inside a long. */
#define HOSTLIST_MAX_DIGITS 18

/* A bracket number at p (digits up to end): its value and width, or -1 when
 * it is too large. */
static int bracket_number(const char *p, const char *end, long *value, int *width)
{
    const char *q = p;
    while (q < end && *q == '0') q++;
    if (end - q > HOSTLIST_MAX_DIGITS) return -1;
    long v = 0;
    for (; q < end; q++) v = v * 10 + (*q - '0');
    *value = v;
    *width = (int)(end - p);
    return 0;
}

/* Expand one comma-free term (brackets may hold commas) recursively: the
 * first bracket group multiplies the rest. */
static tc_status expand_term(const char *prefix, size_t plen, const char *rest,
                             const char *expr, strbuf *out, size_t *count)
{
    const char *lb = strchr(rest, '[');
    if (!lb) {
        size_t len = plen + strlen(rest);
        if (len == 0) TC_FAIL(TC_ERR_PARSE, "hostlist '%s': empty name", expr);
        if (strchr(rest, ']')) TC_FAIL(TC_ERR_PARSE, "hostlist '%s': ']' without '['", expr);
        if (len > TC_MAX_NAME_LEN)
            TC_FAIL(TC_ERR_LIMIT, "hostlist '%.64s...': a name of %zu bytes is longer than the limit of %d",
                    expr, len, TC_MAX_NAME_LEN);
        if (++*count > TC_MAX_HOSTLIST_NAMES)
            TC_FAIL(TC_ERR_LIMIT, "hostlist '%.64s': more than the limit of %d names", expr, TC_MAX_HOSTLIST_NAMES);
        if (sb_put(out, prefix, plen) || sb_put(out, rest, strlen(rest) + 1))
            TC_FAIL(TC_ERR_NOMEM, "hostlist: out of memory");
        return TC_OK;
    }
    const char *rb = strchr(lb, ']');
    if (!rb) TC_FAIL(TC_ERR_PARSE, "hostlist '%s': '[' without ']'", expr);
    size_t fixed = (size_t)(lb - rest);
    if (plen + fixed > TC_MAX_NAME_LEN)
        TC_FAIL(TC_ERR_LIMIT, "hostlist '%.64s...': names longer than the limit of %d bytes", expr, TC_MAX_NAME_LEN);
    /* room for the prefix and the widest number a name may hold */
    char *head = malloc(plen + fixed + TC_MAX_NAME_LEN + 2);
    if (!head) TC_FAIL(TC_ERR_NOMEM, "hostlist: out of memory");
    memcpy(head, prefix, plen);
    memcpy(head + plen, rest, fixed);
    tc_status rc = TC_OK;
    const char *p = lb + 1;
    if (p == rb) TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "hostlist '%s': empty brackets", expr);
    while (p < rb) {
        const char *q = p;
        while (q < rb && isdigit((unsigned char)*q)) q++;
        if (q == p) TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "hostlist '%s': expected a number in brackets at '%.*s'",
                                 expr, (int)(rb - p), p);
        int width, width_hi = 0;
        long lo, hi;
        if (bracket_number(p, q, &lo, &width))
            TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "hostlist '%.64s': number '%.*s' has more than %d digits", expr,
                         (int)(q - p), p, HOSTLIST_MAX_DIGITS);
        hi = lo;
        if (*q == '-') {
            const char *r = q + 1, *s = r;
            while (s < rb && isdigit((unsigned char)*s)) s++;
            if (s == r) TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "hostlist '%s': range without an end", expr);
            if (bracket_number(r, s, &hi, &width_hi))
                TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "hostlist '%.64s': number '%.*s' has more than %d digits", expr,
                             (int)(s - r), r, HOSTLIST_MAX_DIGITS);
            (void)width_hi;   /* Slurm pads every name to the range start's width */
            q = s;
        }
        if (hi < lo) TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "hostlist '%s': range %ld-%ld runs backwards", expr, lo, hi);
        if (hi - lo >= TC_MAX_HOSTLIST_NAMES)
            TC_FAIL_GOTO(rc, done, TC_ERR_LIMIT, "hostlist '%.64s': range %ld-%ld holds more than the limit of %d names",
                         expr, lo, hi, TC_MAX_HOSTLIST_NAMES);
        if (q < rb && *q != ',')
            TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "hostlist '%s': unexpected '%c' in brackets", expr, *q);
        if (plen + fixed + (size_t)width > TC_MAX_NAME_LEN)
            TC_FAIL_GOTO(rc, done, TC_ERR_LIMIT, "hostlist '%.64s...': names longer than the limit of %d bytes", expr,
                         TC_MAX_NAME_LEN);
        for (long v = lo; v <= hi; v++) {
            int n = snprintf(head + plen + fixed, TC_MAX_NAME_LEN + 2, "%0*ld", width, v);
            if (n < 0 || plen + fixed + (size_t)n > TC_MAX_NAME_LEN)
                TC_FAIL_GOTO(rc, done, TC_ERR_LIMIT, "hostlist '%.64s...': names longer than the limit of %d bytes",
                             expr, TC_MAX_NAME_LEN);
            TC_TRY(rc, done, expand_term(head, plen + fixed + (size_t)n, rb + 1, expr, out, count));
        }
        p = q < rb ? q + 1 : q;
    }
done:
    free(head);
    return rc;
}

tc_status tc_hostlist_expand(const char *expr, char **names, size_t *count)
{
    if (!expr || !names || !count) TC_FAIL(TC_ERR_ARG, "hostlist: missing argument");
    strbuf out = {0};
    size_t n = 0;
    tc_status rc = TC_OK;
    char *copy = tc_strdup(expr);
    if (!copy) TC_FAIL(TC_ERR_NOMEM, "hostlist: out of memory");
    /* split at commas outside brackets */
    char *start = copy;
    int depth = 0;
    for (char *c = copy;; c++) {
        if (*c == '[') depth++;
        else if (*c == ']') depth--;
        if (depth < 0) TC_FAIL_GOTO(rc, fail, TC_ERR_PARSE, "hostlist '%s': ']' without '['", expr);
        if ((*c == ',' && depth == 0) || *c == '\0') {
            char end = *c;
            *c = '\0';
            while (*start == ' ') start++;
            if (*start == '\0')
                TC_FAIL_GOTO(rc, fail, TC_ERR_PARSE, "hostlist '%s': empty name", expr);
            TC_TRY(rc, fail, expand_term("", 0, start, expr, &out, &n));
            if (end == '\0') break;
            start = c + 1;
        }
    }
    if (depth != 0) TC_FAIL_GOTO(rc, fail, TC_ERR_PARSE, "hostlist '%s': '[' without ']'", expr);
    free(copy);
    *names = out.p;
    *count = n;
    return TC_OK;
fail:
    free(copy);
    free(out.p);
    return rc;
}

/* Split a name into prefix, trailing number (with its width) and nothing after:
 * only a trailing number is folded, which covers n0, tux01, node-12. */
static int split_name(const char *s, size_t *plen, long *num, int *width)
{
    size_t n = strlen(s), i = n;
    while (i > 0 && isdigit((unsigned char)s[i - 1])) i--;
    if (i == n || n - i > 9) return 0;
    *plen = i;
    *width = (int)(n - i);
    *num = strtol(s + i, NULL, 10);
    return 1;
}

static int is_padded(const char *s, size_t plen, int width) { return width > 1 && s[plen] == '0'; }

tc_status tc_hostlist_compress(const char *const *names, size_t count, char **expr)
{
    strbuf out = {0};
    size_t i = 0;
    while (i < count) {
        size_t plen;
        long num;
        int width;
        if (out.len && sb_put(&out, ",", 1)) goto nomem;
        if (!split_name(names[i], &plen, &num, &width)) {
            if (sb_put(&out, names[i], strlen(names[i]))) goto nomem;
            i++;
            continue;
        }
        /* Group the following names with the same prefix, as long as the group
         * stays either all unpadded or all of one width, so that expanding
         * the expression gives back exactly these names. */
        int padded = is_padded(names[i], plen, width), same_width = 1;
        size_t j = i + 1;
        for (; j < count; j++) {
            size_t pl; long nm; int w;
            if (!split_name(names[j], &pl, &nm, &w) || pl != plen || strncmp(names[i], names[j], plen)) break;
            int p2 = padded || is_padded(names[j], pl, w), sw = same_width && w == width;
            if (p2 && !sw) break;
            padded = p2;
            same_width = sw;
        }
        if (j == i + 1) {
            if (sb_put(&out, names[i], strlen(names[i]))) goto nomem;
            i++;
            continue;
        }
        if (sb_put(&out, names[i], plen) || sb_put(&out, "[", 1)) goto nomem;
        size_t k = i;
        while (k < j) {
            size_t pl; long lo; int w;
            split_name(names[k], &pl, &lo, &w);
            long hi = lo;
            size_t m = k + 1;
            while (m < j) {
                long nm; int w2;
                split_name(names[m], &pl, &nm, &w2);
                if (nm != hi + 1) break;
                hi = nm;
                m++;
            }
            char num_buf[64];
            int n = hi > lo ? snprintf(num_buf, sizeof num_buf, "%0*ld-%0*ld", padded ? w : 1, lo, padded ? w : 1, hi)
                            : snprintf(num_buf, sizeof num_buf, "%0*ld", padded ? w : 1, lo);
            if ((k > i && sb_put(&out, ",", 1)) || sb_put(&out, num_buf, (size_t)n)) goto nomem;
            k = m;
        }
        if (sb_put(&out, "]", 1)) goto nomem;
        i = j;
    }
    if (!out.p && sb_put(&out, "", 0)) goto nomem;
    *expr = out.p;
    return TC_OK;
nomem:
    free(out.p);
    TC_FAIL(TC_ERR_NOMEM, "hostlist: out of memory");
}
