/* The C tests' one assertion: counts, and on failure prints where and why
 * without stopping, so that one failure does not hide the next.  main()
 * ends with CHECK_SUMMARY(). */
#ifndef TC_TESTS_CHECK_H
#define TC_TESTS_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (cond) passed++;                                                  \
        else {                                                               \
            failed++;                                                        \
            fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

/* "N passed, N failed" (the line CI reads); the exit status */
#define CHECK_SUMMARY() (printf("%d passed, %d failed\n", passed, failed), failed != 0)

#endif
