/*
 * All-to-all: Faraj & Yuan, "Message Scheduling for All-to-all Personalized
 * Communication on Ethernet Switched Clusters" (IPDPS 2005), section 4.
 *
 * Phases: exactly the all-to-all load of the bottleneck link,
 *   P = |M0| (|M| - |M0|), every phase contention-free; so with per-link
 *   bandwidth B the time is P (alpha + msize/B) plus synchronisation.
 * Restrictions: none (any tree, any |M| >= 1).  The paper assumes |M| >= 3;
 *   |M| = 1 gives no phase and |M| = 2 the one phase {0->1, 1->0}.
 * Planning: O(|M|^2) time and memory (one operation per message).
 *
 * Read literally where the paper is loose (each misreading fails on small
 * trees, found by the property tests):
 *  - subtrees are sorted largest first; a machine on the root is a subtree of
 *    size 1 and branches without machines are dropped (tc_topology_aapc_root);
 *  - "(p - P) mod |Mj|" is the non-negative residue;
 *  - rotations of the rotate pattern count from the start of each t0->tj block;
 *  - Table 3's rounds count globally (round = p div |M0|), round 0 meaning
 *    receiver = sender + 1; they never restart per ti->t0 block;
 *  - step 3 uses phases [0, |M0|(|M0|-1)), upper end excluded;
 *  - step 5 takes, for each local message, the first phase that fits.
 */
#include "tc_internal.h"

#include <stdlib.h>

static int64_t mod(int64_t a, int64_t n) { int64_t r = a % n; return r < 0 ? r + n : r; }
static int64_t gcd(int64_t a, int64_t b) { while (b) { int64_t t = a % b; a = b; b = t; } return a; }

tc_status tc_a2a_faraj_yuan(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched)
{
    (void)opt;
    tc_status rc = TC_OK;
    int M = tc_topology_num_machines(topo);
    tc_schedule_builder *b = NULL;
    int *sizes = NULL, *sub_of = NULL, *sub_node = NULL, *members = NULL, *first = NULL, *fill = NULL;
    int32_t *t0_send = NULL, *t0_recv = NULL;
    int64_t *S = NULL;
    char *done = NULL;

    TC_TRY(rc, out, tc_builder_create("faraj-yuan", M, (int64_t)M * (M - 1), &b));
    if (M == 2) {
        TC_TRY(rc, out, tc_builder_add(b, 0, 0, 1));
        TC_TRY(rc, out, tc_builder_add(b, 0, 1, 0));
    }
    if (M <= 2) goto finish;

    sizes = tc_xmalloc(sizeof(int) * (size_t)M);
    sub_of = tc_xmalloc(sizeof(int) * (size_t)M);
    sub_node = tc_xmalloc(sizeof(int) * (size_t)M);
    members = tc_xmalloc(sizeof(int) * (size_t)M);
    first = tc_xcalloc((size_t)M + 1, sizeof(int));
    fill = tc_xcalloc((size_t)M + 1, sizeof(int));
    S = tc_xcalloc((size_t)M + 1, sizeof(int64_t));
    done = tc_xmalloc((size_t)M);
    if (!sizes || !sub_of || !sub_node || !members || !first || !fill || !S || !done)
        TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "faraj-yuan: out of memory");
    int root, k;
    TC_TRY(rc, out, tc_topology_aapc_root(topo, &root, &k, sizes, sub_of, sub_node));

    /* t_i,x = members[first[i] + x]: machines of subtree i in rank order */
    for (int r = 0; r < M; r++) first[sub_of[r] + 1]++;
    for (int i = 0; i < k; i++) first[i + 1] += first[i];
    for (int r = 0; r < M; r++) members[first[sub_of[r]] + fill[sub_of[r]]++] = r;
#define T(i, x) members[first[i] + (x)]
    for (int i = 0; i < k; i++) S[i + 1] = S[i] + sizes[i];   /* S[j] = |M0| + .. + |Mj-1| */
    const int64_t M0 = sizes[0], P = M0 * (M - M0);
    if (P != tc_topology_alltoall_load(topo))
        TC_FAIL_GOTO(rc, out, TC_ERR_VERIFY, "faraj-yuan: internal error: root load %lld differs from the bottleneck load %lld",
                     (long long)P, (long long)tc_topology_alltoall_load(topo));
    if (P > INT32_MAX) TC_FAIL_GOTO(rc, out, TC_ERR_LIMIT, "faraj-yuan: %lld phases is too many", (long long)P);

/* Extended ring scheduling (4.2): first phase of the block ti -> tj. */
#define START(i, j) ((j) > (i) ? sizes[i] * (S[j] - S[(i) + 1]) : P - sizes[j] * (S[(i) + 1] - S[(j) + 1]))

    t0_send = tc_xmalloc(sizeof(int32_t) * (size_t)P);
    t0_recv = tc_xmalloc(sizeof(int32_t) * (size_t)P);
    if (!t0_send || !t0_recv) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "faraj-yuan: out of memory for %lld phases", (long long)P);

    /* Step 1: t0 -> tj, rotate pattern; receiver tj,(p-P) mod |Mj|. */
    for (int j = 1; j < k; j++) {
        int64_t st = START(0, j), Mj = sizes[j], lcm = M0 / gcd(M0, Mj) * Mj;
        for (int64_t q = 0; q < M0 * Mj; q++) {
            int64_t p = st + q, s = (q % M0 + q / lcm) % M0;
            t0_send[p] = (int32_t)s;
            TC_TRY(rc, out, tc_builder_add(b, (int32_t)p, T(0, s), T(j, mod(p - P, Mj))));
        }
    }
    /* Step 2: ti -> t0, broadcast senders; receivers by Table 3. */
    for (int i = 1; i < k; i++) {
        int64_t st = START(i, 0);
        for (int64_t q = 0; q < M0 * sizes[i]; q++) {
            int64_t p = st + q, r = (t0_send[p] + 1 + (p / M0) % M0) % M0;
            t0_recv[p] = (int32_t)r;
            TC_TRY(rc, out, tc_builder_add(b, (int32_t)p, T(i, q / M0), T(0, r)));
        }
    }
    /* Step 3: local messages of t0: receiver-of-global -> sender-of-global. */
    for (int64_t p = 0; p < M0 * (M0 - 1); p++)
        TC_TRY(rc, out, tc_builder_add(b, (int32_t)p, T(0, t0_recv[p]), T(0, t0_send[p])));
    /* Step 4: ti -> tj, i > j >= 1, broadcast; receivers aligned to (p-P) mod |Mj|. */
    for (int i = 2; i < k; i++)
        for (int j = 1; j < i; j++) {
            int64_t st = START(i, j), Mj = sizes[j];
            for (int64_t q = 0; q < sizes[i] * Mj; q++)
                TC_TRY(rc, out, tc_builder_add(b, (int32_t)(st + q), T(i, q / Mj), T(j, mod(st + q - P, Mj))));
        }
    /* Step 5: local messages of ti, i >= 1, in the phases of ti -> ti-1: at
     * phase p the global sender is ti,v and the designated receiver ti,u. */
    for (int i = 1; i < k; i++) {
        int64_t st = START(i, i - 1), Mi = sizes[i], Mprev = sizes[i - 1];
        for (int64_t v = 0; v < Mi; v++) {
            for (int64_t u = 0; u < Mi; u++) done[u] = (char)(u == v);
            for (int64_t p = st + v * Mprev; p < st + (v + 1) * Mprev; p++) {
                int64_t u = mod(p - P, Mi);
                if (done[u]) continue;
                done[u] = 1;
                TC_TRY(rc, out, tc_builder_add(b, (int32_t)p, T(i, u), T(i, v)));
            }
        }
    }
    /* Step 6: ti -> tj, 1 <= i < j, broadcast pattern. */
    for (int i = 1; i < k; i++)
        for (int j = i + 1; j < k; j++) {
            int64_t st = START(i, j), Mj = sizes[j];
            for (int64_t q = 0; q < sizes[i] * Mj; q++)
                TC_TRY(rc, out, tc_builder_add(b, (int32_t)(st + q), T(i, q / Mj), T(j, q % Mj)));
        }
#undef T
#undef START
finish:
    rc = tc_builder_finish(b, sched);
    b = NULL;
out:
    tc_builder_destroy(b);
    free(sizes); free(sub_of); free(sub_node); free(members); free(first); free(fill); free(S); free(done);
    free(t0_send); free(t0_recv);
    return rc;
}
