/* First-fit steps for messages along tree paths, for the unequal-block
 * planner (alltoallv_plan.c): each directed link carries at most one
 * message a step.  A link's steps are a bit a step (taken) and a bit a word
 * of 64 taken steps, so that a search skips busy stretches 4,096 steps at a
 * time; all links grow together.  Placing a message costs O(h) words for
 * each 64 steps searched. */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

struct tc_first_fit {
    int links;
    int64_t words;          /* a multiple of 64 */
    uint64_t **bits, **full;
    int64_t *first_free;    /* every step before it is full, a link */
};

void tc_first_fit_destroy(tc_first_fit *o)
{
    if (!o) return;
    for (int e = 0; e < o->links; e++) {
        if (o->bits) free(o->bits[e]);
        if (o->full) free(o->full[e]);
    }
    free(o->bits); free(o->full); free(o->first_free);
    free(o);
}

static tc_status grow(tc_first_fit *o, int64_t words)
{
    int64_t n = o->words ? o->words : 64;
    while (n < words) n *= 2;
    for (int e = 0; e < o->links; e++) {
        uint64_t *w = realloc(o->bits[e], sizeof(uint64_t) * (size_t)n);
        if (w) o->bits[e] = w;
        uint64_t *f = w ? realloc(o->full[e], sizeof(uint64_t) * (size_t)(n / 64)) : NULL;
        if (f) o->full[e] = f;
        if (!f) TC_FAIL(TC_ERR_NOMEM, "planning: out of memory for the links' steps");
        memset(w + o->words, 0, sizeof(uint64_t) * (size_t)(n - o->words));
        memset(f + o->words / 64, 0, sizeof(uint64_t) * (size_t)((n - o->words) / 64));
    }
    o->words = n;
    return TC_OK;
}

tc_status tc_first_fit_create(int links, int64_t steps_hint, tc_first_fit **out)
{
    tc_first_fit *o = tc_xcalloc(1, sizeof *o);
    *out = NULL;
    if (!o) TC_FAIL(TC_ERR_NOMEM, "planning: out of memory");
    o->links = links;
    o->bits = tc_xcalloc((size_t)links + 1, sizeof *o->bits);
    o->full = tc_xcalloc((size_t)links + 1, sizeof *o->full);
    o->first_free = tc_xcalloc((size_t)links + 1, sizeof *o->first_free);
    if (!o->bits || !o->full || !o->first_free) {
        tc_first_fit_destroy(o);
        TC_FAIL(TC_ERR_NOMEM, "planning: out of memory");
    }
    tc_status rc = grow(o, steps_hint / 64 + 2);
    if (rc) {
        tc_first_fit_destroy(o);
        return rc;
    }
    *out = o;
    return TC_OK;
}

static void take(tc_first_fit *o, int e, int64_t t)
{
    uint64_t *w = o->bits[e];
    if ((w[t / 64] |= 1ULL << (t % 64)) == ~0ULL) o->full[e][t / 4096] |= 1ULL << (t / 64 % 64);
    while (o->first_free[e] / 64 < o->words && (w[o->first_free[e] / 64] >> (o->first_free[e] % 64)) & 1)
        o->first_free[e]++;
}

tc_status tc_first_fit_place(tc_first_fit *o, const int32_t *path, int n, int64_t from, int64_t *step)
{
    int64_t t = from;
    for (int e = 0; e < n; e++)
        if (o->first_free[path[e]] > t) t = o->first_free[path[e]];
    int64_t w = t / 64, full = 0, super = -1;
    for (;; w++) {
        if (w >= o->words) {
            tc_status rc = grow(o, w + 1);
            if (rc) return rc;
        }
        if (w / 64 != super) {   /* words full on some link, this stretch */
            super = w / 64;
            full = 0;
            for (int e = 0; e < n; e++) full |= (int64_t)o->full[path[e]][super];
        }
        if (((uint64_t)full >> (w % 64)) & 1) {
            uint64_t rest = ~((uint64_t)full >> (w % 64));
            w += (rest ? __builtin_ctzll(rest) : 64 - w % 64) - 1;   /* the loop adds one */
            continue;
        }
        uint64_t used = 0;
        for (int e = 0; e < n; e++) used |= o->bits[path[e]][w];
        if (w == t / 64) used |= (1ULL << (t % 64)) - 1;   /* steps before t */
        if (~used) {
            *step = w * 64 + __builtin_ctzll(~used);
            if (*step > INT32_MAX - 1) TC_FAIL(TC_ERR_LIMIT, "planning: more than %d steps", INT32_MAX);
            for (int e = 0; e < n; e++) take(o, path[e], *step);
            return TC_OK;
        }
    }
}
