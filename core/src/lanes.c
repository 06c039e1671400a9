/* The lanes of a directed link (see tc_internal.h, tc_lanes_assign).  MPI-free.
 *
 * A link that carries c messages at once is c lanes, each carrying one
 * message after another.  Its users, in step order, are dealt to lanes: a
 * sender that used a lane in an earlier step keeps it (its own program
 * order then orders the two, with no sync), the others take the lane used
 * longest ago.  The syncs (sync.c) order each user after its lane's
 * previous one; the verifier (verify_syncs.c) checks every lane's
 * consecutive users are ordered, which by Dilworth keeps at most c messages
 * on the link at any time, however the lanes were dealt.  With c = 1 a
 * lane is the link's users in step order: the rule of one message a link. */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

tc_status tc_lanes_init(tc_lanes *l, int ranks)
{
    memset(l, 0, sizeof *l);
    l->sender_lane = tc_xmalloc(sizeof(int32_t) * (size_t)(ranks > 0 ? ranks : 1));
    if (!l->sender_lane) TC_FAIL(TC_ERR_NOMEM, "lanes: out of memory");
    for (int r = 0; r < ranks; r++) l->sender_lane[r] = -1;
    return TC_OK;
}

/* Room for c lanes (and the list's sentinel). */
static tc_status lanes_reserve(tc_lanes *l, int32_t c)
{
    if (c <= l->size) return TC_OK;
    int64_t *last = realloc(l->last, sizeof(int64_t) * (size_t)c);
    if (last) l->last = last;
    int32_t *next = last ? realloc(l->next, sizeof(int32_t) * ((size_t)c + 1)) : NULL;
    if (next) l->next = next;
    int32_t *prev = next ? realloc(l->prev, sizeof(int32_t) * ((size_t)c + 1)) : NULL;
    if (!prev) TC_FAIL(TC_ERR_NOMEM, "lanes: out of memory for %d lanes", c);
    l->prev = prev;
    l->size = c;
    return TC_OK;
}

int64_t tc_lanes_back(const int64_t *before, int64_t k, int depth)
{
    for (int d = 0; d < depth && k >= 0; d++) k = before[k];
    return k;
}

void tc_lanes_free(tc_lanes *l)
{
    free(l->sender_lane); free(l->last); free(l->next); free(l->prev);
    memset(l, 0, sizeof *l);
}

/* The lanes form a list from the one used longest ago (head: next[c]) to
 * the one used last; lane c is the list's sentinel. */
static void unlink_lane(tc_lanes *l, int32_t a)
{
    l->next[l->prev[a]] = l->next[a];
    l->prev[l->next[a]] = l->prev[a];
}

static void append_lane(tc_lanes *l, int32_t a, int32_t c)
{
    l->prev[a] = l->prev[c];
    l->next[a] = c;
    l->next[l->prev[c]] = a;
    l->prev[c] = a;
}

tc_status tc_lanes_assign(tc_lanes *l, const tc_schedule *s, const int64_t *users, int64_t m, const int32_t *step_of,
                          int capacity, int64_t *before)
{
    /* more lanes than users would never be reached */
    const int32_t c = (int32_t)(capacity < 1 ? 1 : capacity > m ? (m > 0 ? m : 1) : capacity);
    tc_status rc = lanes_reserve(l, c);
    if (rc != TC_OK) return rc;
    for (int32_t a = 0; a < c; a++) {
        l->last[a] = -1;
        l->next[a] = a + 1;
        l->prev[a] = a ? a - 1 : c;
    }
    l->next[c] = 0;
    l->prev[c] = c - 1;
    for (int64_t i = 0; i < m;) {
        int64_t j = i;
        const int32_t st = step_of[users[i]];
        while (j < m && step_of[users[j]] == st) j++;
        /* senders that keep their lane (last used by them in an earlier
         * step); a step over the link's capacity deals its users in step
         * order, each after the one before (with one lane: the link's users
         * in step order, as for any schedule that is not contention-free) */
        const int over = j - i > c;
        for (int64_t k = i; k < j; k++) {
            int32_t q = s->ops[users[k]].src, a = l->sender_lane[q];
            before[k] = -2;
            if (over || a < 0 || a >= c || l->last[a] < 0 || s->ops[users[l->last[a]]].src != q ||
                step_of[users[l->last[a]]] == st)
                continue;
            before[k] = l->last[a];
            l->last[a] = k;
            unlink_lane(l, a);
            append_lane(l, a, c);
        }
        /* the others: the lane used longest ago (all taken: over capacity,
         * the step's own contention, which the verifier reports) */
        for (int64_t k = i; k < j; k++) {
            if (before[k] != -2) continue;
            int32_t a = l->next[c];
            before[k] = l->last[a];
            l->last[a] = k;
            l->sender_lane[s->ops[users[k]].src] = a;
            unlink_lane(l, a);
            append_lane(l, a, c);
        }
        i = j;
    }
    /* leave no sender pointing at a lane of this link */
    for (int64_t k = 0; k < m; k++) l->sender_lane[s->ops[users[k]].src] = -1;
    return TC_OK;
}
