/* The traffic matrix (MPI_Alltoallv's D): its file, patterns and bounds. */
#include "topocoll/topocoll.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static tc_traffic *read_text(const char *text, tc_status want, const char *says)
{
    tc_traffic *d = NULL;
    tc_status rc = tc_traffic_read(text, strlen(text), "m.txt", &d);
    CHECK(rc == want && (!says || strstr(tc_error_message(), says)), "'%s': status %d, '%s' (want %d, '%s')", text,
          rc, rc ? tc_error_message() : "", want, says ? says : "");
    return d;
}

int main(void)
{
    /* the file */
    tc_traffic *d = read_text("# three ranks\n0 10 20\n30, 0, 40   # a comment\n\n50\t60 0\n", TC_OK, NULL);
    if (d) {
        const int64_t *b = tc_traffic_bytes(d);
        CHECK(tc_traffic_ranks(d) == 3 && b[1] == 10 && b[5] == 40 && b[7] == 60, "values");
        tc_traffic_destroy(d);
    }
    read_text("0 1\n1\n", TC_ERR_PARSE, "m.txt:2: 1 blocks in rank 1's row; the first row has 2");
    read_text("0 1\n1 0\n1 1\n", TC_ERR_PARSE, "m.txt:3: row 3 of a matrix of 2 ranks");
    read_text("0 1 2\n1 0 2\n", TC_ERR_PARSE, "2 rows for 3 ranks");
    read_text("0 -1\n1 0\n", TC_ERR_PARSE, "m.txt:1:3: '-'");
    read_text("0 1K\n1 0\n", TC_ERR_PARSE, "m.txt:1:4: 'K' after a number");
    read_text("0 1.5\n1 0\n", TC_ERR_PARSE, "m.txt:1:4: '.'");
    read_text("0 99999999999999999999\n1 0\n", TC_ERR_PARSE, "m.txt:1:3: block of more than");
    read_text("0 1125899906842624\n1 1\n", TC_ERR_LIMIT, "in all");
    read_text("# nothing\n\n", TC_ERR_PARSE, "no rows");
    read_text("", TC_ERR_PARSE, "no rows");

    /* patterns: exact totals, their shapes, seeds */
    const char *specs[] = {"uniform", "zipf:1.0", "zipf:2.5", "hot:1", "hot:3", "sparse:0.1", "sparse:1", "random"};
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++)
        for (int p = 2; p <= 17; p += 5) {
            tc_traffic *t = NULL;
            if (!strncmp(specs[s], "hot:3", 5) && p < 4) continue;
            if (tc_traffic_pattern(specs[s], p, 1000, 7, &t) != TC_OK) {
                CHECK(0, "%s on %d ranks: %s", specs[s], p, tc_error_message());
                continue;
            }
            const int64_t *b = tc_traffic_bytes(t);
            int64_t total = 0, diag = 0, mx = 0, mn = INT64_MAX;
            for (int i = 0; i < p; i++)
                for (int j = 0; j < p; j++) {
                    int64_t x = b[i * p + j];
                    total += x;
                    if (i == j) diag += x;
                    else { if (x > mx) mx = x; if (x < mn) mn = x; }
                }
            CHECK(total == 1000LL * p * (p - 1) && diag == 0, "%s on %d ranks: total %lld, diagonal %lld", specs[s], p,
                  (long long)total, (long long)diag);
            if (!strcmp(specs[s], "uniform") || !strcmp(specs[s], "sparse:1")) CHECK(mx == 1000 && mn == 1000, "%s flat", specs[s]);
            if (!strncmp(specs[s], "zipf", 4) && p > 2) CHECK(mx > 4 * mn, "%s skewed: %lld..%lld", specs[s], (long long)mn, (long long)mx);
            if (!strcmp(specs[s], "hot:1")) {   /* rank 0 receives half of all bytes */
                int64_t to0 = 0;
                for (int i = 1; i < p; i++) to0 += b[i * p];
                CHECK(llabs(2 * to0 - total) <= p * p, "hot:1 on %d ranks: %lld of %lld to rank 0", p, (long long)to0,
                      (long long)total);
            }
            tc_traffic *u = NULL, *v = NULL;
            tc_traffic_pattern(specs[s], p, 1000, 7, &u);
            tc_traffic_pattern(specs[s], p, 1000, 8, &v);
            CHECK(u && !memcmp(tc_traffic_bytes(u), b, sizeof(int64_t) * p * p), "%s: the same seed, the same matrix", specs[s]);
            if (!strcmp(specs[s], "random") || !strcmp(specs[s], "zipf:1.0"))
                CHECK(v && (p < 3 || memcmp(tc_traffic_bytes(v), b, sizeof(int64_t) * p * p)), "%s: another seed", specs[s]);
            tc_traffic_destroy(u);
            tc_traffic_destroy(v);
            tc_traffic_destroy(t);
        }
    const char *bad[][2] = {{"zipf", "needs its parameter"}, {"uniform:2", "takes no parameter"},
                            {"zipf:0", "(0, 10]"}, {"hot:4", "from 1 to 3"}, {"hot:1.5", "whole number"},
                            {"sparse:2", "(0, 1]"}, {"zipf:x", "not a number"}, {"skewed", "valid: uniform"}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        tc_traffic *t = NULL;
        CHECK(tc_traffic_pattern(bad[k][0], 4, 100, 1, &t) == TC_ERR_ARG && strstr(tc_error_message(), bad[k][1]),
              "%s: %s", bad[k][0], tc_error_message());
    }

    /* bounds: 2 switches of 2 at 100 Mbit/s; uniform blocks of B bytes load
     * the middle link with 4 B (the all-to-all load 4 x B) */
    tc_topology *topo = NULL;
    tc_topology_synthetic("chain:2,2", &topo);
    tc_traffic *u = NULL;
    tc_traffic_pattern("uniform", 4, 1000000, 1, &u);
    tc_traffic_bound bd;
    CHECK(tc_traffic_bounds(u, topo, 1e8, &bd) == TC_OK, "%s", tc_error_message());
    CHECK(bd.link_bytes == 4000000 && fabs(bd.link_seconds - 0.32) < 1e-12, "link bound %lld bytes %g s",
          (long long)bd.link_bytes, bd.link_seconds);
    CHECK(bd.port_bytes == 3000000 && fabs(bd.port_seconds - 0.24) < 1e-12, "port bound %g", bd.port_seconds);
    /* one hot receiver: its own link is the bound */
    int64_t hot[16] = {0, 5, 0, 0, 7, 0, 0, 0, 9, 0, 0, 0, 11, 0, 0, 0};
    tc_traffic *h = NULL;
    CHECK(tc_traffic_from(4, hot, &h) == TC_OK, "from");
    tc_traffic_bounds(h, topo, 1e8, &bd);
    CHECK(bd.port_rank == 0 && bd.port_sends == 0 && bd.port_bytes == 27 && bd.link_bytes == 27, "hot: rank %d %lld",
          bd.port_rank, (long long)bd.port_bytes);
    tc_topology *three = NULL;
    tc_topology_synthetic("chain:3", &three);
    CHECK(tc_traffic_bounds(h, three, 1e8, &bd) == TC_ERR_ARG && strstr(tc_error_message(), "4 ranks but the topology 3"),
          "size mismatch: %s", tc_error_message());
    int64_t neg[4] = {0, -1, 0, 0};
    tc_traffic *n = NULL;
    CHECK(tc_traffic_from(2, neg, &n) == TC_ERR_ARG, "negative block");
    tc_traffic_destroy(u);
    tc_traffic_destroy(h);
    tc_topology_destroy(three);
    tc_topology_destroy(topo);
    return CHECK_SUMMARY();
}
