/* The PMPI library's configuration: every variable in one table (name,
 * kind, default, the field it sets), read by one function on the first call
 * that needs it.  A bad value stops the job naming the variable and value. */
#include "pmpi_shared.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Pacing needs a clock that runs with the data: SMPI's simulated one shares
 * bandwidth fluidly and has nothing to pace.  A nap would pass real time. */
#ifdef TOPOCOLL_SMPI
#define DEFAULT_PACE 0
#define SMPI_ONLY(x) x
#else
#define DEFAULT_PACE 1
#define SMPI_ONLY(x)
#endif
/* Longest nap of a waiting rank (0: the MPI's own waits, which spin and
 * answer soonest on dedicated cores); the emulated cluster, with more ranks
 * than cores, passes 200us (docs/pacing.md). */
#define DEFAULT_NAP 0.0

pmpi_config pmpi_cfg;
const char *const pmpi_coll_op_name[PMPI_COLL_OPS] = {"bcast", "reduce", "allreduce", "barrier", "gather", "scatter"};

typedef enum { FLAG, WHOLE, SIZE, TIME, RATE, WORD, TEXT } var_kind;

static const char *const pace_words[] = {"off", "auto", "on", NULL};
static const char *const order_words[] = TC_PHASE_ORDER_NAMES;
static const char *const plan_words[] = PMPI_PLAN_WORDS;

#define AT(field) offsetof(pmpi_config, field)
static const struct var {
    const char *name;       /* NULL: the variable of parameter `param` (the registry's) */
    unsigned param;
    var_kind kind;
    size_t field;
    double dflt;
    long long least, most;  /* WHOLE, SIZE */
    const char *example;
    const char *const *words;
} vars[] = {
    {"TOPOCOLL_VERBOSE", 0, FLAG, AT(verbose), 0, 0, 0, "1", NULL},
    {"TOPOCOLL_STATS", 0, FLAG, AT(stats), 0, 0, 0, "1", NULL},
    {"TOPOCOLL_CHECK", 0, FLAG, AT(check), 0, 0, 0, "1", NULL},
    {"TOPOCOLL_ALLTOALL_MIN_BYTES", 0, SIZE, AT(min_bytes), 0, 0, 0, "4096 or 4K", NULL},
    {"TOPOCOLL_ALLTOALLV_MIN_BYTES", 0, SIZE, AT(v_min_bytes), PMPI_ALLTOALLV_MIN_BYTES, 0, 0, "16K", NULL},
    {"TOPOCOLL_ALLTOALLV_PIECE_SIZE", 0, SIZE, AT(v_piece_size), 0, 0, 0, "64K, or 0 for the planner's choice", NULL},
    {NULL, TC_PARAM_SEGMENTS, SIZE, AT(segment_size), TC_DEFAULT_SEGMENT_SIZE, 1, 0, "16384 or 16K", NULL},
    {NULL, TC_PARAM_FANOUT, WHOLE, AT(fanout), TC_DEFAULT_FANOUT, 1, 1 << 30, "4", NULL},
    {"TOPOCOLL_SYNC_DEPTH", 0, WHOLE, AT(sync_depth), 1, 1, 1 << 30, "1", NULL},
    {"TOPOCOLL_PHASE_ORDER", 0, WORD, AT(phase_order), TC_PHASE_ORDER_GROUPED, 0, 0, NULL, order_words},
    {"TOPOCOLL_PLAN", 0, WORD, AT(plan), PMPI_PLAN_AUTO, 0, 0, NULL, plan_words},
    {"TOPOCOLL_PACE", 0, WORD, AT(pace), DEFAULT_PACE, 0, 0, NULL, pace_words},
    {"TOPOCOLL_BANDWIDTH", 0, RATE, AT(bandwidth), 0, 0, 0, "100Mbit or 1Gbit (a bare number is Mbit/s)", NULL},
    {"TOPOCOLL_PACE_LEAD", 0, TIME, AT(pace_lead), TC_DEFAULT_PACE_LEAD, 0, 0, "2ms", NULL},
    {"TOPOCOLL_PACE_LEAD_SHARE", 0, WHOLE, AT(pace_lead_share), TC_DEFAULT_PACE_LEAD_SHARE * 100 + 0.5, 0, 100,
     "8 (percent of a step's link time; 0: no cap)", NULL},
    {"TOPOCOLL_PIECE_SIZE", 0, SIZE, AT(piece_size), 64000, 1, 0, "64000 or 32K", NULL},
    {"TOPOCOLL_NAP", 0, TIME, AT(nap), DEFAULT_NAP, 0, 0, "200us, or 0 to spin", NULL},
    {"TOPOCOLL_TRACE", 0, TEXT, AT(trace), 0, 0, 0, NULL, NULL},
    {"TOPOCOLL_GROUPS", 0, TEXT, AT(groups), 0, 0, 0, NULL, NULL},
    {"TOPOCOLL_TUNING", 0, TEXT, AT(tuning_file), 0, 0, 0, NULL, NULL},
    {"TOPOCOLL_TWO_LEVEL_AT", 0, WHOLE, AT(two_level_at), -1, 0, PMPI_MAX_LEVELS - 1, "0 (the top)", NULL},
};

int pmpi_world_rank(void)
{
    int r = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

void pmpi_fatal(const char *fmt, const char *a, const char *b)
{
    /* one write, so that the abort of another rank cannot cut the line;
     * world rank 0 says it and stops the job at once, the others (which
     * mostly stop for the same reason) give it a second first, then say it
     * themselves: a reason only they met is not lost */
    char msg[2048], text[1900];
    snprintf(text, sizeof text, fmt, a, b);
    int n = snprintf(msg, sizeof msg, "topocoll: error: %s\n", text);
    if (pmpi_world_rank() != 0) sleep(1);
    if (write(2, msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1)) < 0) { /* nothing left to tell */ }
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

/* One variable's text into its field, or the job stops. */
static void read_var(const struct var *v, const char *name, const char *text)
{
    char *field = (char *)&pmpi_cfg + v->field, what[160], expected[256];
    snprintf(what, sizeof what, "%s=%s", name, text ? text : "");
    int given = text && *text;
    switch (v->kind) {
    case FLAG:
        *(int *)field = given && !strcmp(text, "1");
        return;
    case TEXT:
        *(const char **)field = given ? text : NULL;
        return;
    case WHOLE: {
        long long x = (long long)v->dflt;
        char *end = NULL;
        if (given) x = strtoll(text, &end, 10);
        if (given && (end == text || *end || x < v->least || x > v->most)) {
            snprintf(expected, sizeof expected, "expected a whole number from %lld to %lld, such as %s", v->least,
                     v->most, v->example);
            pmpi_fatal("%s: %s", what, expected);
        }
        *(int *)field = (int)x;
        return;
    }
    case SIZE: {
        long long x = (long long)v->dflt;
        if (given && (tc_parse_size(text, &x) != TC_OK || x < v->least)) {
            snprintf(expected, sizeof expected, "expected a size in bytes from %lld to 1T, such as %s", v->least,
                     v->example);
            pmpi_fatal("%s: %s", what, expected);
        }
        *(long long *)field = x;
        return;
    }
    case TIME:
    case RATE: {
        double x = v->dflt;
        tc_status rc = !given ? TC_OK : v->kind == TIME ? tc_parse_time(text, 1, &x)
                                                        : tc_parse_rate(text, TC_BARE_RATE_UNIT, &x);
        if (rc != TC_OK) {
            snprintf(expected, sizeof expected, "%s (expected such as %s)", tc_error_message(), v->example);
            pmpi_fatal("%s: %s", what, expected);
        }
        *(double *)field = x;
        return;
    }
    case WORD: {
        int x = (int)v->dflt;
        if (given) {
            x = -1;
            expected[0] = '\0';
            for (int i = 0; v->words[i]; i++) {
                if (!strcmp(text, v->words[i])) x = i;
                strncat(expected, i ? ", " : "expected one of ", sizeof expected - strlen(expected) - 1);
                strncat(expected, v->words[i], sizeof expected - strlen(expected) - 1);
            }
            if (x < 0) pmpi_fatal("%s: %s", what, expected);
        }
        *(int *)field = x;
        return;
    }
    }
}

/* A variable naming one thing per world rank (a hostlist), or the job stops. */
static char *per_rank(const char *var, const char *value, const char *what)
{
    int size;
    char *names = NULL, a[96], b[64];
    size_t count;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (tc_hostlist_expand(value, &names, &count) != TC_OK) pmpi_fatal("%s: %s", var, tc_error_message());
    if ((int)count != size) {
        snprintf(a, sizeof a, "%s lists %zu %s", var, count, what);
        snprintf(b, sizeof b, "%d", size);
        pmpi_fatal("%s but MPI_COMM_WORLD has %s ranks: it needs one name for each rank", a, b);
    }
    return names;
}

/* "a, b, c, native, auto": a registry's names (name_of(0..count-1)) and the
 * two names every collective variable also takes. */
static void valid_names(char *list, size_t len, int count, const char *(*name_of)(int))
{
    list[0] = '\0';
    for (int i = 0; i < count; i++) {
        strncat(list, name_of(i), len - strlen(list) - 1);
        strncat(list, ", ", len - strlen(list) - 1);
    }
    strncat(list, "native, auto", len - strlen(list) - 1);
}

static void read_alltoall(void)
{
    const char *alg = getenv("TOPOCOLL_ALLTOALL");
    snprintf(pmpi_cfg.algorithm, sizeof pmpi_cfg.algorithm, "%s", alg && *alg ? alg : "auto");
    if (strcmp(pmpi_cfg.algorithm, "auto") && strcmp(pmpi_cfg.algorithm, "native") &&
        tc_algorithm_find(pmpi_cfg.algorithm) < 0) {
        char list[512];
        valid_names(list, sizeof list, tc_algorithm_count(), tc_algorithm_name);
        pmpi_fatal("TOPOCOLL_ALLTOALL=%s is not an algorithm; valid: %s", pmpi_cfg.algorithm, list);
    }
}

static void read_alltoallv(void)
{
    const char *alg = getenv("TOPOCOLL_ALLTOALLV");
    snprintf(pmpi_cfg.alltoallv, sizeof pmpi_cfg.alltoallv, "%s", alg && *alg ? alg : "auto");
    if (strcmp(pmpi_cfg.alltoallv, "planned") && strcmp(pmpi_cfg.alltoallv, "auto") &&
        strcmp(pmpi_cfg.alltoallv, "native") && tc_algorithm_find(pmpi_cfg.alltoallv) < 0) {
        char list[512];
        valid_names(list, sizeof list, tc_algorithm_count(), tc_algorithm_name);
        pmpi_fatal("TOPOCOLL_ALLTOALLV=%s is not an algorithm; valid: planned, %s", pmpi_cfg.alltoallv, list);
    }
}

/* TOPOCOLL_TUNING: a decision file from `topocoll tune` for the machines of
 * TOPOCOLL_TOPOLOGY and this job's size; malformed, tuned on other machines
 * or for another number of ranks, the job stops.  (Sub-communicators of
 * sizes it has no rules for are the model's: pmpi_alltoall.c.) */
static void read_tuning(void)
{
    const tc_tuning_rule *rule;
    int size;
    if (!pmpi_cfg.tuning_file) return;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (tc_tuning_load(pmpi_cfg.tuning_file, &pmpi_cfg.tuning) != TC_OK ||
        tc_tuning_check_topology(pmpi_cfg.tuning, pmpi_cfg.topo) != TC_OK ||
        tc_tuning_select(pmpi_cfg.tuning, size, 0, &rule) != TC_OK)
        pmpi_fatal("TOPOCOLL_TUNING: %s%s", tc_error_message(), "");
}

/* TOPOCOLL_<OP> (the registry's trees, native, auto) and TOPOCOLL_TREE_SHAPES. */
static void read_collectives(void)
{
    static const char *const vars_of[PMPI_COLL_OPS] = {"TOPOCOLL_BCAST", "TOPOCOLL_REDUCE", "TOPOCOLL_ALLREDUCE",
                                                       "TOPOCOLL_BARRIER", "TOPOCOLL_GATHER", "TOPOCOLL_SCATTER"};
    for (int i = 0; i < tc_tree_algorithm_count(); i++)
        if (!strcmp(tc_tree_algorithm_name(i), "multilevel")) pmpi_cfg.auto_tree = i;
    for (int op = 0; op < PMPI_COLL_OPS; op++) {
        const char *v = getenv(vars_of[op]);
        pmpi_cfg.coll_alg[op] = -1;
        if (!v || !*v || !strcmp(v, "auto")) continue;
        if (!strcmp(v, "native")) { pmpi_cfg.coll_alg[op] = PMPI_NATIVE_TREE; continue; }
        for (int i = 0; i < tc_tree_algorithm_count(); i++)
            if (!strcmp(v, tc_tree_algorithm_name(i))) pmpi_cfg.coll_alg[op] = i;
        if (pmpi_cfg.coll_alg[op] < 0) {
            char list[256], what[160];
            valid_names(list, sizeof list, tc_tree_algorithm_count(), tc_tree_algorithm_name);
            snprintf(what, sizeof what, "%s=%s", vars_of[op], v);
            pmpi_fatal("%s is not a collective algorithm; valid: %s", what, list);
        }
    }
    const char *shapes = getenv("TOPOCOLL_TREE_SHAPES");
    for (const char *q = shapes; q && *q && pmpi_cfg.nshapes < PMPI_MAX_LEVELS;) {
        size_t len = strcspn(q, ",");
        tc_tree_shape sh = !strncmp(q, "flat", len) && len == 4        ? TC_SHAPE_FLAT
                           : !strncmp(q, "binomial", len) && len == 8  ? TC_SHAPE_BINOMIAL
                           : !strncmp(q, "auto", len) && len == 4      ? TC_SHAPE_DEFAULT
                                                                      : (tc_tree_shape)-1;
        if ((int)sh < 0)
            pmpi_fatal("TOPOCOLL_TREE_SHAPES=%s: expected flat, binomial or auto per level, top first%s", shapes, "");
        pmpi_cfg.shapes[pmpi_cfg.nshapes++] = sh;
        q += len + (q[len] == ',');
    }
}

void pmpi_config_load(void)
{
    static int loaded;
    if (loaded) return;
    loaded = 1;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *name = vars[i].name ? vars[i].name : tc_param_variable(vars[i].param);
        read_var(&vars[i], name, getenv(name));
    }
    SMPI_ONLY(pmpi_cfg.nap = 0;)
    pmpi_cfg.pace_lead_given = getenv("TOPOCOLL_PACE_LEAD") && *getenv("TOPOCOLL_PACE_LEAD");
    const char *path = getenv("TOPOCOLL_TOPOLOGY");
    tc_load_options lo = {getenv("TOPOCOLL_TOPOLOGY_NAME"), getenv("TOPOCOLL_NODE_NAME_MAP")};
    if (lo.node_name_map && !*lo.node_name_map) lo.node_name_map = NULL;
    if (path && *path && tc_topology_load_with(path, TC_FORMAT_AUTO, &lo, &pmpi_cfg.topo) != TC_OK)
        pmpi_fatal("TOPOCOLL_TOPOLOGY: %s%s", tc_error_message(), "");
    read_collectives();
    if (!pmpi_cfg.topo) return;   /* unset: every MPI_Alltoall goes to the MPI */
    read_alltoall();
    read_alltoallv();
    read_tuning();
    const char *clusters_var = tc_param_variable(TC_PARAM_CLUSTERS), *clusters = getenv(clusters_var);
    const char *map = getenv("TOPOCOLL_RANK_MAP");
    if (clusters && *clusters) pmpi_cfg.clusters = per_rank(clusters_var, clusters, "clusters");
    if (map && *map) pmpi_cfg.rank_map = per_rank("TOPOCOLL_RANK_MAP", map, "machines");
    pmpi_cfg.enabled = 1;
}

void pmpi_config_free(void)
{
    tc_topology_destroy(pmpi_cfg.topo);
    tc_tuning_destroy(pmpi_cfg.tuning);
    pmpi_cfg.tuning = NULL;
    free(pmpi_cfg.rank_map);
    free(pmpi_cfg.clusters);
    pmpi_cfg.topo = NULL;
    pmpi_cfg.rank_map = pmpi_cfg.clusters = NULL;
}
