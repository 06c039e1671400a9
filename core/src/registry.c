/* The dispatch table, generated from algorithms.def: no integer IDs, no list
 * kept by hand elsewhere. */
#include "tc_internal.h"

#include <string.h>

typedef struct tc_algorithm {
    const char *name;
    unsigned props, params;
    const char *summary;
    tc_status (*plan)(const tc_topology *, const tc_plan_options *, tc_schedule **);
    tc_status (*per_rank)(const tc_topology *, tc_phase_oracle *);
} tc_algorithm;

static const tc_algorithm algorithms[] = {
#define TC_ALGORITHM(id, name, props, params, per_rank, summary) {name, props, params, summary, tc_a2a_##id, per_rank},
#include "algorithms.def"
#undef TC_ALGORITHM
};
#define NUM_ALGORITHMS ((int)(sizeof algorithms / sizeof algorithms[0]))

int tc_algorithm_count(void) { return NUM_ALGORITHMS; }
const char *tc_algorithm_name(int i) { return i >= 0 && i < NUM_ALGORITHMS ? algorithms[i].name : NULL; }
const char *tc_phase_order_name(int i)
{
    static const char *const names[] = TC_PHASE_ORDER_NAMES;
    return i >= 0 && i < (int)(sizeof names / sizeof *names) - 1 ? names[i] : NULL;
}
const char *tc_algorithm_summary(int i) { return i >= 0 && i < NUM_ALGORITHMS ? algorithms[i].summary : NULL; }
unsigned tc_algorithm_properties(int i) { return i >= 0 && i < NUM_ALGORITHMS ? algorithms[i].props : 0; }
unsigned tc_algorithm_params(int i) { return i >= 0 && i < NUM_ALGORITHMS ? algorithms[i].params : 0; }
int tc_algorithm_plans_per_rank(int i) { return i >= 0 && i < NUM_ALGORITHMS && algorithms[i].per_rank; }
tc_status tc_algorithm_oracle(int i, const tc_topology *topo, tc_phase_oracle *o)
{
    if (!tc_algorithm_plans_per_rank(i)) {
        char list[512] = "";
        for (int k = 0; k < NUM_ALGORITHMS; k++)
            if (algorithms[k].per_rank) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "", algorithms[k].name);
        TC_FAIL(TC_ERR_UNSUPPORTED, "'%s' has no per-rank form (algorithms planned per rank: %s)",
                tc_algorithm_name(i) ? tc_algorithm_name(i) : "?", list);
    }
    return algorithms[i].per_rank(topo, o);
}

/* Phase-structured, topology-aware schedules run with the pairwise syncs that
 * keep each link to one message at a time (Faraj & Yuan, section 5). */
int tc_algorithm_runs_with_syncs(int i)
{
    unsigned p = tc_algorithm_properties(i);
    return (p & TC_PROP_TOPOLOGY_AWARE) && (p & (TC_PROP_CONTENTION_FREE | TC_PROP_HOST_SINGLE_PORT | TC_PROP_CAPACITATED));
}

void tc_join_names(char *buf, size_t len, int count, const char *(*name_of)(int))
{
    buf[0] = '\0';
    for (int k = 0; k < count; k++) {
        if (k) strncat(buf, ", ", len - strlen(buf) - 1);
        strncat(buf, name_of(k), len - strlen(buf) - 1);
    }
}

int tc_algorithm_find(const char *name)
{
    for (int i = 0; name && i < NUM_ALGORITHMS; i++)
        if (!strcmp(algorithms[i].name, name)) return i;
    return -1;
}

tc_status tc_alltoall_plan_with_options(const char *name, const tc_topology *topo, const tc_plan_options *opt,
                                        int execute, tc_schedule **sched)
{
    static const tc_plan_options defaults = {1, TC_DEFAULT_FANOUT, NULL, 1, TC_PHASE_ORDER_GROUPED, 0};
    int i = tc_algorithm_find(name);
    if (i < 0) {
        char list[512];
        tc_join_names(list, sizeof list, NUM_ALGORITHMS, tc_algorithm_name);
        TC_FAIL(TC_ERR_ARG, "unknown all-to-all algorithm '%s'; valid: %s", name ? name : "", list);
    }
    if (!topo || !topo->finalized) TC_FAIL(TC_ERR_ARG, "%s: topology not finalized", algorithms[i].name);
    tc_plan_options o = opt ? *opt : defaults;
    if (o.segments < 1) o.segments = 1;
    if (o.fanout < 1) o.fanout = TC_DEFAULT_FANOUT;
    if (o.sync_depth < 1) o.sync_depth = 1;
    if (o.segments > 65536) TC_FAIL(TC_ERR_ARG, "%s: %d segments a block (at most 65536)", algorithms[i].name, o.segments);
    if (o.phase_order < TC_PHASE_ORDER_GROUPED || o.phase_order > TC_PHASE_ORDER_BALANCED)
        TC_FAIL(TC_ERR_ARG, "%s: phase order %d (0 grouped, 1 paper, 2 balanced)", algorithms[i].name, o.phase_order);
    int64_t p = tc_topology_num_machines(topo), messages = p * (p - 1) * o.segments;
    if (messages > TC_MAX_PLAN_MESSAGES)
        TC_FAIL(TC_ERR_LIMIT, "%s: %lld ranks x %d segments make %lld messages, more than the limit of %lld for a "
                "whole schedule", algorithms[i].name, (long long)p, o.segments, (long long)messages,
                (long long)TC_MAX_PLAN_MESSAGES);
    if (!(o.bandwidth > 0) || o.bandwidth > TC_MAX_RATE) o.bandwidth = TC_DEFAULT_BANDWIDTH;
    tc_status rc = algorithms[i].plan(topo, &o, sched);
    if (rc == TC_OK) {
        (*sched)->bandwidth = o.bandwidth;
        (*sched)->capacity_syncs = (algorithms[i].props & TC_PROP_CAPACITATED) != 0;
    }
    if (rc != TC_OK || !execute || !tc_algorithm_runs_with_syncs(i)) return rc;
    tc_sync_stats stats;
    if (o.phase_order == TC_PHASE_ORDER_BALANCED) rc = tc_schedule_order_steps(*sched, topo);
    else if (o.phase_order == TC_PHASE_ORDER_GROUPED) rc = tc_schedule_group_senders(*sched, topo);
    if (rc == TC_OK) rc = tc_schedule_add_syncs(*sched, topo, o.sync_depth, &stats);
    if (rc != TC_OK) {
        tc_schedule_destroy(*sched);
        *sched = NULL;
    }
    return rc;
}

tc_status tc_alltoall_plan(const char *name, const tc_topology *topo, tc_schedule **sched)
{
    return tc_alltoall_plan_with_options(name, topo, NULL, 0, sched);
}

tc_status tc_alltoall_plan_for_execution(const char *name, const tc_topology *topo, int sync_depth,
                                         tc_schedule **sched)
{
    tc_plan_options o = {1, TC_DEFAULT_FANOUT, NULL, sync_depth, TC_PHASE_ORDER_GROUPED, 0};
    return tc_alltoall_plan_with_options(name, topo, &o, 1, sched);
}

/* The parameters' names, one home: the PMPI library reads these variables,
 * the CLI's options and the bench's are named after them. */
static const struct { unsigned flag; const char *name, *variable; } params[] = {
    {TC_PARAM_SEGMENTS, "segment_size", "TOPOCOLL_SEGMENT_SIZE"},
    {TC_PARAM_FANOUT, "fanout", "TOPOCOLL_FANOUT"},
    {TC_PARAM_CLUSTERS, "clusters", "TOPOCOLL_CLUSTERS"},
};

const char *tc_param_variable(unsigned param)
{
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
        if (params[i].flag == param) return params[i].variable;
    return NULL;
}

const char *tc_param_name(unsigned param)
{
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
        if (params[i].flag == param) return params[i].name;
    return NULL;
}

int tc_algorithm_broken_promises(int index, const tc_verify_report *r, unsigned waive, char *buf, size_t len)
{
    unsigned props = (index >= 0 && index < NUM_ALGORITHMS ? algorithms[index].props : 0) & ~waive;
    const struct { int broken; const char *what; } checks[] = {
        {!r->complete, "incomplete"},
        {props & TC_PROP_CONTENTION_FREE && !r->contention_free, "contention"},
        {props & TC_PROP_SINGLE_PORT && !r->single_port, "a rank sends or receives twice in one step"},
        {props & TC_PROP_HOST_SINGLE_PORT && !r->host_single_port,
         "a machine's link carries two messages one way in one step"},
        {props & TC_PROP_BOTTLENECK_ONCE && !r->bottleneck_once, "a bottleneck link carries more than its load"},
        {props & TC_PROP_CAPACITATED && !r->within_capacity, "a link carries more messages than its capacity"},
        {props & TC_PROP_OPTIMAL && !r->optimal, "not optimal"},
    };
    int n = 0;
    if (len) buf[0] = '\0';
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        if (!checks[i].broken) continue;
        if (len) {
            size_t used = strlen(buf);
            if (checks[i].what[0] == 'n' && !strcmp(checks[i].what, "not optimal"))
                snprintf(buf + used, len - used, "%s%d phases for load %lld", n ? "; " : "", r->num_steps,
                         (long long)r->load);
            else
                snprintf(buf + used, len - used, "%s%s", n ? "; " : "", checks[i].what);
        }
        n++;
    }
    return n;
}
