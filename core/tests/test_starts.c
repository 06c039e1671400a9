/* Recorded starts (bench --record-starts, topocoll-packet --starts): the
 * lines of one algorithm and size, in order; every line checked. */
#include "topocoll/topocoll.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static int read_text(const char *text, size_t len, tc_status want, const char *says, double **rows)
{
    int calls = -1;
    double *got = NULL;
    tc_status rc = tc_starts_read(text, len, "s.txt", "linear", 1024, 3, &got, &calls);
    CHECK(rc == want && (!says || strstr(tc_error_message(), says)), "'%.40s': status %d, '%s' (want %d, '%s')", text,
          rc, rc ? tc_error_message() : "", want, says ? says : "");
    CHECK(rc == TC_OK || (got == NULL && calls == 0), "a refusal leaves nothing");
    if (rows) *rows = got;
    else free(got);
    return calls;
}

#define READ(text, want, says, rows) read_text(text, strlen(text), want, says, rows)

int main(void)
{
    double *rows = NULL;
    int n = READ("# recorded\n\nlinear 1024 0 0 0.5 1e-3\npairwise 1024 0 1 1 1\nlinear 2048 0 2 2 2\n"
                 "  linear\t1024 1 0.25 0 0   \r\nlinear 1024 2 0 0 10", TC_OK, NULL, &rows);
    CHECK(n == 3, "three lines of linear at 1024 bytes, not %d", n);
    if (rows && n == 3) {
        CHECK(rows[1] == 0.5 && rows[2] == 1e-3 && rows[3] == 0.25 && rows[8] == 10, "offsets in file order");
    }
    free(rows);
    READ("linear 1024 0 0 0\n", TC_ERR_PARSE, "s.txt:1: 5 fields, not 6", NULL);
    READ("linear 1024 0 0 0 0 0\n", TC_ERR_PARSE, "7 fields, not 6", NULL);
    READ("pairwise 1024 0 0 0 x\n", TC_ERR_PARSE, "s.txt:1: 'x' is not an offset in [0, 10] seconds", NULL);
    READ("linear 1024 0 0 0 10.5\n", TC_ERR_PARSE, "'10.5' is not an offset", NULL);
    READ("linear 1024 0 0 0 -0\n", TC_OK, NULL, NULL);
    READ("linear 1024 0 0 0 -1e-9\n", TC_ERR_PARSE, "'-1e-9'", NULL);
    READ("linear 1024 0 0 0 inf\n", TC_ERR_PARSE, "'inf'", NULL);
    READ("linear 1024 0 0 0 nan\n", TC_ERR_PARSE, "'nan'", NULL);
    READ("linear 0x400 0 0 0 0\n", TC_ERR_PARSE, "'0x400 0' is not a block size", NULL);
    READ("linear 0 0 0 0 0\n", TC_ERR_PARSE, "'0 0' is not a block size", NULL);
    READ("linear 1024 -1 0 0 0\n", TC_ERR_PARSE, "'1024 -1'", NULL);
    READ("linear 1024 9999999999999 0 0 0\n", TC_ERR_PARSE, "repetition number", NULL);
    READ("linear 1024 0 0 0 00000000000000000000000000000000000000000000000000000000000000000000001\n", TC_ERR_PARSE,
         "is not an offset", NULL);
    READ("pairwise 1024 0 0 0 0\n", TC_ERR_ARG, "s.txt has no line for linear with 1024-byte blocks", NULL);
    READ("", TC_ERR_ARG, "no line for linear", NULL);
    CHECK(read_text("linear 1024 0 0 0 0\n\0", 21, TC_ERR_PARSE, "s.txt:2: a NUL byte", NULL) == 0, "NUL");

    char *big = malloc(70000);
    if (big) {
        memset(big, ' ', 70000);
        memcpy(big, "linear 1024 0 0 0 0", 19);
        read_text(big, 70000, TC_ERR_LIMIT, "s.txt:1: a line longer than 65535 bytes", NULL);
        free(big);
    }
    size_t many = (size_t)TC_MAX_STARTS_LINES + 1, len = many * 8;
    char *lots = malloc(len + 1);
    if (lots) {
        for (size_t i = 0; i < many; i++) memcpy(lots + 8 * i, "x 1 0 0\n", 8);
        int calls = -1;
        double *got = NULL;
        tc_status rc = tc_starts_read(lots, len, "s.txt", "x", 1, 1, &got, &calls);
        CHECK(rc == TC_ERR_LIMIT && strstr(tc_error_message(), "more than 100000 lines"), "%s", tc_error_message());
        free(got);
        free(lots);
    }
    double *none = NULL;
    int calls = 0;
    CHECK(tc_starts_read("x 1 0 0\n", 8, NULL, NULL, 1, 1, &none, &calls) == TC_ERR_ARG, "no algorithm");
    CHECK(tc_starts_read("x 1 0 0\n", 8, NULL, "x", 1, 0, &none, &calls) == TC_ERR_ARG, "no machines");
    CHECK(tc_starts_load("/nonexistent/s.txt", "x", 1, 1, &none, &calls) == TC_ERR_IO &&
          strstr(tc_error_message(), "cannot open starts '/nonexistent/s.txt'"), "%s", tc_error_message());
    return CHECK_SUMMARY();
}
