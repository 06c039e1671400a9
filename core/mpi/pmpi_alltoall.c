/*
 * MPI_Alltoall through topocoll.  On a communicator's first call every rank
 * names its machine (pmpi_ranks.c), the names are gathered, and the plan for
 * the machines it spans, in its rank order, is cached on the communicator (an
 * attribute, freed with it); every rank reaches the same decision from the
 * same names, so all take the same path.  Several ranks on one machine: the
 * machine is planned as a small switch holding them, and `auto` picks
 * faraj-yuan on that tree.  The executor (tc_exec.h) runs the plan.
 */
#include "tc_exec_ir.h"
#include "pmpi_shared.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NATIVE "native"
#define PLANS_PER_COMM 4

_Static_assert(sizeof(tc_op) == sizeof(tcx_op) && sizeof(tcx_op) == TCX_OP_INTS * sizeof(int),
               "the executor reads the IR's tc_op as its tcx_op");

static struct {
    int keyval;
    long long *calls;           /* per registry index; the last one is native */
    long long paced[2];         /* steps whose syncs were paced, messages sent in pieces (this rank) */
} a2a = {.keyval = MPI_KEYVAL_INVALID};

/* TOPOCOLL_TRACE=PREFIX: each rank writes PREFIX.RANK at MPI_Finalize, one
 * line per executor event: "call op event seconds peer", the seconds on the
 * system's monotonic clock (MPI_Wtime's origin is per process), so the traces
 * of ranks on one host (the testbed, oversubscribed runs) line up; peer is
 * the send's destination, a rank of the call's communicator. */
typedef struct trace_buf { FILE *mem; char *text; size_t len; long long call; } trace_buf;
static trace_buf tracebuf;

static void trace_event(void *ctx, int event, long long op, int peer, double when)
{
    trace_buf *t = (trace_buf *)ctx;
    struct timespec ts;
    (void)when;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    when = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (t->mem)
        fprintf(t->mem, "%lld %lld %s %.9f %d\n", t->call, op, tcx_event_name(event), when, peer);
}

void pmpi_nap(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

/* One schedule ready to run on a communicator (one an algorithm, segment
 * count and fan-out). */
typedef struct plan_entry {
    int algorithm, segments, fanout;
    tc_schedule *sched;
    tcx_schedule tables;
    tcx_state state;
} plan_entry;

typedef struct comm_plan {
    int size;
    int fixed;                  /* TOPOCOLL_ALLTOALL's registry index, -1 native; unused under auto */
    int is_auto;
    tc_topology *topo;          /* the communicator's ranks as machines; NULL when unknown */
    tc_topology *synthetic;     /* p ranks, for the topology-oblivious algorithms without topo */
    char reason[PMPI_NAME_LEN * 2 + 128];   /* why topo is NULL */
    int shared;                 /* some machine holds several of its ranks */
    int *world;                 /* world rank of each rank */
    int *clusters;              /* TOPOCOLL_CLUSTERS for its ranks, or NULL */
    double *rate_to;            /* pacing: data rate of the path to each rank, or NULL */
    int have_rates;
    int too_many;               /* more ranks than a whole plan may hold: the MPI's own, reason says so */
    int modelled;               /* features below computed (untuned auto) */
    tc_model_features features[2];   /* native, faraj-yuan */
    plan_entry entry[PLANS_PER_COMM];
    int nentries, next;
    unsigned char *said;        /* verbose: algorithm (index + 1; 0 native) already announced */
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
    tc_topology_destroy(cp->synthetic);
    free(cp->world);
    free(cp->clusters);
    free(cp->rate_to);
    free(cp->said);
    free(cp);
    return MPI_SUCCESS;
}

/* Pacing rates from rank me of a communicator to each rank (the core's
 * tc_pace_rates, TOPOCOLL_BANDWIDTH where the topology gives none).  NULL if
 * none is known. */
double *pmpi_pace_rates(const tc_topology *t, int size, int me)
{
    double *rate = (double *)calloc((size_t)size + 1, sizeof(double));
    if (rate && (tc_topology_num_machines(t) != size || tc_pace_rates(t, me, pmpi_cfg.bandwidth, rate) == 0)) {
        free(rate);
        rate = NULL;
    }
    return rate;
}

static int needs_topology(int algorithm)
{
    return tc_algorithm_properties(algorithm) & TC_PROP_TOPOLOGY_AWARE || tc_algorithm_params(algorithm) & TC_PARAM_CLUSTERS;
}

/* What a communicator knows before its first call; collective over comm. */
static comm_plan *make_plan(MPI_Comm comm)
{
    int size;
    PMPI_Comm_size(comm, &size);
    comm_plan *cp = (comm_plan *)calloc(1, sizeof *cp);
    if (!cp || !(cp->said = (unsigned char *)calloc((size_t)tc_algorithm_count() + 1, 1)))
        pmpi_fatal("out of memory%s%s", "", "");
    cp->size = size;
    cp->is_auto = !strcmp(pmpi_cfg.algorithm, "auto");
    cp->fixed = cp->is_auto ? -1 : tc_algorithm_find(pmpi_cfg.algorithm);
    int *ranks = NULL;
    cp->shared = pmpi_comm_machines(comm, &ranks, &cp->world, cp->reason, sizeof cp->reason);
    /* past the whole planner's limit, only what plans per rank runs: a fixed
     * per-rank algorithm, or auto without a tuning file (faraj-yuan or native) */
    int per_rank_only = pmpi_cfg.plan != PMPI_PLAN_WHOLE &&
                        ((cp->fixed >= 0 && tc_algorithm_plans_per_rank(cp->fixed)) || (cp->is_auto && !pmpi_cfg.tuning_file));
    if ((long long)size * (size - 1) > TC_MAX_PLAN_MESSAGES && !per_rank_only) {
        snprintf(cp->reason, sizeof cp->reason, "too many ranks to plan the whole schedule (more than %lld messages)",
                 (long long)TC_MAX_PLAN_MESSAGES);
        cp->fixed = -1;
        cp->is_auto = 0;
        cp->too_many = 1;
    } else if (cp->shared >= 0 && (cp->is_auto || (cp->fixed >= 0 && needs_topology(cp->fixed)))) {
        cp->topo = pmpi_ranks_topology(ranks, size, cp->reason, sizeof cp->reason);
    }
    if (cp->shared < 0) cp->shared = 0;
    free(ranks);
    return cp;
}

const tc_topology *pmpi_tree_for(tc_topology *topo, tc_topology **synthetic, int size, int algorithm)
{
    if (topo) return topo;
    if (needs_topology(algorithm)) return NULL;
    if (!*synthetic) {
        char spec[32];
        snprintf(spec, sizeof spec, "%d", size);
        if (tc_topology_synthetic(spec, synthetic) != TC_OK) pmpi_fatal("planning: %s%s", tc_error_message(), "");
    }
    return *synthetic;
}

static const tc_topology *tree_for(comm_plan *cp, int algorithm)
{
    return pmpi_tree_for(cp->topo, &cp->synthetic, cp->size, algorithm);
}

void pmpi_tables(const tc_schedule *s, tcx_schedule *out)
{
    *out = tcx_tables_of(s);
}

/* Untuned auto: the model's prediction for faraj-yuan and for the MPI's own
 * on this communicator's machines, with the network's parameters from the
 * topology (TOPOCOLL_BANDWIDTH where it gives no rate).  A phase schedule
 * only where the model says it is faster than the MPI's own. */
static int model_choice(comm_plan *cp, long long block, char *why, size_t len)
{
    if (!cp->modelled) {
        tc_plan_options opt = {1, pmpi_cfg.fanout, NULL, pmpi_cfg.sync_depth, pmpi_cfg.phase_order, pmpi_cfg.bandwidth};
        if (tc_model_auto_features(cp->topo, pmpi_cfg.bandwidth > 0 ? pmpi_cfg.bandwidth : TC_DEFAULT_BANDWIDTH, &opt,
                                   cp->features) != TC_OK)
            pmpi_fatal("auto: the model failed: %s%s", tc_error_message(), "");
        cp->modelled = 1;
    }
    double t[2];
    int pick = tc_model_auto_choice(cp->features, (double)block, t);
    snprintf(why, len, "auto: model (%s): %s predicted %.3g ms, faraj-yuan %.3g ms",
             pmpi_cfg.tuning ? "TOPOCOLL_TUNING has no rules for this size" : "no TOPOCOLL_TUNING", NATIVE, t[0] * 1e3,
             t[1] * 1e3);
    return pick;
}

/* The algorithm for one call (registry index, -1 native) and the parameters
 * a tuning rule gives; why says which rule chose it.  Every rank of comm
 * reaches the same answer (same block size, same inputs). */
static int choose(comm_plan *cp, long long block, long long *segment_size, int *fanout, char *why, size_t len)
{
    *segment_size = pmpi_cfg.segment_size;
    *fanout = pmpi_cfg.fanout;
    why[0] = '\0';
    if (cp->too_many) {
        snprintf(why, len, "%s", cp->reason);
        return -1;
    }
    if (!cp->is_auto) {
        if (cp->fixed >= 0 && block < pmpi_cfg.min_bytes) {
            snprintf(why, len, "TOPOCOLL_ALLTOALL_MIN_BYTES=%lld", pmpi_cfg.min_bytes);
            return -1;
        }
        snprintf(why, len, "TOPOCOLL_ALLTOALL=%s", pmpi_cfg.algorithm);
        return cp->fixed;
    }
    if (block < pmpi_cfg.min_bytes) {
        snprintf(why, len, "TOPOCOLL_ALLTOALL_MIN_BYTES=%lld", pmpi_cfg.min_bytes);
        return -1;
    }
    const tc_tuning_rule *rule = NULL;
    if (pmpi_cfg.tuning && tc_tuning_select(pmpi_cfg.tuning, cp->size, block, &rule) == TC_OK) {
        if (rule->segment_size > 0) *segment_size = rule->segment_size;
        if (rule->fanout > 0) *fanout = rule->fanout;
        snprintf(why, len, "auto: TOPOCOLL_TUNING %s:%d", tc_tuning_file(pmpi_cfg.tuning), rule->line);
        return rule->algorithm;
    }
    /* a sub-communicator of a size the file has no rules for (the job's own
     * size was checked at start): the model decides, as without a file */
    if (!cp->topo) {
        snprintf(why, len, "auto: %s", cp->reason[0] ? cp->reason : "the machines are unknown");
        return -1;
    }
    return model_choice(cp, block, why, len);
}

/* TOPOCOLL_CHECK=1 (debug): the verifiers on what is about to run -- every
 * block delivered, the algorithm's contention promise, and the syncs
 * ordering every shared link without a deadlock; the job stops otherwise. */
static void check_plan(int algorithm, const tc_topology *tree, const tc_schedule *s, int me)
{
    const char *name = tc_algorithm_name(algorithm);
    tc_verify_report vr;
    tc_sync_report sr;
    if (tc_schedule_part_rank(s) >= 0) {   /* a part: every rank's, joined here, is the schedule checked */
        int p = tc_topology_num_machines(tree);
        tc_schedule **parts = (tc_schedule **)calloc((size_t)p, sizeof *parts), *whole = NULL;
        tc_plan_options opt = {1, pmpi_cfg.fanout, NULL, pmpi_cfg.sync_depth, pmpi_cfg.phase_order, pmpi_cfg.bandwidth};
        if (!parts) pmpi_fatal("TOPOCOLL_CHECK: out of memory%s%s", "", "");
        for (int r = 0; r < p; r++)
            if (tc_alltoall_plan_rank(name, tree, &opt, r, &parts[r]) != TC_OK)
                pmpi_fatal("TOPOCOLL_CHECK: %s: %s", name, tc_error_message());
        if (tc_schedule_num_ops(parts[me]) != tc_schedule_num_ops(s) || tc_schedule_num_syncs(parts[me]) != tc_schedule_num_syncs(s))
            pmpi_fatal("TOPOCOLL_CHECK: %s: %s", name, "this rank's part differs from its replanning");
        if (tc_schedule_from_parts((const tc_schedule *const *)parts, p, &whole) != TC_OK)
            pmpi_fatal("TOPOCOLL_CHECK: %s: %s", name, tc_error_message());
        for (int r = 0; r < p; r++) tc_schedule_destroy(parts[r]);
        free(parts);
        check_plan(algorithm, tree, whole, me);
        tc_schedule_destroy(whole);
        return;
    }
    if (tc_schedule_verify(s, tree, &vr) != TC_OK) pmpi_fatal("TOPOCOLL_CHECK: %s: %s", name, tc_error_message());
    if (!vr.complete || (!vr.contention_free && tc_algorithm_properties(algorithm) & TC_PROP_CONTENTION_FREE))
        pmpi_fatal("TOPOCOLL_CHECK: %s: %s", name, vr.problem);
    if (!tc_schedule_num_syncs(s)) return;
    if (tc_schedule_verify_syncs(s, tree, pmpi_cfg.sync_depth, &sr) != TC_OK)
        pmpi_fatal("TOPOCOLL_CHECK: %s: %s", name, tc_error_message());
    if (!sr.ordered || !sr.acyclic) pmpi_fatal("TOPOCOLL_CHECK: %s: %s", name, sr.problem);
}

/* TOPOCOLL_PLAN: this rank plans only its part of the algorithm's schedule. */
static int per_rank(const comm_plan *cp, int algorithm)
{
    if (!tc_algorithm_plans_per_rank(algorithm) || pmpi_cfg.plan == PMPI_PLAN_WHOLE) return 0;
    return pmpi_cfg.plan == PMPI_PLAN_RANK || cp->size > TC_PLAN_WHOLE_MAX_RANKS ||
           (long long)cp->size * (cp->size - 1) > TC_MAX_PLAN_MESSAGES;
}

/* The executor state for blocks of `block` bytes under `algorithm`: planned
 * on first use of its segment count and fan-out; collective over comm
 * (every rank sees the same block and choice). */
static tcx_state *state_for(comm_plan *cp, MPI_Comm comm, int algorithm, long long block, long long segment_size,
                            int fanout)
{
    const tc_topology *tree = tree_for(cp, algorithm);
    int segments = 1;
    if (tc_algorithm_params(algorithm) & TC_PARAM_SEGMENTS)
        segments = tc_plan_segments(block, segment_size, tc_topology_num_machines(tree));
    if (!(tc_algorithm_params(algorithm) & TC_PARAM_FANOUT)) fanout = 0;
    for (int i = 0; i < cp->nentries; i++)
        if (cp->entry[i].algorithm == algorithm && cp->entry[i].segments == segments && cp->entry[i].fanout == fanout)
            return &cp->entry[i].state;
    if (tc_algorithm_params(algorithm) & TC_PARAM_CLUSTERS && pmpi_cfg.clusters && !cp->clusters)
        cp->clusters = pmpi_comm_clusters(cp->size, cp->world);
    int me;
    PMPI_Comm_rank(comm, &me);
    if (pmpi_cfg.pace && tc_algorithm_runs_with_syncs(algorithm) && !cp->have_rates) {
        cp->rate_to = pmpi_pace_rates(tree, cp->size, me);
        cp->have_rates = 1;
    }
    plan_entry *e;
    if (cp->nentries < PLANS_PER_COMM) e = &cp->entry[cp->nentries++];
    else { e = &cp->entry[cp->next]; cp->next = (cp->next + 1) % PLANS_PER_COMM; entry_free(e); }
    tc_plan_options opt = {segments, fanout, cp->clusters, pmpi_cfg.sync_depth, pmpi_cfg.phase_order, pmpi_cfg.bandwidth};
    if (per_rank(cp, algorithm)) {
        if (tc_alltoall_plan_rank(tc_algorithm_name(algorithm), tree, &opt, me, &e->sched) != TC_OK)
            pmpi_fatal("planning this rank's part of %s failed: %s", tc_algorithm_name(algorithm), tc_error_message());
        say(comm, "%s planned per rank (TOPOCOLL_PLAN=%s)", tc_algorithm_name(algorithm),
            pmpi_cfg.plan == PMPI_PLAN_RANK ? "rank" : "auto", cp->size);
    } else if (tc_alltoall_plan_with_options(tc_algorithm_name(algorithm), tree, &opt, 1, &e->sched) != TC_OK)
        pmpi_fatal("planning %s failed: %s", tc_algorithm_name(algorithm), tc_error_message());
    tc_schedule *s = e->sched;
    if (pmpi_cfg.check) check_plan(algorithm, tree, s, me);
    e->algorithm = algorithm;
    e->segments = segments;
    e->fanout = fanout;
    pmpi_tables(s, &e->tables);
    if (tcx_state_init(&e->state, &e->tables, comm) != MPI_SUCCESS)
        pmpi_fatal("could not set up the executor for %s%s", tc_algorithm_name(algorithm), "");
    pmpi_state_options(&e->state, tc_algorithm_runs_with_syncs(algorithm) ? cp->rate_to : NULL);
    if (!pmpi_cfg.pace_lead_given) e->state.pace.lead = tc_pace_lead(algorithm, tree, pmpi_cfg.bandwidth);
    if (pmpi_cfg.trace) {
        if (!tracebuf.mem) tracebuf.mem = open_memstream(&tracebuf.text, &tracebuf.len);
        e->state.trace = trace_event;
        e->state.trace_ctx = &tracebuf;
    }
    return &e->state;
}

void pmpi_state_options(tcx_state *st, const double *rate_to)
{
    st->pace.rate_to = rate_to;
    st->pace.lead = pmpi_cfg.pace_lead;
    st->pace.lead_share = pmpi_cfg.pace_lead_given ? 0 : pmpi_cfg.pace_lead_share / 100.0;
    st->nap = pmpi_cfg.nap > 0 ? pmpi_nap : NULL;
    st->nap_max = pmpi_cfg.nap;
    st->pace.piece_bytes = (int)(pmpi_cfg.piece_size < INT_MAX ? pmpi_cfg.piece_size : INT_MAX);
}

static comm_plan *plan_of(MPI_Comm comm)
{
    comm_plan *cp = (comm_plan *)pmpi_cached(comm, &a2a.keyval, delete_plan);
    if (cp) return cp;
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
    long long block = (long long)tsize * recvcount, segment_size;
    int fanout;
    char why[PMPI_NAME_LEN * 2 + 256];
    int algorithm = choose(cp, block, &segment_size, &fanout, why, sizeof why);
    if (algorithm >= 0 && !tree_for(cp, algorithm)) {     /* a tuning rule's topology-aware algorithm, machines unknown */
        snprintf(why + strlen(why), sizeof why - strlen(why), "; %s needs the machines: %s", tc_algorithm_name(algorithm),
                 cp->reason);
        algorithm = -1;
    }
    unsigned char *said = &cp->said[algorithm + 1];
    if (!*said) {   /* the first call each choice is made, with its reason */
        char what[192], size_text[32];
        snprintf(size_text, sizeof size_text, "%lld", block);
        if (algorithm < 0)
            snprintf(what, sizeof what, "%s for blocks of %s bytes", NATIVE, size_text);
        else
            snprintf(what, sizeof what, "%s%s for blocks of %s bytes", tc_algorithm_name(algorithm),
                     !needs_topology(algorithm) ? "" : cp->shared ? " (several ranks per machine: machines as switches)"
                                                                  : " (one rank per machine)", size_text);
        say(comm, "%s (%s)", what, why, cp->size);
        *said = 1;
    }
    if (algorithm < 0) {
        count(comm, -1);
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    count(comm, algorithm);
    tracebuf.call++;
    tcx_state *st = state_for(cp, comm, algorithm, block, segment_size, fanout);
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
