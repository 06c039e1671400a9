/* Phase order for execution (see topocoll.h, tc_schedule_order_steps).
 * MPI-free.
 *
 * A contention-free phase schedule stays contention-free and optimal in any
 * order of its phases; the order only decides which messages follow each
 * other on a link.  Run with pairwise syncs, a link handed from one sender to
 * another costs a sync's way and its receiver's wake-up, while a sender
 * following itself costs nothing.  Faraj & Yuan's phase order (kept by the
 * generator, and by TOPOCOLL_PHASE_ORDER=paper) hands the busiest links
 * over in nearly every phase in one direction while the other direction
 * keeps its sender for runs of phases: on two switches of 8 machines, the 64 phases of the
 * inter-switch link hand it over 63 times one way and 7 the other, and the
 * first chain is the run's critical path.  Every phase changes the sender on
 * at least one of the two directions, but the changes can be shared evenly
 * (about 32 each); on three switches, likewise.
 *
 * The order is chosen greedily on a small timing model: a message takes its
 * share of a block on every link of its path, a link handed to another
 * sender costs HANDOFF more for each switch the sync crosses (a sync that
 * crosses a busy inter-switch port waits in its queue: median hand-offs of
 * 0.76 ms within a switch, 1.43 ms across one, on the emulated cluster), a
 * sender's messages follow each other on its link; the next phase is the
 * one that would finish first (ties: the least summed finish, then the
 * paper's order), then improved by moving single
 * phases while the model's makespan (or summed finish) drops.  Cost
 * O(phases x messages x height), and phases^2 x messages x height a pass of
 * moves (at most 8); larger schedules than ORDER_WORK keep the paper's
 * order, larger than MOVE_WORK the greedy one.
 *
 * An option (TOPOCOLL_PHASE_ORDER=balanced): faster than the paper's order
 * on 2 x 8 machines, slower on 3 x 4 at 256 KB (docs/pacing.md); the default
 * moves messages between phases instead (sender_runs.c). */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

#define HANDOFF 0.1             /* a hand-off, in blocks' time (1/10 of a block) */
#define ORDER_WORK 40000000LL   /* phases x messages beyond which the order is kept */
#define MOVE_WORK 20000000LL    /* phases^2 x messages beyond which the greedy order stays */
#define MAX_RANKS 2048          /* the p x p hop table */

typedef struct model {
    const tc_schedule *s;
    const int64_t *plen;        /* op i's path: paths[plen[i] .. plen[i+1]) */
    const int32_t *paths;
    double *efree, *rfree;      /* when each directed link, each sender's link is free */
    int32_t *elast;             /* each link's last sender (-1: none) */
    const int32_t *hops;        /* p x p: links between two senders (the sync's way) */
    int E, p;
} model;

/* A hand-off from sender q to r: its sync crosses hops - 1 switches. */
static double handoff(const model *m, int q, int r) { return HANDOFF * (m->hops[(size_t)q * m->p + r] - 1); }

static void model_reset(model *m)
{
    for (int e = 0; e < m->E; e++) { m->efree[e] = 0; m->elast[e] = -1; }
    for (int r = 0; r < m->p; r++) m->rfree[r] = 0;
}

/* When op i would finish if it started now. */
static double op_finish(const model *m, int64_t i)
{
    const tc_op *op = &m->s->ops[i];
    double start = m->rfree[op->src];
    for (int64_t q = m->plen[i]; q < m->plen[i + 1]; q++) {
        int e = m->paths[q];
        double t = m->efree[e] + (m->elast[e] >= 0 && m->elast[e] != op->src ? handoff(m, m->elast[e], op->src) : 0);
        if (t > start) start = t;
    }
    return start + 1.0 / (op->parts > 1 ? op->parts : 1);
}

/* Step st's finish (its latest op) and summed op finishes; take: run it. */
static double step_finish(model *m, int st, int take, double *sum)
{
    double end = 0;
    for (int64_t i = m->s->step_begin[st]; i < m->s->step_begin[st + 1]; i++) {
        double fin = op_finish(m, i);
        if (fin > end) end = fin;
        *sum += fin;
        if (!take) continue;
        m->rfree[m->s->ops[i].src] = fin;
        for (int64_t q = m->plen[i]; q < m->plen[i + 1]; q++) {
            m->efree[m->paths[q]] = fin;
            m->elast[m->paths[q]] = m->s->ops[i].src;
        }
    }
    return end;
}

/* The model's makespan of the steps in order (and summed finishes). */
static double order_cost(model *m, const int32_t *order, int n, double *sum)
{
    double end = 0;
    *sum = 0;
    model_reset(m);
    for (int k = 0; k < n; k++) {
        double f = step_finish(m, order[k], 1, sum);
        if (f > end) end = f;
    }
    return end;
}

static int better(double end, double sum, double best_end, double best_sum)
{
    return end < best_end - 1e-9 || (end < best_end + 1e-9 && sum < best_sum - 1e-9);
}

tc_status tc_schedule_order_steps(tc_schedule *s, const tc_topology *topo)
{
    const int n = s->num_steps, p = s->num_ranks, E = 2 * tc_topology_num_links(topo);
    if (s->num_syncs) TC_FAIL(TC_ERR_ARG, "phase order: '%s' has syncs already; order its steps first", s->algorithm);
    for (int64_t i = 0; i < s->num_ops; i++)
        if (s->ops[i].first_block >= 0) return TC_OK;   /* forwarding: steps depend on each other */
    if (n < 3 || (int64_t)n * s->num_ops > ORDER_WORK || p > MAX_RANKS) return TC_OK;
    tc_status rc = TC_OK;
    double *efree = tc_xcalloc((size_t)E + 1, sizeof(double)), *rfree = tc_xcalloc((size_t)p + 1, sizeof(double));
    int32_t *elast = tc_xmalloc(sizeof(int32_t) * ((size_t)E + 1));
    int64_t *plen = NULL;
    int32_t *paths = NULL, *order = tc_xmalloc(sizeof(int32_t) * (size_t)n);
    int32_t *hops = NULL;
    char *used = tc_xcalloc((size_t)n, 1);
    int32_t *step_of = NULL;
    if (!efree || !rfree || !elast || !order || !used)
        TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "phase order: out of memory");
    TC_TRY(rc, out, tc_schedule_op_paths(s, topo, &plen, &paths));
    if (!(hops = tc_topology_hop_table(topo))) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "phase order: out of memory");
    model m = {s, plen, paths, efree, rfree, elast, hops, E, p};
    model_reset(&m);
    /* greedy: the phase that would finish first */
    for (int k = 0; k < n; k++) {
        int best = -1;
        double best_end = 0, best_sum = 0;
        for (int st = 0; st < n; st++) {
            double sum = 0, end;
            if (used[st]) continue;
            end = step_finish(&m, st, 0, &sum);
            if (best < 0 || better(end, sum, best_end, best_sum)) { best = st; best_end = end; best_sum = sum; }
        }
        double unused_sum = 0;
        used[best] = 1;
        order[k] = best;
        step_finish(&m, best, 1, &unused_sum);
    }
    /* then moves of one phase elsewhere while the model's makespan (or the
     * summed finishes) improves */
    if ((int64_t)n * n * s->num_ops <= MOVE_WORK) {
        int32_t *trial = tc_xmalloc(sizeof(int32_t) * (size_t)n);
        if (!trial) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "phase order: out of memory");
        double sum, end = order_cost(&m, order, n, &sum);
        for (int pass = 0, improved = 1; improved && pass < 8; pass++) {
            improved = 0;
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    if (j == i) continue;
                    /* order with the phase at i moved to j */
                    int32_t moving = order[i];
                    for (int k = 0, w = 0; k < n; k++) {
                        if (k == i) continue;
                        if (w == j) trial[w++] = moving;
                        trial[w++] = order[k];
                    }
                    if (j == n - 1) trial[n - 1] = moving;
                    double tsum, tend = order_cost(&m, trial, n, &tsum);
                    if (better(tend, tsum, end, sum)) {
                        memcpy(order, trial, sizeof(int32_t) * (size_t)n);
                        end = tend;
                        sum = tsum;
                        improved = 1;
                    }
                }
        }
        free(trial);
    }

    /* rewrite the steps in the chosen order */
    step_of = tc_xmalloc(sizeof(int32_t) * (size_t)(s->num_ops + 1));
    if (!step_of) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "phase order: out of memory");
    for (int k = 0; k < n; k++)
        for (int64_t i = s->step_begin[order[k]]; i < s->step_begin[order[k] + 1]; i++) step_of[i] = k;
    rc = tc_schedule_set_steps(s, step_of);
out:
    free(efree); free(rfree); free(elast); free(plen); free(paths); free(order); free(used); free(hops);
    free(step_of);
    return rc;
}
