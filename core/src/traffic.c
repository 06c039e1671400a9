/* Unequal blocks (MPI_Alltoallv): a byte matrix D, D[i][j] the bytes rank i
 * sends rank j, its file, the benchmark's patterns, and its two time
 * bounds on a tree (see topocoll.h, "unequal blocks").  MPI-free.
 *
 * The link-load bound: every byte from i to j crosses each link of the
 * path i -> j, so no schedule ends before max over directed links of
 * bytes(l) / rate(l).  The single-port bound: a rank sends and receives
 * through its own link, max over ranks of max(sent, received) / rate.
 * Cost O(p^2 h) for the bounds (every pair's path), O(p^2) for a pattern. */
#include "tc_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct tc_traffic {
    int ranks;
    int64_t *bytes;     /* ranks x ranks, row major */
};

static tc_status traffic_new(int ranks, tc_traffic **out)
{
    if (ranks < 1 || ranks > TC_MAX_MACHINES)
        TC_FAIL(TC_ERR_LIMIT, "traffic: %d ranks (1 to %d)", ranks, TC_MAX_MACHINES);
    tc_traffic *d = tc_xcalloc(1, sizeof *d);
    if (d) d->bytes = tc_xcalloc((size_t)ranks * (size_t)ranks, sizeof(int64_t));
    if (!d || !d->bytes) {
        if (d) free(d);
        TC_FAIL(TC_ERR_NOMEM, "traffic: out of memory for %d x %d blocks", ranks, ranks);
    }
    d->ranks = ranks;
    *out = d;
    return TC_OK;
}

void tc_traffic_destroy(tc_traffic *d)
{
    if (!d) return;
    free(d->bytes);
    free(d);
}

int tc_traffic_ranks(const tc_traffic *d) { return d->ranks; }
const int64_t *tc_traffic_bytes(const tc_traffic *d) { return d->bytes; }

tc_status tc_traffic_from(int ranks, const int64_t *bytes, tc_traffic **out)
{
    tc_traffic *d;
    tc_status rc = traffic_new(ranks, &d);
    if (rc) return rc;
    int64_t total = 0;
    for (int64_t k = 0; k < (int64_t)ranks * ranks; k++) {
        if (bytes[k] < 0 || bytes[k] > TC_MAX_TRAFFIC_BYTES - total) {
            tc_traffic_destroy(d);
            TC_FAIL(bytes[k] < 0 ? TC_ERR_ARG : TC_ERR_LIMIT, "traffic: block %lld -> %lld of %lld bytes (at least 0, "
                    "and at most %lld bytes in all)", (long long)(k / ranks), (long long)(k % ranks),
                    (long long)bytes[k], (long long)TC_MAX_TRAFFIC_BYTES);
        }
        total += bytes[k];
    }
    memcpy(d->bytes, bytes, sizeof(int64_t) * (size_t)ranks * (size_t)ranks);
    *out = d;
    return TC_OK;
}

/* ---- the file: one line a sending rank, its blocks' bytes in receiver order ---- */

tc_status tc_traffic_read(const char *text, size_t len, const char *file, tc_traffic **out)
{
    const char *p = text, *end = text + len;
    int line = 1, rows = 0, ranks = 0;
    int64_t cap = 0, n = 0, *v = NULL;
    *out = NULL;
    if (!file) file = "<matrix>";
    if (len > (size_t)TC_MAX_FILE_BYTES)
        TC_FAIL(TC_ERR_LIMIT, "%s: %zu bytes; a matrix file holds at most %ld", file, len, (long)TC_MAX_FILE_BYTES);
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        int64_t before = n;
        for (const char *q = p; q < eol;) {
            if (*q == ' ' || *q == '\t' || *q == '\r' || *q == ',') { q++; continue; }
            if (*q == '#') break;
            if (*q < '0' || *q > '9') {
                free(v);
                TC_FAIL(TC_ERR_PARSE, "%s:%d:%d: '%c' where a block's bytes (a whole number >= 0) belong", file, line,
                        (int)(q - p) + 1, *q >= 32 && *q < 127 ? *q : '?');
            }
            int64_t x = 0;
            const char *start = q;
            while (q < eol && *q >= '0' && *q <= '9') {
                if (x > (TC_MAX_TRAFFIC_BYTES - (*q - '0')) / 10) {
                    free(v);
                    TC_FAIL(TC_ERR_PARSE, "%s:%d:%d: block of more than %lld bytes", file, line, (int)(start - p) + 1,
                            (long long)TC_MAX_TRAFFIC_BYTES);
                }
                x = 10 * x + (*q++ - '0');
            }
            if (q < eol && !(*q == ' ' || *q == '\t' || *q == '\r' || *q == ',' || *q == '#')) {
                free(v);
                TC_FAIL(TC_ERR_PARSE, "%s:%d:%d: '%c' after a number (bytes are whole numbers, no units)", file, line,
                        (int)(q - p) + 1, *q >= 32 && *q < 127 ? *q : '?');
            }
            if (n == cap) {
                int64_t c = cap ? 2 * cap : 1024;
                int64_t *w = realloc(v, sizeof(int64_t) * (size_t)c);
                if (!w) { free(v); TC_FAIL(TC_ERR_NOMEM, "%s: out of memory", file); }
                v = w;
                cap = c;
            }
            v[n++] = x;
        }
        if (n > before) {   /* a row */
            int got = (int)(n - before);
            if (rows == 0) {
                ranks = got;
                if (ranks > TC_MAX_MACHINES) {
                    free(v);
                    TC_FAIL(TC_ERR_LIMIT, "%s:%d: %d blocks in a row (at most %d ranks)", file, line, got, TC_MAX_MACHINES);
                }
            } else if (got != ranks) {
                free(v);
                TC_FAIL(TC_ERR_PARSE, "%s:%d: %d blocks in rank %d's row; the first row has %d", file, line, got, rows,
                        ranks);
            }
            if (++rows > ranks) {
                free(v);
                TC_FAIL(TC_ERR_PARSE, "%s:%d: row %d of a matrix of %d ranks (one row a sending rank)", file, line,
                        rows, ranks);
            }
        }
        p = eol + (eol < end);
        line++;
    }
    if (rows == 0) { free(v); TC_FAIL(TC_ERR_PARSE, "%s: no rows (one line of block sizes a sending rank)", file); }
    if (rows < ranks) {
        free(v);
        TC_FAIL(TC_ERR_PARSE, "%s: %d rows for %d ranks (one row a sending rank, the matrix is square)", file, rows, ranks);
    }
    tc_status rc = tc_traffic_from(ranks, v, out);
    free(v);
    return rc;
}

tc_status tc_traffic_load(const char *path, tc_traffic **out)
{
    char *text = NULL;
    size_t len = 0;
    tc_status rc = tc_read_file(path, "matrix", &text, &len);
    if (rc == TC_OK) rc = tc_traffic_read(text, len, path, out);
    free(text);
    return rc;
}

tc_status tc_traffic_write(const tc_traffic *d, FILE *f)
{
    fprintf(f, "# topocoll traffic matrix: %d ranks, row i = the bytes rank i sends to ranks 0..%d\n", d->ranks,
            d->ranks - 1);
    for (int i = 0; i < d->ranks; i++)
        for (int j = 0; j < d->ranks; j++)
            fprintf(f, "%lld%c", (long long)d->bytes[(int64_t)i * d->ranks + j], j + 1 < d->ranks ? ' ' : '\n');
    if (ferror(f)) TC_FAIL(TC_ERR_IO, "could not write the matrix");
    return TC_OK;
}

/* ---- patterns ---- */

static double uniform01(uint64_t *x) { return (double)(tc_random_next(x) >> 11) * (1.0 / 9007199254740992.0); }

/* Off-diagonal weights w to whole bytes totalling `total` (largest remainders). */
static void apportion(tc_traffic *d, const double *w, int64_t total)
{
    const int p = d->ranks;
    double sum = 0;
    for (int64_t k = 0; k < (int64_t)p * p; k++) sum += w[k];
    int64_t given = 0;
    for (int64_t k = 0; k < (int64_t)p * p; k++) {
        d->bytes[k] = sum > 0 ? (int64_t)floor((double)total * w[k] / sum) : 0;
        given += d->bytes[k];
    }
    /* the rest, a byte at a time, to the heaviest blocks first (ties in order) */
    for (int64_t k = 0; given < total && sum > 0; k = (k + 1) % ((int64_t)p * p))
        if (w[k] > 0 && k / p != k % p) { d->bytes[k]++; given++; }
}

tc_status tc_traffic_pattern(const char *spec, int ranks, int64_t mean, uint64_t seed, tc_traffic **out)
{
    static const char *const names = "uniform, zipf:S, hot:K, sparse:F, random";
    *out = NULL;
    if (!spec) spec = "";
    if (mean < 0 || mean > TC_MAX_TRAFFIC_BYTES)
        TC_FAIL(TC_ERR_ARG, "pattern: mean block of %lld bytes (0 to %lld)", (long long)mean, (long long)TC_MAX_TRAFFIC_BYTES);
    const char *colon = strchr(spec, ':');
    size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
    double param = 0;
    if (colon) {
        char *e = NULL;
        param = strtod(colon + 1, &e);
        if (e == colon + 1 || *e || !isfinite(param))
            TC_FAIL(TC_ERR_ARG, "pattern '%s': '%s' is not a number", spec, colon + 1);
    }
#define IS(name) (nlen == strlen(name) && !strncmp(spec, name, nlen))
    int kind = IS("uniform") ? 0 : IS("zipf") ? 1 : IS("hot") ? 2 : IS("sparse") ? 3 : IS("random") ? 4 : -1;
#undef IS
    if (kind < 0) TC_FAIL(TC_ERR_ARG, "unknown pattern '%s'; valid: %s", spec, names);
    if ((kind == 1 || kind == 2 || kind == 3) != (colon != NULL))
        TC_FAIL(TC_ERR_ARG, "pattern '%s': %s", spec, colon ? "takes no parameter" : "needs its parameter (zipf:S, hot:K, sparse:F)");
    if (kind == 1 && !(param > 0 && param <= 10)) TC_FAIL(TC_ERR_ARG, "pattern '%s': the exponent S is in (0, 10]", spec);
    if (kind == 2 && !(param >= 1 && param < ranks && param == floor(param)))
        TC_FAIL(TC_ERR_ARG, "pattern '%s': K hot ranks, a whole number from 1 to %d (ranks less one)", spec, ranks - 1);
    if (kind == 3 && !(param > 0 && param <= 1)) TC_FAIL(TC_ERR_ARG, "pattern '%s': the fraction F is in (0, 1]", spec);
    tc_traffic *d;
    tc_status rc = traffic_new(ranks, &d);
    if (rc) return rc;
    const int64_t p = ranks, pairs = p * (p - 1);
    if (mean > 0 && pairs > 0 && mean > TC_MAX_TRAFFIC_BYTES / pairs) {
        tc_traffic_destroy(d);
        TC_FAIL(TC_ERR_LIMIT, "pattern: %lld ranks x mean %lld bytes is more than %lld bytes in all", (long long)p,
                (long long)mean, (long long)TC_MAX_TRAFFIC_BYTES);
    }
    double *w = tc_xcalloc((size_t)(p * p), sizeof(double));
    int64_t *order = kind == 1 ? tc_xmalloc(sizeof(int64_t) * (size_t)(pairs + 1)) : NULL;
    if (!w || (kind == 1 && !order)) {
        free(w); free(order); tc_traffic_destroy(d);
        TC_FAIL(TC_ERR_NOMEM, "pattern: out of memory");
    }
    uint64_t x = seed ^ 0x9e3779b97f4a7c15ULL;
    if (!x) x = 1;
    int64_t nonzero = 0;
    for (int64_t i = 0, k = 0; i < p; i++)
        for (int64_t j = 0; j < p; j++) {
            if (i == j) continue;
            double *c = &w[i * p + j];
            switch (kind) {
            case 0: *c = 1; break;
            case 1: order[k++] = i * p + j; break;
            case 2: {   /* K hot receivers spread over the ranks take half of all bytes */
                int hot = 0;
                for (int h = 0; h < (int)param && !hot; h++) hot = j == (int64_t)h * p / (int64_t)param;
                *c = hot ? 0.5 / param : 0.5 / ((double)p - param);
                break;
            }
            case 3: *c = uniform01(&x) < param ? 1 : 0; nonzero += *c > 0; break;
            case 4: *c = uniform01(&x); break;
            }
        }
    if (kind == 3 && nonzero == 0 && p > 1) w[1] = 1;   /* at least one message */
    if (kind == 1) {   /* Zipf over the pairs in a random order: the k-th largest block ~ k^-S */
        for (int64_t k = pairs - 1; k > 0; k--) {
            int64_t r = (int64_t)(tc_random_next(&x) % (uint64_t)(k + 1)), t = order[k];
            order[k] = order[r];
            order[r] = t;
        }
        for (int64_t k = 0; k < pairs; k++) w[order[k]] = pow((double)(k + 1), -param);
    }
    apportion(d, w, mean * pairs);
    free(w);
    free(order);
    *out = d;
    return TC_OK;
}

/* ---- bounds ---- */

static double rate_of(const tc_topology *t, int link, double default_rate)
{
    double r = t->links[link].bandwidth;
    return r > 0 ? r : default_rate;
}

tc_status tc_traffic_bounds(const tc_traffic *d, const tc_topology *t, double default_rate, tc_traffic_bound *b)
{
    const int p = d->ranks;
    memset(b, 0, sizeof *b);
    b->link = b->port_rank = -1;
    if (!t || !t->finalized) TC_FAIL(TC_ERR_ARG, "traffic: topology not finalized");
    if (tc_topology_num_machines(t) != p)
        TC_FAIL(TC_ERR_ARG, "traffic: the matrix has %d ranks but the topology %d machines (ranks)", p,
                tc_topology_num_machines(t));
    if (!(default_rate >= TC_MIN_RATE && default_rate <= TC_MAX_RATE))
        TC_FAIL(TC_ERR_ARG, "traffic: default rate %g bit/s out of range", default_rate);
    const int E = 2 * t->num_links;
    int64_t *load = tc_xcalloc((size_t)E + 1, sizeof(int64_t));
    int32_t *path = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    if (!load || !path) { free(load); free(path); TC_FAIL(TC_ERR_NOMEM, "traffic: out of memory"); }
    for (int i = 0; i < p; i++) {
        int64_t sent = 0, recv = 0;
        for (int j = 0; j < p; j++) {
            int64_t x = d->bytes[(int64_t)i * p + j], y = d->bytes[(int64_t)j * p + i];
            b->total_bytes += x;
            if (i == j) continue;
            sent += x;
            recv += y;
            if (!x) continue;
            int L = tc_topology_path(t, i, j, path);
            for (int k = 0; k < L; k++) load[path[k]] += x;
        }
        /* the rank's own link: the first network link above it */
        int node = t->machines[i];
        while (t->parent[node] >= 0 && tc_topology_link_is_local(t, t->parent_link[node])) node = t->parent[node];
        if (t->parent[node] < 0) continue;
        double r = rate_of(t, t->parent_link[node], default_rate), s = 8.0 * (double)(sent > recv ? sent : recv) / r;
        if (s > b->port_seconds) {
            b->port_seconds = s;
            b->port_rank = i;
            b->port_sends = sent >= recv;
            b->port_bytes = sent > recv ? sent : recv;
        }
    }
    for (int e = 0; e < E; e++) {
        if (tc_topology_link_is_local(t, e / 2)) continue;
        double s = 8.0 * (double)load[e] / rate_of(t, e / 2, default_rate);
        if (s > b->link_seconds) {
            b->link_seconds = s;
            b->link = e / 2;
            b->link_up = e % 2 == 0;
            b->link_bytes = load[e];
        }
    }
    free(load);
    free(path);
    return TC_OK;
}
