/*
 * MPI_Alltoall through topocoll.  On a communicator's first call every rank
 * names its machine (pmpi_ranks.c), the names are gathered, and the plan for
 * the machines it spans, in its rank order, is cached on the communicator (an
 * attribute, freed with it); every rank reaches the same decision from the
 * same names, so all take the same path.  Several ranks on one machine: the
 * machine is planned as a small switch holding them, and `auto` picks
 * faraj-yuan on that tree.  The executor (tc_exec.h) runs the plan.
 */
#include "tc_exec.h"
#include "pmpi_shared.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NATIVE "native"
#define MAX_SEGMENTS 256
#define PLANS_PER_COMM 4

/* The share of a link's rate the link clock counts as MPI data over TCP on
 * Ethernet: 1448 payload bytes a 1514-byte frame less the other way's ACKs
 * is 0.936 of a frame-counted rate, 0.915 on a wire; 0.92 measured best
 * (docs/pacing.md): a clock a little slower than the data leaves a late
 * message room instead of an overlap with the next. */
#define TCP_GOODPUT 0.92

_Static_assert(sizeof(tc_op) == sizeof(tcx_op) && sizeof(tcx_op) == TCX_OP_INTS * sizeof(int),
               "the executor reads the IR's tc_op as its tcx_op");

static struct {
    int keyval;
    long long *calls;           /* per registry index; the last one is native */
    long long paced[2];         /* steps whose syncs were paced, messages sent in pieces (this rank) */
} a2a = {.keyval = MPI_KEYVAL_INVALID};

/* TOPOCOLL_TRACE=PREFIX: each rank writes PREFIX.RANK at MPI_Finalize, one
 * line per executor event: "call op event seconds", the seconds on the
 * system's monotonic clock (MPI_Wtime's origin is per process), so the traces
 * of ranks on one host (the testbed, oversubscribed runs) line up. */
typedef struct trace_buf { FILE *mem; char *text; size_t len; long long call; } trace_buf;
static trace_buf tracebuf;

static void trace_event(void *ctx, int event, long long op, double when)
{
    trace_buf *t = (trace_buf *)ctx;
    struct timespec ts;
    (void)when;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    when = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (t->mem)
        fprintf(t->mem, "%lld %lld %s %.9f\n", t->call, op,
                event == TCX_EV_START ? "start" : event == TCX_EV_DONE ? "done" : "notify", when);
}

static void nap(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

/* One schedule ready to run on a communicator (one a segment count). */
typedef struct plan_entry {
    int segments;
    tc_schedule *sched;
    tcx_schedule tables;
    tcx_state state;
} plan_entry;

typedef struct comm_plan {
    int algorithm;              /* registry index, or -1 for native */
    tc_topology *topo;          /* the communicator's ranks as machines */
    int *clusters;              /* TOPOCOLL_CLUSTERS for its ranks, or NULL */
    double *rate_to;            /* pacing: data rate of the path to each rank, or NULL */
    plan_entry entry[PLANS_PER_COMM];
    int nentries, next;
    int said_small;             /* verbose line about MIN_BYTES already printed */
} comm_plan;

static void say(MPI_Comm comm, const char *fmt, const char *a, const char *b, int n)
{
    int r;
    PMPI_Comm_rank(comm, &r);
    if (!pmpi_cfg.verbose || r != 0) return;
    fprintf(stderr, "topocoll: alltoall on a communicator of %d ranks: ", n);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
}

static void entry_free(plan_entry *e)
{
    tcx_state_free(&e->state);
    tc_schedule_destroy(e->sched);
    memset(e, 0, sizeof *e);
}

static int delete_plan(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    comm_plan *cp = (comm_plan *)attr;
    for (int i = 0; i < cp->nentries; i++) entry_free(&cp->entry[i]);
    tc_topology_destroy(cp->topo);
    free(cp->clusters);
    free(cp->rate_to);
    free(cp);
    return MPI_SUCCESS;
}

/* Pacing rates from rank me of a communicator to each rank: the narrowest
 * link of the path (TOPOCOLL_BANDWIDTH where the topology gives none) times
 * TCP's goodput; 0 where a link's rate is unknown.  NULL if none is known. */
static double *pace_rates(const tc_topology *t, int size, int me)
{
    const double unknown = 1e-30;   /* below any real rate: marks links without one */
    double *rate = (double *)calloc((size_t)size, sizeof(double)), lat, bw;
    int any = 0;
    for (int r = 0; rate && r < size; r++) {
        if (r == me) continue;
        tc_topology_path_cost(t, me, r, pmpi_cfg.bandwidth > 0 ? pmpi_cfg.bandwidth : unknown, 0, &lat, &bw);
        if (bw > unknown) { rate[r] = bw * TCP_GOODPUT; any = 1; }
    }
    if (!any) { free(rate); rate = NULL; }
    return rate;
}

/* Decide what a communicator uses; collective over comm. */
static comm_plan *make_plan(MPI_Comm comm)
{
    int size, me;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &me);
    comm_plan *cp = (comm_plan *)calloc(1, sizeof *cp);
    if (!cp) pmpi_fatal("out of memory%s%s", "", "");
    cp->algorithm = -1;
    int *ranks = NULL, *world = NULL;
    char why[PMPI_NAME_LEN * 2 + 128];
    int shared = pmpi_comm_machines(comm, &ranks, &world, why, sizeof why);
    const char *reason = shared < 0 ? why : NULL;
    const char *rule = NULL;
    int is_auto = !strcmp(pmpi_cfg.algorithm, "auto");
    int want = is_auto ? tc_alltoall_auto(-1, &rule) : tc_algorithm_find(pmpi_cfg.algorithm);
    if (want >= 0 && (long long)size * (size - 1) > TC_MAX_PLAN_MESSAGES) {
        char most[32];
        snprintf(most, sizeof most, "%lld", (long long)TC_MAX_PLAN_MESSAGES);
        say(comm, "native: too many ranks to plan the whole schedule (more than %s messages)%s", most, "", size);
    } else if (want < 0) {
        say(comm, "native (TOPOCOLL_ALLTOALL=%s)%s", pmpi_cfg.algorithm, "", size);
    } else if (tc_algorithm_properties(want) & (TC_PROP_TOPOLOGY_AWARE) ||
               tc_algorithm_params(want) & TC_PARAM_CLUSTERS) {
        if (reason) say(comm, "native: %s; %s needs the topology", reason, tc_algorithm_name(want), size);
        else if (!(cp->topo = pmpi_ranks_topology(ranks, size, why, sizeof why)))
            say(comm, "native: %s%s", why, "", size);
    } else {
        char spec[32];
        snprintf(spec, sizeof spec, "%d", size);   /* the plan depends on the size only */
        tc_topology_synthetic(spec, &cp->topo);
    }
    if (cp->topo && pmpi_cfg.clusters && tc_algorithm_params(want) & TC_PARAM_CLUSTERS)
        cp->clusters = pmpi_comm_clusters(size, world);
    if (cp->topo && pmpi_cfg.pace && tc_algorithm_runs_with_syncs(want)) cp->rate_to = pace_rates(cp->topo, size, me);
    if (cp->topo) {
        int aware = tc_algorithm_properties(want) & TC_PROP_TOPOLOGY_AWARE || tc_algorithm_params(want) & TC_PARAM_CLUSTERS;
        cp->algorithm = want;
        char chosen[160], why[160];
        snprintf(chosen, sizeof chosen, "%s%s", tc_algorithm_name(want),
                 !aware ? "" : shared ? " (several ranks per machine: machines as switches)" : " (one rank per machine)");
        snprintf(why, sizeof why, "%s%s", is_auto ? "; auto: " : "", is_auto ? rule : "");
        say(comm, "%s%s", chosen, why, size);
    }
    free(ranks);
    free(world);
    return cp;
}

/* TOPOCOLL_CHECK=1 (debug): the verifiers on what is about to run -- every
 * block delivered, the algorithm's contention promise, and the syncs
 * ordering every shared link without a deadlock; the job stops otherwise. */
static void check_plan(const comm_plan *cp, const tc_schedule *s)
{
    const char *name = tc_algorithm_name(cp->algorithm);
    tc_verify_report vr;
    tc_sync_report sr;
    if (tc_schedule_verify(s, cp->topo, &vr) != TC_OK) pmpi_fatal("TOPOCOLL_CHECK: %s: %s", name, tc_error_message());
    if (!vr.complete || (!vr.contention_free && tc_algorithm_properties(cp->algorithm) & TC_PROP_CONTENTION_FREE))
        pmpi_fatal("TOPOCOLL_CHECK: %s: %s", name, vr.problem);
    if (!tc_schedule_num_syncs(s)) return;
    if (tc_schedule_verify_syncs(s, cp->topo, pmpi_cfg.sync_depth, &sr) != TC_OK)
        pmpi_fatal("TOPOCOLL_CHECK: %s: %s", name, tc_error_message());
    if (!sr.ordered || !sr.acyclic) pmpi_fatal("TOPOCOLL_CHECK: %s: %s", name, sr.problem);
}

/* The executor state for blocks of `block` bytes: planned on first use of
 * its segment count; collective over comm (every rank sees the same block). */
static tcx_state *state_for(comm_plan *cp, MPI_Comm comm, long long block)
{
    int segments = 1;
    if (tc_algorithm_params(cp->algorithm) & TC_PARAM_SEGMENTS) {
        long long k = (block + pmpi_cfg.segment_size - 1) / pmpi_cfg.segment_size;
        segments = k < 1 ? 1 : k > MAX_SEGMENTS ? MAX_SEGMENTS : (int)k;
        /* within the planner's message limit (make_plan keeps p(p-1) under it) */
        long long p = tc_topology_num_machines(cp->topo), most = TC_MAX_PLAN_MESSAGES / (p * (p - 1) > 0 ? p * (p - 1) : 1);
        if (segments > most) segments = (int)most;
    }
    for (int i = 0; i < cp->nentries; i++)
        if (cp->entry[i].segments == segments) return &cp->entry[i].state;
    plan_entry *e;
    if (cp->nentries < PLANS_PER_COMM) e = &cp->entry[cp->nentries++];
    else { e = &cp->entry[cp->next]; cp->next = (cp->next + 1) % PLANS_PER_COMM; entry_free(e); }
    tc_plan_options opt = {segments, pmpi_cfg.fanout, cp->clusters, pmpi_cfg.sync_depth, pmpi_cfg.phase_order};
    if (tc_alltoall_plan_with_options(tc_algorithm_name(cp->algorithm), cp->topo, &opt, 1, &e->sched) != TC_OK)
        pmpi_fatal("planning %s failed: %s", tc_algorithm_name(cp->algorithm), tc_error_message());
    tc_schedule *s = e->sched;
    if (pmpi_cfg.check) check_plan(cp, s);
    e->segments = segments;
    e->tables = (tcx_schedule){tc_schedule_algorithm(s), tc_schedule_num_ranks(s), tc_schedule_num_steps(s),
                               (const long long *)tc_schedule_step_begins(s), (const tcx_op *)tc_schedule_ops(s),
                               tc_schedule_blocks(s), tc_schedule_num_syncs(s), (const long long *)tc_schedule_syncs(s)};
    if (tcx_state_init(&e->state, &e->tables, comm) != MPI_SUCCESS)
        pmpi_fatal("could not set up the executor for %s%s", tc_algorithm_name(cp->algorithm), "");
    e->state.pace.rate_to = cp->rate_to;
    e->state.pace.lead = pmpi_cfg.pace_lead;
    e->state.nap = pmpi_cfg.nap > 0 ? nap : NULL;
    e->state.nap_max = pmpi_cfg.nap;
    e->state.pace.piece_bytes = (int)(pmpi_cfg.piece_size < INT_MAX ? pmpi_cfg.piece_size : INT_MAX);
    if (pmpi_cfg.trace) {
        if (!tracebuf.mem) tracebuf.mem = open_memstream(&tracebuf.text, &tracebuf.len);
        e->state.trace = trace_event;
        e->state.trace_ctx = &tracebuf;
    }
    return &e->state;
}

static comm_plan *plan_of(MPI_Comm comm)
{
    if (a2a.keyval == MPI_KEYVAL_INVALID)
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_plan, &a2a.keyval, NULL);
    comm_plan *cp = NULL;
    int found = 0;
    PMPI_Comm_get_attr(comm, a2a.keyval, &cp, &found);
    if (found) return cp;
    cp = make_plan(comm);
    PMPI_Comm_set_attr(comm, a2a.keyval, cp);
    return cp;
}

/* Calls a registry index (the last: native), counted by each
 * communicator's rank 0; allocated on first use, on every rank for the
 * reduction at MPI_Finalize. */
static long long *calls(void)
{
    if (!a2a.calls && !(a2a.calls = (long long *)calloc((size_t)tc_algorithm_count() + 1, sizeof(long long))))
        pmpi_fatal("out of memory%s%s", "", "");
    return a2a.calls;
}

static void count(MPI_Comm comm, int algorithm)
{
    int r;
    PMPI_Comm_rank(comm, &r);
    if (r == 0) calls()[algorithm < 0 ? tc_algorithm_count() : algorithm]++;
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm)
{
    pmpi_config_load();
    int inter = 0;
    if (!pmpi_cfg.enabled || comm == MPI_COMM_NULL) {
        if (comm != MPI_COMM_NULL) count(comm, -1);
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) {
        static int said_inter;
        if (!said_inter) {
            int n;
            PMPI_Comm_size(comm, &n);
            say(comm, "native: an intercommunicator%s%s", "", "", n);
            said_inter = 1;
        }
        count(comm, -1);
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    comm_plan *cp = plan_of(comm);
    int tsize;
    PMPI_Type_size(recvtype, &tsize);
    long long block = (long long)tsize * recvcount;
    if (cp->algorithm < 0 || block < pmpi_cfg.min_bytes) {
        if (cp->algorithm >= 0 && !cp->said_small) {
            int size;
            PMPI_Comm_size(comm, &size);
            char a[32], b[32];
            snprintf(a, sizeof a, "%lld", block);
            snprintf(b, sizeof b, "%lld", pmpi_cfg.min_bytes);
            say(comm, "native for blocks of %s bytes (TOPOCOLL_ALLTOALL_MIN_BYTES=%s)", a, b, size);
            cp->said_small = 1;
        }
        count(comm, -1);
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    count(comm, cp->algorithm);
    tracebuf.call++;
    tcx_state *st = state_for(cp, comm, block);
    int rc = tcx_alltoall(st, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    a2a.paced[0] += st->pace.paced_steps;
    a2a.paced[1] += st->pace.split_messages;
    st->pace.paced_steps = st->pace.split_messages = 0;
    return rc;
}


void pmpi_alltoall_finalize(void)
{
    pmpi_delete_cached(a2a.keyval);
    if (pmpi_cfg.stats) {   /* every rank takes part */
        int n = tc_algorithm_count() + 1;
        long long *total = (long long *)calloc((size_t)n, sizeof(long long));
        if (!total) pmpi_fatal("out of memory%s%s", "", "");
        PMPI_Reduce(calls(), total, n, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (pmpi_world_rank() == 0)
            for (int i = 0; i < n; i++)
                if (total[i])
                    fprintf(stderr, "topocoll: alltoall %s calls=%lld\n", i < n - 1 ? tc_algorithm_name(i) : NATIVE,
                            total[i]);
        long long paced[2] = {0, 0};
        PMPI_Reduce(a2a.paced, paced, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (pmpi_world_rank() == 0 && (paced[0] || paced[1]))
            fprintf(stderr, "topocoll: pacing steps=%lld split-messages=%lld\n", paced[0], paced[1]);
        free(total);
    }
    if (tracebuf.mem) {
        char path[4096];
        fclose(tracebuf.mem);
        snprintf(path, sizeof path, "%s.%d", pmpi_cfg.trace, pmpi_world_rank());
        FILE *f = fopen(path, "w");
        if (f) { fwrite(tracebuf.text, 1, tracebuf.len, f); fclose(f); }
        free(tracebuf.text);
        tracebuf.mem = NULL;
    }
    if (a2a.keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&a2a.keyval);
    free(a2a.calls);
    a2a.calls = NULL;
}
