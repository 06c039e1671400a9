/*
 * MPI_Alltoallv through topocoll.  A rank knows only its own counts; the
 * matrix D (bytes from each rank to each) is learned by the ranks together:
 *  - every call, each rank turns its counts into bytes (count x type size),
 *    checks them (a negative count, a block over INT_MAX bytes, receive
 *    regions that overlap) and compares its two rows (what it sends, what
 *    it expects) with those of the matrices planned before on this
 *    communicator; one MPI_Allreduce of one int (bitwise and) tells every
 *    rank whether all ranks' rows match one of them and all checks passed;
 *  - a new matrix: one MPI_Allgather of every rank's two rows (2p long
 *    longs), checked (what i sends j is what j expects), planned
 *    (tc_alltoallv_plan) and kept, PLANS_PER_COMM of them a communicator, so
 *    that applications repeating a few patterns plan each once.
 * Every rank decides from the same gathered rows, so all take one path.
 * Auto plans a matrix whose mean non-empty block reaches
 * TOPOCOLL_ALLTOALLV_MIN_BYTES and sends smaller ones to the MPI; overlapping
 * receive regions (by extent; also legal interleaved derived types) and
 * blocks over INT_MAX bytes go to the MPI too; counts that do not match, or
 * are negative, are an error (a message, then the communicator's error
 * handler with MPI_ERR_COUNT).
 */
#include "tc_exec.h"
#include "pmpi_shared.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLANS_PER_COMM 4
/* After this many checked calls in a row go to the MPI with blocks of a
 * quarter of the threshold or less, a communicator checks the counts only
 * every RECHECK-th call and sends the others to the MPI at once: small
 * exchanges stop paying the check's all-reduce (1-1.5 ms on the emulated
 * cluster, 40 % of a 12-rank exchange of 1 KB blocks), and a change to large
 * blocks is seen within RECHECK calls.  Every rank counts the same calls, so
 * all check the same ones. */
#define NATIVE_STREAK 8
#define RECHECK 32
enum { V_NATIVE = -1, V_PLANNED = -2 };
/* the one int of the call's MPI_Allreduce: a bit set where every rank agrees */
enum { V_MATCH0 = 0, V_NOT_NEGATIVE = PLANS_PER_COMM, V_NOT_BIG, V_NOT_OVERLAP };

typedef struct ventry {
    int used;
    long long *rows;            /* size x 2 size: each rank's send bytes, then its receive bytes */
    int choice;                 /* V_NATIVE, V_PLANNED or a registry index */
    long long mean;             /* bytes of the mean non-empty block */
    tc_schedule *sched;
    tcx_schedule tables;
    tcx_state state;
    int have_state;
} ventry;

typedef struct vcomm {
    int size, me;
    int fixed;                  /* TOPOCOLL_ALLTOALLV: V_PLANNED, a registry index, or auto (V_NATIVE) */
    int is_auto;
    tc_topology *topo;          /* the communicator's ranks as machines; NULL when unknown */
    tc_topology *synthetic;     /* p ranks on one switch, for topology-oblivious algorithms */
    char reason[PMPI_NAME_LEN * 2 + 128];
    double *rate_to;
    int have_rates;
    MPI_Comm dup;               /* the private duplicate every plan runs on */
    ventry entry[PLANS_PER_COMM];
    int next;
    long long calls;            /* MPI_Alltoallv calls on it (every rank counts alike) */
    int native_streak;          /* checked calls in a row that went to the MPI */
    long long *mine;            /* this call's two rows */
    long long *all;             /* the gathered rows */
} vcomm;

static struct {
    int keyval;
    long long calls[2];         /* planned (any schedule), native; counted by each communicator's rank 0 */
    long long *alg_calls;       /* per registry index */
    long long gathers, reduces;
    double reduce_s, gather_s, plan_s;
} v = {.keyval = MPI_KEYVAL_INVALID};

static void vsay(const vcomm *c, const char *fmt, const char *a, const char *b)
{
    if (!pmpi_cfg.verbose || c->me != 0) return;
    fprintf(stderr, "topocoll: alltoallv on a communicator of %d ranks: ", c->size);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
}

static void entry_free(ventry *e)
{
    if (e->have_state) tcx_state_free(&e->state);
    tc_schedule_destroy(e->sched);
    free(e->rows);
    memset(e, 0, sizeof *e);
}

static int delete_vcomm(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    vcomm *c = (vcomm *)attr;
    for (int i = 0; i < PLANS_PER_COMM; i++) entry_free(&c->entry[i]);
    if (c->dup != MPI_COMM_NULL) PMPI_Comm_free(&c->dup);
    tc_topology_destroy(c->topo);
    tc_topology_destroy(c->synthetic);
    free(c->rate_to);
    free(c->mine);
    free(c->all);
    free(c);
    return MPI_SUCCESS;
}

/* What a communicator knows before its first call; collective over comm. */
static vcomm *vcomm_of(MPI_Comm comm)
{
    vcomm *c = (vcomm *)pmpi_cached(comm, &v.keyval, delete_vcomm);
    if (c) return c;
    c = (vcomm *)calloc(1, sizeof *c);
    if (!c) pmpi_fatal("out of memory%s%s", "", "");
    c->dup = MPI_COMM_NULL;
    PMPI_Comm_size(comm, &c->size);
    PMPI_Comm_rank(comm, &c->me);
    c->is_auto = !strcmp(pmpi_cfg.alltoallv, "auto");
    c->fixed = !strcmp(pmpi_cfg.alltoallv, "planned") ? V_PLANNED : c->is_auto ? V_NATIVE
                                                                               : tc_algorithm_find(pmpi_cfg.alltoallv);
    c->mine = (long long *)malloc(sizeof(long long) * 2 * (size_t)c->size);
    if (!c->mine) pmpi_fatal("out of memory%s%s", "", "");
    int *ranks = NULL, *world = NULL;
    int shared = pmpi_comm_machines(comm, &ranks, &world, c->reason, sizeof c->reason);
    if (c->size > PMPI_ALLTOALLV_MAX_RANKS)
        snprintf(c->reason, sizeof c->reason, "more than %d ranks (each would keep the p x p counts)",
                 PMPI_ALLTOALLV_MAX_RANKS);
    else if (shared >= 0)
        c->topo = pmpi_ranks_topology(ranks, c->size, c->reason, sizeof c->reason);
    free(ranks);
    free(world);
    PMPI_Comm_set_attr(comm, v.keyval, c);
    return c;
}

static int by_start(const void *a, const void *b)
{
    MPI_Aint x = *(const MPI_Aint *)a, y = *(const MPI_Aint *)b;
    return (x > y) - (x < y);
}

/* This rank's rows in bytes and its checks, as bits of the call's int. */
static int local_bits(vcomm *c, const int *scounts, MPI_Datatype stype, const int *rcounts, const int *rdispls,
                      MPI_Datatype rtype, int in_place, char *why, size_t len)
{
    int ssize, rsize, bits = 1 << V_NOT_NEGATIVE | 1 << V_NOT_BIG | 1 << V_NOT_OVERLAP;
    const int p = c->size;
    if (in_place) { scounts = rcounts; stype = rtype; }
    PMPI_Type_size(stype, &ssize);
    PMPI_Type_size(rtype, &rsize);
    for (int j = 0; j < p; j++) {
        if (scounts[j] < 0 || rcounts[j] < 0) {
            if (bits >> V_NOT_NEGATIVE & 1)
                snprintf(why, len, "rank %d: %s[%d] = %d", c->me, scounts[j] < 0 ? "sendcounts" : "recvcounts", j,
                         scounts[j] < 0 ? scounts[j] : rcounts[j]);
            bits &= ~(1 << V_NOT_NEGATIVE);
        }
        c->mine[j] = (long long)scounts[j] * ssize;
        c->mine[p + j] = (long long)rcounts[j] * rsize;
        if (c->mine[j] > INT_MAX || c->mine[p + j] > INT_MAX) bits &= ~(1 << V_NOT_BIG);
    }
    /* receive regions, by extent, must not overlap (the MPI standard's rule) */
    MPI_Aint lb, ext, tlb, text;
    PMPI_Type_get_extent(rtype, &lb, &ext);
    PMPI_Type_get_true_extent(rtype, &tlb, &text);
    MPI_Aint *span = (MPI_Aint *)malloc(sizeof(MPI_Aint) * 2 * (size_t)p + 1);
    int n = 0;
    if (!span) pmpi_fatal("out of memory%s%s", "", "");
    for (int j = 0; j < p && bits >> V_NOT_NEGATIVE & 1; j++)
        if (rcounts[j] > 0) {
            span[2 * n] = rdispls[j] * ext + tlb;
            span[2 * n + 1] = span[2 * n] + (rcounts[j] - 1) * ext + text;
            n++;
        }
    qsort(span, (size_t)n, 2 * sizeof(MPI_Aint), by_start);
    for (int i = 1; i < n; i++)
        if (span[2 * i] < span[2 * i - 1]) bits &= ~(1 << V_NOT_OVERLAP);
    free(span);
    for (int k = 0; k < PLANS_PER_COMM; k++) {
        const ventry *e = &c->entry[k];
        if (e->used && !memcmp(e->rows + (size_t)2 * p * c->me, c->mine, sizeof(long long) * 2 * (size_t)p))
            bits |= 1 << (V_MATCH0 + k);
    }
    return bits;
}

/* TOPOCOLL_CHECK=1: the unequal-block verifier (and the sync verifier) on
 * what is about to run. */
static void check_plan(const tc_schedule *s, const tc_topology *t, const tc_traffic *d, int planned)
{
    tc_traffic_report r;
    tc_sync_report sr;
    if (tc_traffic_verify(s, t, d, NULL, &r) != TC_OK) pmpi_fatal("TOPOCOLL_CHECK: alltoallv: %s%s", tc_error_message(), "");
    if (!r.complete || (planned && !r.contention_free)) pmpi_fatal("TOPOCOLL_CHECK: alltoallv: %s%s", r.problem, "");
    if (!tc_schedule_num_syncs(s)) return;
    if (tc_schedule_verify_syncs(s, t, pmpi_cfg.sync_depth, &sr) != TC_OK || !sr.ordered || !sr.acyclic)
        pmpi_fatal("TOPOCOLL_CHECK: alltoallv syncs: %s%s", sr.problem[0] ? sr.problem : tc_error_message(), "");
}

/* A new matrix: gather the rows, check them, decide and plan; returns the
 * entry, or NULL after the error handler for counts that do not match. */
static ventry *learn(vcomm *c, MPI_Comm comm, int *rc)
{
    const int p = c->size;
    double t0 = PMPI_Wtime();
    if (!c->all && !(c->all = (long long *)malloc(sizeof(long long) * 2 * (size_t)p * (size_t)p)))
        pmpi_fatal("out of memory%s%s", "", "");
    PMPI_Allgather(c->mine, 2 * p, MPI_LONG_LONG, c->all, 2 * p, MPI_LONG_LONG, comm);
    double t1 = PMPI_Wtime();
    v.gathers++;
    v.gather_s += t1 - t0;
    /* what i sends j is what j expects from i */
    for (int i = 0; i < p; i++)
        for (int j = 0; j < p; j++) {
            long long sends = c->all[(size_t)2 * p * i + j], expects = c->all[(size_t)2 * p * j + p + i];
            if (sends == expects) continue;
            /* both ranks concerned say it: under MPI_ERRORS_ARE_FATAL the first
             * abort can cut off another rank's forwarded stderr */
            if (c->me == i || c->me == j) {
                fprintf(stderr, "topocoll: error: MPI_Alltoallv: rank %d sends rank %d %lld bytes, but rank %d "
                                "expects %lld bytes from it (counts x type sizes must match)\n",
                        i, j, sends, j, expects);
                fflush(stderr);
            }
            PMPI_Comm_call_errhandler(comm, MPI_ERR_COUNT);
            *rc = MPI_ERR_COUNT;
            return NULL;
        }
    ventry *e = NULL;
    for (int k = 0; k < PLANS_PER_COMM && !e; k++)
        if (!c->entry[k].used) e = &c->entry[k];
    if (!e) {
        e = &c->entry[c->next];
        c->next = (c->next + 1) % PLANS_PER_COMM;
        entry_free(e);
    }
    e->used = 1;
    e->rows = (long long *)malloc(sizeof(long long) * 2 * (size_t)p * (size_t)p);
    int64_t *bytes = (int64_t *)malloc(sizeof(int64_t) * (size_t)p * (size_t)p + 1);
    if (!e->rows || !bytes) pmpi_fatal("out of memory%s%s", "", "");
    memcpy(e->rows, c->all, sizeof(long long) * 2 * (size_t)p * (size_t)p);
    long long total = 0, blocks = 0;
    for (int i = 0; i < p; i++)
        for (int j = 0; j < p; j++) {
            bytes[(size_t)i * p + j] = c->all[(size_t)2 * p * i + j];
            if (i != j && bytes[(size_t)i * p + j] > 0) { total += bytes[(size_t)i * p + j]; blocks++; }
        }
    long long mean = blocks ? total / blocks : 0;
    e->mean = mean;
    char what[512], why[sizeof c->reason + 64];
    e->choice = c->fixed;
    if (c->is_auto) e->choice = c->topo && mean >= pmpi_cfg.v_min_bytes ? V_PLANNED : V_NATIVE;
    const tc_topology *tree = e->choice == V_PLANNED ? c->topo : e->choice >= 0 ? pmpi_tree_for(c->topo, &c->synthetic, p, e->choice) : NULL;
    if (e->choice != V_NATIVE && !tree) {
        snprintf(why, sizeof why, "the machines are unknown: %s", c->reason);
        e->choice = V_NATIVE;
    } else if (c->is_auto)
        snprintf(why, sizeof why, "auto: mean block %lld bytes, TOPOCOLL_ALLTOALLV_MIN_BYTES=%lld", mean,
                 pmpi_cfg.v_min_bytes);
    else
        snprintf(why, sizeof why, "TOPOCOLL_ALLTOALLV=%s", pmpi_cfg.alltoallv);
    if (e->choice == V_NATIVE) {
        free(bytes);
        vsay(c, "native for a new matrix (%s)%s", why, "");
        return e;
    }
    tc_traffic *d = NULL;
    if (tc_traffic_from(p, bytes, &d) != TC_OK) pmpi_fatal("alltoallv: %s%s", tc_error_message(), "");
    free(bytes);
    tc_alltoallv_info info = {0};
    if (e->choice == V_PLANNED) {
        tc_model_network net;
        tc_model_default_network(&net, pmpi_cfg.bandwidth > 0 ? pmpi_cfg.bandwidth : TC_DEFAULT_BANDWIDTH,
                                 TC_DEFAULT_LATENCY);
        tc_alltoallv_options o = {pmpi_cfg.v_piece_size, pmpi_cfg.sync_depth, pmpi_cfg.phase_order, &net};
        if (tc_alltoallv_plan(tree, d, &o, 1, &e->sched, &info) != TC_OK)
            pmpi_fatal("planning MPI_Alltoallv failed: %s%s", tc_error_message(), "");
    } else {
        tc_plan_options o = {1, pmpi_cfg.fanout, NULL, pmpi_cfg.sync_depth, pmpi_cfg.phase_order, pmpi_cfg.bandwidth};
        if (tc_alltoall_plan_with_options(tc_algorithm_name(e->choice), tree, &o, 1, &e->sched) != TC_OK)
            pmpi_fatal("planning %s failed: %s", tc_algorithm_name(e->choice), tc_error_message());
        if (tc_schedule_blocks(e->sched) && tc_schedule_ops(e->sched) &&
            tc_schedule_ops(e->sched)[0].first_block >= 0)
            pmpi_fatal("TOPOCOLL_ALLTOALLV=%s: %s forwards blocks; MPI_Alltoallv runs direct schedules (planned, "
                       "pairwise, linear, ...)", pmpi_cfg.alltoallv, pmpi_cfg.alltoallv);
    }
    if (pmpi_cfg.check) check_plan(e->sched, tree, d, e->choice == V_PLANNED);
    tc_traffic_destroy(d);
    const tc_schedule *s = e->sched;
    pmpi_tables(s, &e->tables);
    if (c->dup == MPI_COMM_NULL && PMPI_Comm_dup(comm, &c->dup) != MPI_SUCCESS)
        pmpi_fatal("could not duplicate the communicator for MPI_Alltoallv%s%s", "", "");
    if (tcx_state_init_on(&e->state, &e->tables, c->dup) != MPI_SUCCESS)
        pmpi_fatal("could not set up the executor for MPI_Alltoallv%s%s", "", "");
    e->have_state = 1;
    int synced = e->choice == V_PLANNED || tc_algorithm_runs_with_syncs(e->choice);
    if (pmpi_cfg.pace && synced && !c->have_rates) {
        c->rate_to = pmpi_pace_rates(tree, p, c->me);
        c->have_rates = 1;
    }
    pmpi_state_options(&e->state, synced ? c->rate_to : NULL);
    double t2 = PMPI_Wtime();
    v.plan_s += t2 - t1;
    if (e->choice == V_PLANNED)
        snprintf(what, sizeof what, "%s: %d steps, %lld messages, pieces of %lld bytes, model %.3g ms; gathered in "
                 "%.3g ms, planned in %.3g ms", info.uniform ? "planned (uniform: faraj-yuan's phases)" : "planned",
                 tc_schedule_num_steps(s), (long long)tc_schedule_num_ops(s), info.piece_bytes,
                 info.predicted_seconds * 1e3, (t1 - t0) * 1e3, (t2 - t1) * 1e3);
    else
        snprintf(what, sizeof what, "%s: %d steps", tc_algorithm_name(e->choice), tc_schedule_num_steps(s));
    vsay(c, "%s (%s)", what, why);
    return e;
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    pmpi_config_load();
    int inter = 0, rank = 0;
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_test_inter(comm, &inter);
        PMPI_Comm_rank(comm, &rank);
    }
    if (!pmpi_cfg.enabled || comm == MPI_COMM_NULL || inter || !strcmp(pmpi_cfg.alltoallv, "native")) {
        if (comm != MPI_COMM_NULL && rank == 0) v.calls[1]++;
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    }
    vcomm *c = vcomm_of(comm);
    char why[160] = "";
    if (c->native_streak >= NATIVE_STREAK && c->calls++ % RECHECK != 0) {
        if (rank == 0) v.calls[1]++;
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    }
    if (c->native_streak < NATIVE_STREAK) c->calls++;
    double t0 = PMPI_Wtime();
    int bits = local_bits(c, sendcounts, sendtype, recvcounts, rdispls, recvtype, sendbuf == MPI_IN_PLACE, why,
                          sizeof why);
    if (!(bits >> V_NOT_NEGATIVE & 1)) fprintf(stderr, "topocoll: error: MPI_Alltoallv: %s\n", why);
    PMPI_Allreduce(MPI_IN_PLACE, &bits, 1, MPI_INT, MPI_BAND, comm);
    v.reduces++;
    v.reduce_s += PMPI_Wtime() - t0;
    if (!(bits >> V_NOT_NEGATIVE & 1)) {
        PMPI_Comm_call_errhandler(comm, MPI_ERR_COUNT);
        return MPI_ERR_COUNT;
    }
    ventry *e = NULL;
    if (!(bits >> V_NOT_BIG & 1) || !(bits >> V_NOT_OVERLAP & 1)) {
        static int said;
        if (!said++)
            vsay(c, "native: %s", !(bits >> V_NOT_BIG & 1) ? "a block of more than INT_MAX bytes"
                                                            : "receive regions overlap (by extent)", "");
    } else {
        for (int k = 0; k < PLANS_PER_COMM && !e; k++)
            if (bits >> (V_MATCH0 + k) & 1) e = &c->entry[k];
        if (!e) {
            int rc = MPI_SUCCESS;
            e = learn(c, comm, &rc);
            if (!e) return rc;
        }
    }
    if (!e || e->choice == V_NATIVE) {
        if (e && e->mean * 4 > pmpi_cfg.v_min_bytes) c->native_streak = 0;
        else if (++c->native_streak == NATIVE_STREAK) {
            char said[128];
            snprintf(said, sizeof said, "%d checked calls in a row of small blocks went to the MPI: the counts are "
                     "checked once every %d calls from now on", NATIVE_STREAK, RECHECK);
            vsay(c, "native: %s%s", said, "");
        }
        if (rank == 0) v.calls[1]++;
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    }
    c->native_streak = 0;
    if (rank == 0) {
        v.calls[0]++;
        if (e->choice >= 0) {
            if (!v.alg_calls && !(v.alg_calls = (long long *)calloc((size_t)tc_algorithm_count(), sizeof(long long))))
                pmpi_fatal("out of memory%s%s", "", "");
            v.alg_calls[e->choice]++;
        }
    }
    return tcx_alltoallv(&e->state, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype);
}

void pmpi_alltoallv_finalize(void)
{
    pmpi_delete_cached(v.keyval);
    if (pmpi_cfg.stats) {   /* every rank takes part */
        long long calls[2] = {0, 0}, planned;
        int n = tc_algorithm_count();
        long long *alg = (long long *)calloc((size_t)n, sizeof(long long));
        if (!alg) pmpi_fatal("out of memory%s%s", "", "");
        PMPI_Reduce(v.calls, calls, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (!v.alg_calls && !(v.alg_calls = (long long *)calloc((size_t)n, sizeof(long long))))
            pmpi_fatal("out of memory%s%s", "", "");
        PMPI_Reduce(v.alg_calls, alg, n, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        planned = calls[0];
        if (pmpi_world_rank() == 0) {
            for (int i = 0; i < n; i++)
                if (alg[i]) {
                    fprintf(stderr, "topocoll: alltoallv %s calls=%lld\n", tc_algorithm_name(i), alg[i]);
                    planned -= alg[i];
                }
            if (planned) fprintf(stderr, "topocoll: alltoallv planned calls=%lld\n", planned);
            if (calls[1]) fprintf(stderr, "topocoll: alltoallv native calls=%lld\n", calls[1]);
            if (v.reduces)
                fprintf(stderr, "topocoll: alltoallv learning (rank 0): %lld checks %.3f ms, %lld gathers %.3f ms, "
                                "planning %.3f ms\n",
                        v.reduces, v.reduce_s * 1e3, v.gathers, v.gather_s * 1e3, v.plan_s * 1e3);
        }
        free(alg);
    }
    if (v.keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&v.keyval);
    free(v.alg_calls);
    memset(&v, 0, sizeof v);
    v.keyval = MPI_KEYVAL_INVALID;
}
