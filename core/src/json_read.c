/* The strict JSON reader (RFC 8259, UTF-8) the file readers share: the
 * schedule (schedule_json.c) and the tuning file (tuning.c).  Errors name
 * file:line:column; nesting is bounded by TC_MAX_NESTING. */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

/* "file:line:column" of the reader's position. */
const char *tc_json_where(const tc_json *r, char *buf, size_t len)
{
    int line = 1, col = 1;
    for (const char *c = r->text; c < r->p && c < r->end; c++) {
        if (*c == '\n') { line++; col = 1; }
        else col++;
    }
    snprintf(buf, len, "%s:%d:%d", r->file, line, col);
    return buf;
}


void tc_json_ws(tc_json *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

/* What stands at the reader's position, for messages. */
const char *tc_json_what(const tc_json *r, char *buf, size_t len)
{
    if (r->p >= r->end) return "the end of the file";
    unsigned char c = (unsigned char)*r->p;
    if (c >= 0x20 && c < 0x7f) snprintf(buf, len, "'%c'", c);
    else snprintf(buf, len, "byte 0x%02x", c);
    return buf;
}

tc_status tc_json_expect(tc_json *r, char c)
{
    tc_json_ws(r);
    if (r->p < r->end && *r->p == c) { r->p++; return TC_OK; }
    char b[32];
    TC_JSON_FAIL(r, TC_ERR_PARSE, "not JSON: expected '%c', found %s", c, tc_json_what(r, b, sizeof b));
}

/* Does the next token open c (after white space)?  Consumes it if so. */
int tc_json_take(tc_json *r, char c)
{
    tc_json_ws(r);
    if (r->p < r->end && *r->p == c) { r->p++; return 1; }
    return 0;
}

tc_status tc_json_nest(tc_json *r)
{
    if (++r->depth > TC_MAX_NESTING) TC_JSON_FAIL(r, TC_ERR_LIMIT, "nesting deeper than the limit of %d levels", TC_MAX_NESTING);
    return TC_OK;
}

/* One UTF-8 sequence at p (valid, shortest form, no surrogates): its length,
 * 0 when invalid. */
static int utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    int n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (!n || end - p < n) return 0;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

static int hex4(const char *p, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xc0 | cp >> 6); out[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12); out[1] = (char)(0x80 | (cp >> 6 & 0x3f)); out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18); out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3f)); out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string: *out malloc'd (NULL: skip it).  NUL characters are refused (C
 * strings end there). */
tc_status tc_json_string(tc_json *r, char **out)
{
    tc_json_ws(r);
    char b[32];
    if (r->p >= r->end || *r->p != '"') TC_JSON_FAIL(r, TC_ERR_PARSE, "not JSON: expected a string, found %s", tc_json_what(r, b, sizeof b));
    r->p++;
    const char *start = r->p;
    /* at most as many bytes as the escaped text */
    size_t cap = 1;
    for (const char *q = start; q < r->end && *q != '"'; q++, cap++)
        if (*q == '\\' && q + 1 < r->end) { q++; cap++; }
    char *s = out ? tc_xmalloc(cap + 1) : NULL;
    if (out && !s) TC_FAIL(TC_ERR_NOMEM, "out of memory reading %s", r->file);
    size_t n = 0;
    tc_status rc = TC_OK;
    for (;;) {
        if (r->p >= r->end) { rc = TC_ERR_PARSE; break; }
        unsigned char c = (unsigned char)*r->p;
        if (c == '"') { r->p++; break; }
        if (c < 0x20) { rc = TC_ERR_PARSE; break; }
        if (c == '\\') {
            if (r->end - r->p < 2) { rc = TC_ERR_PARSE; break; }
            char e = r->p[1], plain = e == '"' || e == '\\' || e == '/' ? e : e == 'b' ? '\b' : e == 'f' ? '\f'
                                    : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : 0;
            if (plain) {
                if (s) s[n++] = plain;
                r->p += 2;
                continue;
            }
            uint32_t cp, lo;
            if (e != 'u' || r->end - r->p < 6 || hex4(r->p + 2, &cp)) { rc = TC_ERR_PARSE; break; }
            r->p += 6;
            if (cp >= 0xd800 && cp <= 0xdbff) {   /* a surrogate pair */
                if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' || hex4(r->p + 2, &lo) || lo < 0xdc00 ||
                    lo > 0xdfff) { rc = TC_ERR_PARSE; break; }
                r->p += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp <= 0xdfff) { rc = TC_ERR_PARSE; break; }
            if (cp == 0) { rc = TC_ERR_UNSUPPORTED; break; }
            if (s) n += put_utf8(s + n, cp);
            continue;
        }
        int k = utf8_len((const unsigned char *)r->p, (const unsigned char *)r->end);
        if (!k) { free(s); TC_JSON_FAIL(r, TC_ERR_PARSE, "not UTF-8: byte 0x%02x in a string (the file must be UTF-8)", c); }
        if (s) memcpy(s + n, r->p, (size_t)k);
        n += (size_t)k;
        r->p += k;
    }
    if (rc != TC_OK) {
        free(s);
        if (rc == TC_ERR_UNSUPPORTED) TC_JSON_FAIL(r, TC_ERR_PARSE, "%s", "a NUL character (\\u0000) in a string");
        TC_JSON_FAIL(r, TC_ERR_PARSE, "%s", "not JSON: a malformed string (unescaped control character, bad escape or no end)");
    }
    if (s) { s[n] = '\0'; *out = s; }
    return TC_OK;
}

/* Skip any value (keys the format does not know). */
tc_status tc_json_skip(tc_json *r)
{
    tc_json_ws(r);
    char b[32];
    if (r->p >= r->end) TC_JSON_FAIL(r, TC_ERR_PARSE, "not JSON: expected a value, found %s", tc_json_what(r, b, sizeof b));
    char c = *r->p;
    tc_status rc;
    if (c == '"') return tc_json_string(r, NULL);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        r->p++;
        if ((rc = tc_json_nest(r))) return rc;
        if (!tc_json_take(r, close)) {
            do {
                if (c == '{') {
                    if ((rc = tc_json_string(r, NULL)) || (rc = tc_json_expect(r, ':'))) return rc;
                }
                if ((rc = tc_json_skip(r))) return rc;
            } while (tc_json_take(r, ','));
            if ((rc = tc_json_expect(r, close))) return rc;
        }
        r->depth--;
        return TC_OK;
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if ((size_t)(r->end - r->p) >= n && !memcmp(r->p, words[i], n)) { r->p += n; return TC_OK; }
    }
    /* a number: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)? */
    const char *q = r->p;
    if (q < r->end && *q == '-') q++;
    const char *d = q;
    while (q < r->end && *q >= '0' && *q <= '9') q++;
    if (q == d || (q - d > 1 && *d == '0'))
        TC_JSON_FAIL(r, TC_ERR_PARSE, "not JSON: expected a value, found %s", tc_json_what(r, b, sizeof b));
    if (q < r->end && *q == '.') {
        const char *f = ++q;
        while (q < r->end && *q >= '0' && *q <= '9') q++;
        if (q == f) TC_JSON_FAIL(r, TC_ERR_PARSE, "%s", "not JSON: a number without digits after its point");
    }
    if (q < r->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < r->end && (*q == '+' || *q == '-')) q++;
        const char *f = q;
        while (q < r->end && *q >= '0' && *q <= '9') q++;
        if (q == f) TC_JSON_FAIL(r, TC_ERR_PARSE, "%s", "not JSON: a number without digits in its exponent");
    }
    r->p = q;
    return TC_OK;
}

/* The '[' that opens a list (`what`: the message when it is missing);
 * *empty when the list closes at once. */
tc_status tc_json_list_open(tc_json *r, const char *what, int *empty)
{
    char b[32];
    tc_json_ws(r);
    if (r->p >= r->end || *r->p != '[') TC_JSON_FAIL(r, TC_ERR_PARSE, "%s, found %s", what, tc_json_what(r, b, sizeof b));
    r->p++;
    *empty = tc_json_take(r, ']');
    return TC_OK;
}


/* A number as JSON writes it (no NaN, no infinity, no hex), within
 * [lo, hi]; what names it in messages. */
tc_status tc_json_number(tc_json *r, double *v, double lo, double hi, const char *what)
{
    tc_json_ws(r);
    const char *start = r->p;
    char b[32];
    if (r->p >= r->end || !(*r->p == '-' || (*r->p >= '0' && *r->p <= '9')))
        TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: expected a number, found %s", what, tc_json_what(r, b, sizeof b));
    tc_status rc = tc_json_skip(r);
    if (rc) return rc;
    size_t n = (size_t)(r->p - start);
    char text[64];
    if (n >= sizeof text) { r->p = start; TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: a number of more than 63 characters", what); }
    memcpy(text, start, n);
    text[n] = '\0';
    double x = strtod(text, NULL);
    if (!(x >= lo && x <= hi)) { r->p = start; TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: %s is out of range [%g, %g]", what, text, lo, hi); }
    *v = x;
    return TC_OK;
}

/* A whole number in [lo, hi]. */
tc_status tc_json_integer(tc_json *r, long long *v, long long lo, long long hi, const char *what)
{
    tc_json_ws(r);
    const char *start = r->p;
    double x;
    tc_status rc = tc_json_number(r, &x, (double)lo, (double)hi, what);
    if (rc) return rc;
    for (const char *q = start; q < r->p; q++)
        if (*q == '.' || *q == 'e' || *q == 'E') { r->p = start; TC_JSON_FAIL(r, TC_ERR_PARSE, "%s: expected a whole number", what); }
    *v = (long long)x;
    return TC_OK;
}

int tc_json_line(const tc_json *r, const char *at)
{
    int line = 1;
    for (const char *c = r->text; c < at && c < r->end; c++) line += *c == '\n';
    return line;
}

/* "machines": a list of names (at most TC_MAX_MACHINES), appended to
 * *names (*n of them, room for *cap; the caller frees them). */
tc_status tc_json_machines(tc_json *r, char ***names, int *n, int *cap)
{
    tc_status rc;
    char b[32];
    int empty;
    if ((rc = tc_json_list_open(r, "\"machines\" must be a list of names", &empty)) || empty) return rc;
    do {
        if (*n >= TC_MAX_MACHINES) TC_JSON_FAIL(r, TC_ERR_LIMIT, "more than the limit of %d machines", TC_MAX_MACHINES);
        if (*n == *cap) {
            int more = *cap ? *cap * 2 : 64;
            char **m = realloc(*names, sizeof(char *) * (size_t)more);
            if (!m) TC_FAIL(TC_ERR_NOMEM, "out of memory reading %s", r->file);
            *names = m;
            *cap = more;
        }
        tc_json_ws(r);
        if (r->p < r->end && *r->p != '"')
            TC_JSON_FAIL(r, TC_ERR_PARSE, "\"machines\" must be a list of names, found %s", tc_json_what(r, b, sizeof b));
        if ((rc = tc_json_string(r, &(*names)[*n]))) return rc;
        (*n)++;
    } while (tc_json_take(r, ','));
    return tc_json_expect(r, ']');
}
