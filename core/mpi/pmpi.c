/*
 * libtopocoll_pmpi: MPI_Alltoall through topocoll, as a PMPI library
 * (LD_PRELOAD it, or link it before the MPI).  The variables it reads are
 * those of docs/interfaces.md: TOPOCOLL_TOPOLOGY, TOPOCOLL_ALLTOALL,
 * TOPOCOLL_ALLTOALL_MIN_BYTES, TOPOCOLL_RANK_MAP, TOPOCOLL_STATS,
 * TOPOCOLL_VERBOSE; and the algorithms' parameters (the registry's
 * TC_PARAM_*): TOPOCOLL_SEGMENT_SIZE, TOPOCOLL_FANOUT, TOPOCOLL_CLUSTERS.
 *
 * Several ranks on one machine: the machine is planned as a small switch
 * holding its ranks (tc_topology_expand), and `auto` picks faraj-yuan on
 * that tree as it does for one rank a machine.
 *
 * On a communicator's first MPI_Alltoall every rank names its machine
 * (TOPOCOLL_RANK_MAP or its processor name), the names are gathered, and the
 * plan for the machines it spans, in its rank order, is cached on the
 * communicator (an attribute, freed with it).  Every rank reaches the same
 * decision from the same gathered names, so all take the same path.
 */
#define TCX(fn) PMPI_##fn
#include "tc_exec.h"
#include "pmpi_shared.h"
#include "topocoll/topocoll.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NAME_LEN 256
/* Pacing needs a clock that runs with the data: SMPI's simulated one shares
 * bandwidth fluidly and has nothing to pace. */
#ifndef TOPOCOLL_DEFAULT_PACE
#ifdef TOPOCOLL_SMPI
#define TOPOCOLL_DEFAULT_PACE 0
#else
#define TOPOCOLL_DEFAULT_PACE 1
#endif
#endif
/* The share of a link's rate the link clock counts as MPI data over
 * TCP/IPv4 on Ethernet: 1448 payload bytes (timestamps on) in a 1514-byte
 * frame, less the ACKs of the data going the other way (a 66-byte frame for
 * every two), is 0.936 of a rate that counts frames (the emulated cluster's
 * shapers), 0.915 on a real wire (preamble, FCS and gap too).  0.92 measured
 * best on the emulated cluster (12 machines, 2026-11-22, alternating rounds:
 * 733-746 ms at 256 KB against 742-751 for 0.935 and 767-778 for 0.95,
 * 750-752 for 0.90; at 128 KB 368-370 against 369-373 for 0.95): a clock a
 * little slower than the data leaves a late message room instead of an
 * overlap with the next one. */
#define TOPOCOLL_TCP_GOODPUT 0.92

/* Longest nap of a waiting rank (seconds; 0: the MPI's own waits, which
 * spin and answer soonest on dedicated cores).  Where ranks outnumber cores
 * napping pays: on the emulated cluster (12-16 ranks on 2 cores, which
 * passes TOPOCOLL_NAP=200us) it left a fifth of the CPU idle instead of none
 * and ran 1-6 % faster (docs/pacing.md). */
#ifndef TOPOCOLL_DEFAULT_NAP
#define TOPOCOLL_DEFAULT_NAP 0
#endif

#ifndef TOPOCOLL_DEFAULT_SYNC_DEPTH
#define TOPOCOLL_DEFAULT_SYNC_DEPTH 1
#endif
#define NATIVE "native"
#define MAX_SEGMENTS 256
#define PLANS_PER_COMM 4

_Static_assert(sizeof(tc_op) == TCX_OP_INTS * sizeof(int), "the executor reads tc_op as TCX_OP_INTS ints");

static struct {
    int loaded;                 /* configuration read (first call) */
    int enabled;                /* TOPOCOLL_TOPOLOGY set and readable */
    tc_topology *topo;
    char algorithm[64];         /* a registry name, "native" or "auto" */
    long long min_bytes;
    int sync_depth;             /* TOPOCOLL_SYNC_DEPTH: messages a link may carry at once */
    long long segment_size;     /* TOPOCOLL_SEGMENT_SIZE */
    int pace;                   /* TOPOCOLL_PACE: auto (1) or off (0) */
    double bandwidth;           /* TOPOCOLL_BANDWIDTH: links the topology gives none (0: unknown) */
    double pace_lead;           /* TOPOCOLL_PACE_LEAD, seconds */
    long long piece_size;       /* TOPOCOLL_PIECE_SIZE, bytes */
    double nap;                 /* TOPOCOLL_NAP: longest nap while waiting, seconds (0: spin) */
    int phase_order;            /* TOPOCOLL_PHASE_ORDER: TC_PHASE_ORDER_* */
    int fanout;                 /* TOPOCOLL_FANOUT */
    char *clusters;             /* TOPOCOLL_CLUSTERS: NUL-separated, one per world rank */
    size_t clusters_count;
    int verbose, stats;
    int check;                  /* TOPOCOLL_CHECK=1: verify every plan and its syncs before running it */
    char *rank_map;             /* NUL-separated names, one per world rank */
    size_t rank_map_count;
    int keyval;
    long long *calls;           /* per registry index; the last one is native */
    long long paced[2];         /* steps whose syncs were paced, messages sent in pieces (this rank) */
} g = {.keyval = MPI_KEYVAL_INVALID};

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

static int world_rank(void)
{
    int r = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

static void fatal(const char *fmt, const char *a, const char *b)
{
    if (world_rank() == 0) {
        fprintf(stderr, "topocoll: error: ");
        fprintf(stderr, fmt, a, b);
        fputc('\n', stderr);
    }
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

/* A variable naming one thing per world rank (a hostlist): expanded, or the
 * job stops naming the variable. */
static void per_rank(const char *var, const char *value, const char *what, char **names, size_t *count)
{
    int size;
    char a[96], b[64];
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (tc_hostlist_expand(value, names, count) != TC_OK) fatal("%s: %s", var, tc_error_message());
    if ((int)*count != size) {
        snprintf(a, sizeof a, "%s lists %zu %s", var, *count, what);
        snprintf(b, sizeof b, "%d", size);
        fatal("%s but MPI_COMM_WORLD has %s ranks: it needs one name for each rank", a, b);
    }
}

void tcp_delete_cached(int keyval)
{
    if (keyval == MPI_KEYVAL_INVALID) return;
    /* what is cached on the predefined communicators goes before the MPI */
    MPI_Comm predefined[2] = {MPI_COMM_WORLD, MPI_COMM_SELF};
    for (int i = 0; i < 2; i++) {
        void *attr;
        int found = 0;
        PMPI_Comm_get_attr(predefined[i], keyval, &attr, &found);
        if (found) PMPI_Comm_delete_attr(predefined[i], keyval);
    }
}

/* A size in bytes (tc_parse_size: "16384", "16K", "1M"), at least `least`,
 * from variable var's text; dflt when unset. */
static long long env_size(const char *var, const char *text, long long dflt, long long least, const char *example)
{
    if (!text || !*text) return dflt;
    long long v = 0;
    char what[160], range[96];
    snprintf(what, sizeof what, "%s=%s", var, text);
    if (tc_parse_size(text, &v) != TC_OK || v < least) {
        snprintf(range, sizeof range, "from %lld to 1T, such as %s", least, example);
        fatal("%s: expected a size in bytes %s", what, range);
    }
    return v;
}

/* A whole number >= 1 from variable var's text; dflt when unset. */
static int env_whole(const char *var, const char *text, int dflt)
{
    if (!text || !*text) return dflt;
    char *end;
    long v = strtol(text, &end, 10);
    if (*end || v < 1 || v > INT_MAX) fatal("%s=%s: expected a whole number >= 1", var, text);
    return (int)v;
}

/* A time >= 0 (seconds; bare numbers are seconds) from variable var's text;
 * dflt when unset. */
static double env_time(const char *var, const char *text, double dflt, const char *example)
{
    double v = dflt;
    char what[160];
    snprintf(what, sizeof what, "%s=%s", var, text ? text : "");
    if (text && *text && (tc_parse_time(text, 1, &v) != TC_OK || v < 0))
        fatal("%s: expected a time such as %s", what, example);
    return v;
}

/* The index of variable var's text among words (NULL-terminated); dflt when
 * unset. */
static int env_word(const char *var, const char *text, const char *const *words, int dflt)
{
    if (!text || !*text) return dflt;
    char what[160], list[160] = "";
    for (int i = 0; words[i]; i++) {
        if (!strcmp(text, words[i])) return i;
        if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, words[i], sizeof list - strlen(list) - 1);
    }
    snprintf(what, sizeof what, "%s=%s", var, text);
    fatal("%s: expected one of %s", what, list);
    return dflt;
}

static void load_config(void)
{
    if (g.loaded) return;
    g.loaded = 1;
    const char *path = getenv("TOPOCOLL_TOPOLOGY");
    const char *alg = getenv("TOPOCOLL_ALLTOALL");
    const char *min = getenv("TOPOCOLL_ALLTOALL_MIN_BYTES");
    const char *map = getenv("TOPOCOLL_RANK_MAP");
    const char *depth = getenv("TOPOCOLL_SYNC_DEPTH");
    g.verbose = getenv("TOPOCOLL_VERBOSE") && !strcmp(getenv("TOPOCOLL_VERBOSE"), "1");
    g.stats = getenv("TOPOCOLL_STATS") && !strcmp(getenv("TOPOCOLL_STATS"), "1");
    g.check = getenv("TOPOCOLL_CHECK") && !strcmp(getenv("TOPOCOLL_CHECK"), "1");
    g.calls = (long long *)calloc((size_t)tc_algorithm_count() + 1, sizeof(long long));
    if (path && *path && tc_topology_load(path, TC_FORMAT_AUTO, &g.topo) != TC_OK)
        fatal("TOPOCOLL_TOPOLOGY: %s%s", tc_error_message(), "");
    tcp_coll_config();
    if (!path || !*path) return;   /* unset: every MPI_Alltoall goes to the MPI */
    snprintf(g.algorithm, sizeof g.algorithm, "%s", alg && *alg ? alg : "auto");
    if (strcmp(g.algorithm, "auto") && strcmp(g.algorithm, NATIVE) && tc_algorithm_find(g.algorithm) < 0) {
        char list[512] = "";
        for (int i = 0; i < tc_algorithm_count(); i++) {
            strncat(list, tc_algorithm_name(i), sizeof list - strlen(list) - 1);
            strncat(list, ", ", sizeof list - strlen(list) - 1);
        }
        strncat(list, "native, auto", sizeof list - strlen(list) - 1);
        fatal("TOPOCOLL_ALLTOALL=%s is not an algorithm; valid: %s", g.algorithm, list);
    }
    g.min_bytes = env_size("TOPOCOLL_ALLTOALL_MIN_BYTES", min, 0, 0, "4096 or 4K");
    g.sync_depth = env_whole("TOPOCOLL_SYNC_DEPTH", depth, TOPOCOLL_DEFAULT_SYNC_DEPTH);
    const char *seg_var = tc_param_variable(TC_PARAM_SEGMENTS), *fan_var = tc_param_variable(TC_PARAM_FANOUT);
    const char *clusters_var = tc_param_variable(TC_PARAM_CLUSTERS);
    const char *seg = getenv(seg_var), *fan = getenv(fan_var), *clusters = getenv(clusters_var);
    g.segment_size = env_size(seg_var, seg, TC_DEFAULT_SEGMENT_SIZE, 1, "16384 or 16K");
    g.fanout = env_whole(fan_var, fan, TC_DEFAULT_FANOUT);
    const char *pace = getenv("TOPOCOLL_PACE"), *bw = getenv("TOPOCOLL_BANDWIDTH");
    const char *lead = getenv("TOPOCOLL_PACE_LEAD"), *piece = getenv("TOPOCOLL_PIECE_SIZE");
    static const char *const pace_words[] = {"off", "auto", "on", NULL};
    g.pace = env_word("TOPOCOLL_PACE", pace, pace_words, TOPOCOLL_DEFAULT_PACE) != 0;
    /* one unit rule with the topology files: a bare number is Mbit/s */
    if (bw && *bw && tc_parse_rate(bw, TC_BARE_RATE_UNIT, &g.bandwidth) != TC_OK)
        fatal("TOPOCOLL_BANDWIDTH=%s: %s (a bare number is Mbit/s)", bw, tc_error_message());
    g.pace_lead = env_time("TOPOCOLL_PACE_LEAD", lead, 0.0005, "2ms");
    g.piece_size = env_size("TOPOCOLL_PIECE_SIZE", piece, 64000, 1, "64000 or 32K");
    g.nap = env_time("TOPOCOLL_NAP", getenv("TOPOCOLL_NAP"), TOPOCOLL_DEFAULT_NAP, "200us, or 0 to spin");
#ifdef TOPOCOLL_SMPI
    g.nap = 0;   /* a nap would pass real time, not simulated time */
#endif
    static const char *const order_words[] = TC_PHASE_ORDER_NAMES;
    g.phase_order = env_word("TOPOCOLL_PHASE_ORDER", getenv("TOPOCOLL_PHASE_ORDER"), order_words, TC_PHASE_ORDER_GROUPED);
    if (clusters && *clusters)
        per_rank(clusters_var, clusters, "clusters", &g.clusters, &g.clusters_count);
    if (map && *map) per_rank("TOPOCOLL_RANK_MAP", map, "machines", &g.rank_map, &g.rank_map_count);
    g.enabled = 1;
}

int tcp_world_rank(void) { return world_rank(); }
void tcp_load_config(void) { load_config(); }
void tcp_fatal(const char *fmt, const char *a, const char *b) { fatal(fmt, a, b); }
const tc_topology *tcp_topology(void) { return g.topo; }
int tcp_verbose(void) { return g.verbose; }
int tcp_stats(void) { return g.stats; }

static void my_machine(char *name)
{
    if (g.rank_map) {
        const char *p = g.rank_map;
        for (int r = world_rank(); r > 0; r--) p += strlen(p) + 1;
        snprintf(name, NAME_LEN, "%s", p);
        return;
    }
    int len = 0;
    char buf[MPI_MAX_PROCESSOR_NAME];
    PMPI_Get_processor_name(buf, &len);
    snprintf(name, NAME_LEN, "%s", buf);
}

void tcp_my_machine(char *name) { my_machine(name); }

/* Topology machine rank of a name: exact, else up to the first dot. */
static int machine_rank(const char *name)
{
    int node = tc_topology_node_find(g.topo, name);
    if (node < 0) {
        char short_name[NAME_LEN];
        snprintf(short_name, sizeof short_name, "%s", name);
        char *dot = strchr(short_name, '.');
        if (dot) { *dot = '\0'; node = tc_topology_node_find(g.topo, short_name); }
    }
    return node < 0 ? -1 : tc_topology_machine_rank(g.topo, node);
}

int tcp_machine_rank(const char *name) { return g.topo ? machine_rank(name) : -1; }

static void say(MPI_Comm comm, const char *fmt, const char *a, const char *b, int n)
{
    int r;
    PMPI_Comm_rank(comm, &r);
    if (!g.verbose || r != 0) return;
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

/* The communicator's ranks as the machines of a tree, rank r = machine r:
 * restricted to its machines, each machine with several ranks expanded into
 * a switch holding them.  NULL (and *why filled) when it cannot be. */
static tc_topology *ranks_topology(const int *mach, int size, char *why, size_t len)
{
    int *distinct = (int *)malloc(sizeof(int) * (size_t)size), *count = (int *)calloc((size_t)size, sizeof(int));
    int *index = (int *)malloc(sizeof(int) * (size_t)size), *order = (int *)malloc(sizeof(int) * (size_t)size);
    int *first = (int *)malloc(sizeof(int) * (size_t)size);
    int nd = 0, shared = 0;
    tc_topology *t1 = NULL, *t2 = NULL, *t3 = NULL;
    for (int r = 0; r < size; r++) {
        int k = 0;
        while (k < nd && distinct[k] != mach[r]) k++;
        if (k == nd) distinct[nd++] = mach[r];
        index[r] = count[k]++;
        order[r] = k;
        if (count[k] > 1) shared = 1;
    }
    if (tc_topology_restrict(g.topo, distinct, nd, &t1) != TC_OK) { snprintf(why, len, "%s", tc_error_message()); goto out; }
    if (!shared) { t3 = t1; t1 = NULL; goto out; }
    if (tc_topology_expand(t1, count, &t2) != TC_OK) { snprintf(why, len, "%s", tc_error_message()); goto out; }
    /* expanded ranks go machine by machine: comm rank r is leaf first[k] + index[r] */
    for (int k = 0, at = 0; k < nd; k++) { first[k] = at; at += count[k]; }
    for (int r = 0; r < size; r++) distinct[r] = first[order[r]] + index[r];
    if (tc_topology_restrict(t2, distinct, size, &t3) != TC_OK) snprintf(why, len, "%s", tc_error_message());
out:
    tc_topology_destroy(t1);
    tc_topology_destroy(t2);
    free(distinct); free(count); free(index); free(order); free(first);
    return t3;
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
        tc_topology_path_cost(t, me, r, g.bandwidth > 0 ? g.bandwidth : unknown, 0, &lat, &bw);
        if (bw > unknown) { rate[r] = bw * TOPOCOLL_TCP_GOODPUT; any = 1; }
    }
    if (!any) { free(rate); rate = NULL; }
    return rate;
}

/* Decide what a communicator uses; collective over comm. */
static comm_plan *make_plan(MPI_Comm comm)
{
    int size, me, wr = world_rank();
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &me);
    comm_plan *cp = (comm_plan *)calloc(1, sizeof *cp);
    cp->algorithm = -1;
    char mine[NAME_LEN];
    memset(mine, 0, sizeof mine);
    my_machine(mine);
    char *names = (char *)malloc((size_t)size * NAME_LEN);
    int *ranks = (int *)malloc(sizeof(int) * (size_t)size), *world = (int *)malloc(sizeof(int) * (size_t)size);
    PMPI_Allgather(mine, NAME_LEN, MPI_CHAR, names, NAME_LEN, MPI_CHAR, comm);
    PMPI_Allgather(&wr, 1, MPI_INT, world, 1, MPI_INT, comm);
    const char *reason = NULL;
    char why[NAME_LEN * 2 + 128];
    int shared = 0;
    for (int r = 0; r < size && !reason; r++) {
        ranks[r] = machine_rank(names + (size_t)r * NAME_LEN);
        if (ranks[r] < 0) {
            snprintf(why, sizeof why, "rank %d's machine '%s' is not in the topology", r, names + (size_t)r * NAME_LEN);
            reason = why;
        }
        for (int q = 0; q < r && !reason && !shared; q++) shared = ranks[q] == ranks[r];
    }
    int want = !strcmp(g.algorithm, "auto") ? tc_algorithm_find("faraj-yuan") : tc_algorithm_find(g.algorithm);
    if (want >= 0 && (long long)size * (size - 1) > TC_MAX_PLAN_MESSAGES) {
        char most[32];
        snprintf(most, sizeof most, "%lld", (long long)TC_MAX_PLAN_MESSAGES);
        say(comm, "native: too many ranks to plan the whole schedule (more than %s messages)%s", most, "", size);
    } else if (want < 0) {
        say(comm, "native (TOPOCOLL_ALLTOALL=%s)%s", g.algorithm, "", size);
    } else if (tc_algorithm_properties(want) & (TC_PROP_TOPOLOGY_AWARE) ||
               tc_algorithm_params(want) & TC_PARAM_CLUSTERS) {
        if (reason) say(comm, "native: %s; %s needs the topology", reason, tc_algorithm_name(want), size);
        else if (!(cp->topo = ranks_topology(ranks, size, why, sizeof why)))
            say(comm, "native: %s%s", why, "", size);
    } else {
        char spec[32];
        snprintf(spec, sizeof spec, "%d", size);   /* the plan depends on the size only */
        tc_topology_synthetic(spec, &cp->topo);
    }
    if (cp->topo && g.clusters && tc_algorithm_params(want) & TC_PARAM_CLUSTERS) {
        /* cluster labels of the communicator's ranks, numbered by first appearance */
        cp->clusters = (int *)malloc(sizeof(int) * (size_t)size);
        const char **label = (const char **)malloc(sizeof(char *) * (size_t)size);
        for (int r = 0; r < size; r++) {
            const char *q = g.clusters;
            for (int w = world[r]; w > 0; w--) q += strlen(q) + 1;
            label[r] = q;
            cp->clusters[r] = r;
            for (int k = 0; k < r; k++)
                if (!strcmp(label[k], q)) { cp->clusters[r] = cp->clusters[k]; break; }
        }
        free(label);
    }
    if (cp->topo && g.pace && tc_algorithm_runs_with_syncs(want)) cp->rate_to = pace_rates(cp->topo, size, me);
    if (cp->topo) {
        int aware = tc_algorithm_properties(want) & TC_PROP_TOPOLOGY_AWARE || tc_algorithm_params(want) & TC_PARAM_CLUSTERS;
        cp->algorithm = want;
        say(comm, "%s%s", tc_algorithm_name(want),
            !aware ? "" : shared ? " (several ranks per machine: machines as switches)" : " (one rank per machine)", size);
    }
    free(names);
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
    if (tc_schedule_verify(s, cp->topo, &vr) != TC_OK) fatal("TOPOCOLL_CHECK: %s: %s", name, tc_error_message());
    if (!vr.complete || (!vr.contention_free && tc_algorithm_properties(cp->algorithm) & TC_PROP_CONTENTION_FREE))
        fatal("TOPOCOLL_CHECK: %s: %s", name, vr.problem);
    if (!tc_schedule_num_syncs(s)) return;
    if (tc_schedule_verify_syncs(s, cp->topo, g.sync_depth, &sr) != TC_OK)
        fatal("TOPOCOLL_CHECK: %s: %s", name, tc_error_message());
    if (!sr.ordered || !sr.acyclic) fatal("TOPOCOLL_CHECK: %s: %s", name, sr.problem);
}

/* The executor state for blocks of `block` bytes: planned on first use of
 * its segment count; collective over comm (every rank sees the same block). */
static tcx_state *state_for(comm_plan *cp, MPI_Comm comm, long long block)
{
    int segments = 1;
    if (tc_algorithm_params(cp->algorithm) & TC_PARAM_SEGMENTS) {
        long long k = (block + g.segment_size - 1) / g.segment_size;
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
    tc_plan_options opt = {segments, g.fanout, cp->clusters, g.sync_depth, g.phase_order};
    if (tc_alltoall_plan_with_options(tc_algorithm_name(cp->algorithm), cp->topo, &opt, 1, &e->sched) != TC_OK)
        fatal("planning %s failed: %s", tc_algorithm_name(cp->algorithm), tc_error_message());
    tc_schedule *s = e->sched;
    if (g.check) check_plan(cp, s);
    e->segments = segments;
    e->tables = (tcx_schedule){tc_schedule_algorithm(s), tc_schedule_num_ranks(s), tc_schedule_num_steps(s),
                               (const long long *)tc_schedule_step_begins(s), (const int *)tc_schedule_ops(s),
                               tc_schedule_blocks(s), tc_schedule_num_syncs(s), (const long long *)tc_schedule_syncs(s)};
    if (tcx_state_init(&e->state, &e->tables, comm) != MPI_SUCCESS)
        fatal("could not set up the executor for %s%s", tc_algorithm_name(cp->algorithm), "");
    e->state.rate_to = cp->rate_to;
    e->state.pace_lead = g.pace_lead;
    e->state.nap = g.nap > 0 ? nap : NULL;
    e->state.nap_max = g.nap;
    e->state.piece_bytes = (int)(g.piece_size < INT_MAX ? g.piece_size : INT_MAX);
    if (getenv("TOPOCOLL_TRACE") && *getenv("TOPOCOLL_TRACE")) {
        if (!tracebuf.mem) tracebuf.mem = open_memstream(&tracebuf.text, &tracebuf.len);
        e->state.trace = trace_event;
        e->state.trace_ctx = &tracebuf;
    }
    return &e->state;
}

static comm_plan *plan_of(MPI_Comm comm)
{
    if (g.keyval == MPI_KEYVAL_INVALID)
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_plan, &g.keyval, NULL);
    comm_plan *cp = NULL;
    int found = 0;
    PMPI_Comm_get_attr(comm, g.keyval, &cp, &found);
    if (found) return cp;
    cp = make_plan(comm);
    PMPI_Comm_set_attr(comm, g.keyval, cp);
    return cp;
}

static void count(MPI_Comm comm, int algorithm)
{
    int r;
    PMPI_Comm_rank(comm, &r);
    if (r == 0 && g.calls) g.calls[algorithm < 0 ? tc_algorithm_count() : algorithm]++;
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm)
{
    load_config();
    int inter = 0;
    if (!g.enabled || comm == MPI_COMM_NULL) {
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
    if (cp->algorithm < 0 || block < g.min_bytes) {
        if (cp->algorithm >= 0 && !cp->said_small) {
            int size;
            PMPI_Comm_size(comm, &size);
            char a[32], b[32];
            snprintf(a, sizeof a, "%lld", block);
            snprintf(b, sizeof b, "%lld", g.min_bytes);
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
    g.paced[0] += st->paced_steps;
    g.paced[1] += st->split_messages;
    st->paced_steps = st->split_messages = 0;
    return rc;
}

/* The library is built for one MPI's ABI (Open MPI's handles are pointers,
 * MPICH's integers): preloaded into a program of the other MPI, its first
 * collective would crash.  MPI_Init is the first place to tell, by the
 * library's version text (both MPIs share that function's signature). */
#if defined(OMPI_MAJOR_VERSION) && !defined(TOPOCOLL_SMPI)
#define BUILT_FOR "Open MPI"
#elif defined(MPICH_VERSION) && !defined(TOPOCOLL_SMPI)
#define BUILT_FOR "MPICH"
#endif
static void check_library(void)
{
#ifdef BUILT_FOR
    static char version[8192];   /* MPICH's MPI_MAX_LIBRARY_VERSION_STRING, the larger */
    int len = 0;
    if (PMPI_Get_library_version(version, &len) != MPI_SUCCESS || strstr(version, BUILT_FOR)) return;
    const char *other = strstr(version, "Open MPI") ? "openmpi" : strstr(version, "MPICH") ? "mpich" : NULL;
    const char *rank = getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK") : getenv("PMI_RANK");
    if (!rank || !strcmp(rank, "0")) {
        char *nl = strchr(version, '\n');
        if (nl) *nl = '\0';
        fprintf(stderr, "topocoll: error: the preloaded PMPI library is built for " BUILT_FOR
                        ", but the program runs on another MPI (%.100s); preload the one built for it: %s\n",
                version, other ? (strcmp(other, "mpich") ? "$(topocoll config --pmpi-lib --mpi openmpi)"
                                                         : "$(topocoll config --pmpi-lib --mpi mpich)")
                               : "none is built for this MPI");
    }
    _exit(1);
#endif
}

#ifndef TOPOCOLL_SMPI   /* SMPI starts its processes itself */
int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) check_library();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) check_library();
    return rc;
}
#endif

int MPI_Finalize(void)
{
    load_config();   /* every rank takes part in the stats reduction below */
    tcp_delete_cached(g.keyval);
    tcp_coll_finalize();
    if (g.stats && g.calls) {
        int n = tc_algorithm_count() + 1;
        long long *total = (long long *)calloc((size_t)n, sizeof(long long));
        PMPI_Reduce(g.calls, total, n, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (world_rank() == 0)
            for (int i = 0; i < n; i++)
                if (total[i])
                    fprintf(stderr, "topocoll: alltoall %s calls=%lld\n", i < n - 1 ? tc_algorithm_name(i) : NATIVE,
                            total[i]);
        long long paced[2] = {0, 0};
        PMPI_Reduce(g.paced, paced, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (world_rank() == 0 && (paced[0] || paced[1]))
            fprintf(stderr, "topocoll: pacing steps=%lld split-messages=%lld\n", paced[0], paced[1]);
        free(total);
    }
    if (tracebuf.mem) {
        char path[4096];
        fclose(tracebuf.mem);
        snprintf(path, sizeof path, "%s.%d", getenv("TOPOCOLL_TRACE"), world_rank());
        FILE *f = fopen(path, "w");
        if (f) { fwrite(tracebuf.text, 1, tracebuf.len, f); fclose(f); }
        free(tracebuf.text);
        tracebuf.mem = NULL;
    }
    if (g.keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&g.keyval);
    tc_topology_destroy(g.topo);
    free(g.rank_map);
    free(g.clusters);
    free(g.calls);
    g.topo = NULL;
    g.rank_map = NULL;
    g.clusters = NULL;
    g.calls = NULL;
    return PMPI_Finalize();
}
