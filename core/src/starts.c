/* Recorded starts: when each rank began each timed call, as `topocoll bench
 * --backend testbed --record-starts` writes them and the packet simulator's
 * --starts replays them.  A line a call: ALGORITHM BLOCK REPETITION, then one
 * offset in seconds a machine; '#' comments and blank lines are skipped. */
#include "tc_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The next whitespace-separated word of [*p, end); its length in *n. */
static const char *word(const char **p, const char *end, size_t *n)
{
    const char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\v' || *s == '\f')) s++;
    const char *w = s;
    while (s < end && !isspace((unsigned char)*s)) s++;
    *n = (size_t)(s - w);
    *p = s;
    return *n ? w : NULL;
}

/* A whole number of at most 12 digits, or -1. */
static long long digits(const char *w, size_t n)
{
    if (n == 0 || n > 12) return -1;
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (w[i] < '0' || w[i] > '9') return -1;
        v = v * 10 + (w[i] - '0');
    }
    return v;
}

tc_status tc_starts_read(const char *text, size_t len, const char *filename, const char *algorithm, int64_t block,
                         int machines, double **offsets, int *calls)
{
    *offsets = NULL;
    *calls = 0;
    if (!filename) filename = "<starts>";
    if (!algorithm || machines < 1 || machines > TC_MAX_MACHINES || block < 1)
        TC_FAIL(TC_ERR_ARG, "tc_starts_read: an algorithm, a block of at least 1 byte and 1 to %d machines",
                TC_MAX_MACHINES);
    if (len > (size_t)TC_MAX_FILE_BYTES)
        TC_FAIL(TC_ERR_LIMIT, "%s: more than the limit of %ld bytes for a starts file", filename, (long)TC_MAX_FILE_BYTES);
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        int line = 1;
        for (const char *c = text; c < nul; c++) line += *c == '\n';
        TC_FAIL(TC_ERR_PARSE, "%s:%d: a NUL byte", filename, line);
    }
    tc_status rc = TC_OK;
    double *rows = NULL;
    size_t cap = 0, n = 0, lines = 0;
    const size_t alen = strlen(algorithm);
    const char *end = text + len;
    int line = 0;
    for (const char *p = text; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        line++;
        if (eol - p > TC_MAX_STARTS_LINE)
            TC_FAIL_GOTO(rc, fail, TC_ERR_LIMIT, "%s:%d: a line longer than %d bytes", filename, line, TC_MAX_STARTS_LINE);
        const char *q = p;
        size_t wn;
        const char *w = word(&q, eol, &wn);
        if (!w || *w == '#') { p = eol + 1; continue; }
        if (++lines > TC_MAX_STARTS_LINES)
            TC_FAIL_GOTO(rc, fail, TC_ERR_LIMIT, "%s:%d: more than %d lines", filename, line, TC_MAX_STARTS_LINES);
        int fields = 1;
        for (const char *r = q; word(&r, eol, &wn);) fields++;
        if (fields != 3 + machines)
            TC_FAIL_GOTO(rc, fail, TC_ERR_PARSE, "%s:%d: %d fields, not %d (ALGORITHM BLOCK REPETITION, then an offset "
                         "for each of the %d machines)", filename, line, fields, 3 + machines, machines);
        int mine = (size_t)(q - w) == alen && !memcmp(w, algorithm, alen);
        size_t bn, rn;
        const char *bw = word(&q, eol, &bn), *rw = word(&q, eol, &rn);
        long long b = digits(bw, bn), rep = digits(rw, rn);
        if (b < 1 || rep < 0)
            TC_FAIL_GOTO(rc, fail, TC_ERR_PARSE, "%s:%d: '%.*s %.*s' is not a block size in bytes and a repetition number",
                         filename, line, (int)bn, bw, (int)rn, rw);
        mine = mine && b == block;
        if (mine && n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            double *nr = realloc(rows, nc * (size_t)machines * sizeof *rows);
            if (!nr) TC_FAIL_GOTO(rc, fail, TC_ERR_NOMEM, "out of memory reading %s", filename);
            rows = nr;
            cap = nc;
        }
        for (int k = 0; k < machines; k++) {
            size_t on;
            const char *ow = word(&q, eol, &on);
            char buf[64];
            if (on >= sizeof buf)
                TC_FAIL_GOTO(rc, fail, TC_ERR_PARSE, "%s:%d: '%.20s...' is not an offset in [0, %g] seconds", filename,
                             line, ow, TC_MAX_START_OFFSET);
            memcpy(buf, ow, on);
            buf[on] = '\0';
            char *stop;
            errno = 0;
            double v = strtod(buf, &stop);
            if (stop == buf || *stop || errno || !isfinite(v) || v < 0 || v > TC_MAX_START_OFFSET)
                TC_FAIL_GOTO(rc, fail, TC_ERR_PARSE, "%s:%d: '%s' is not an offset in [0, %g] seconds", filename, line,
                             buf, TC_MAX_START_OFFSET);
            if (mine) rows[n * (size_t)machines + (size_t)k] = v;
        }
        n += mine;
        p = eol + 1;
    }
    if (n == 0)
        TC_FAIL_GOTO(rc, fail, TC_ERR_ARG, "%s has no line for %s with %lld-byte blocks", filename, algorithm,
                     (long long)block);
    *offsets = rows;
    *calls = (int)n;
    return TC_OK;
fail:
    free(rows);
    return rc;
}

tc_status tc_starts_load(const char *path, const char *algorithm, int64_t block, int machines, double **offsets,
                         int *calls)
{
    char *text = NULL;
    size_t len = 0;
    tc_status rc = tc_read_file(path, "starts", &text, &len);
    if (rc == TC_OK) rc = tc_starts_read(text, len, path, algorithm, block, machines, offsets, calls);
    free(text);
    return rc;
}
