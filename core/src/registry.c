/* The dispatch table, generated from algorithms.def: no integer IDs, no list
 * kept by hand elsewhere. */
#include "tc_internal.h"

#include <string.h>

typedef struct tc_algorithm {
    const char *name;
    unsigned props;
    const char *summary;
    tc_status (*plan)(const tc_topology *, tc_schedule **);
} tc_algorithm;

static const tc_algorithm algorithms[] = {
#define TC_ALGORITHM(id, name, props, summary) {name, props, summary, tc_a2a_##id},
#include "algorithms.def"
#undef TC_ALGORITHM
};
#define NUM_ALGORITHMS ((int)(sizeof algorithms / sizeof algorithms[0]))

int tc_algorithm_count(void) { return NUM_ALGORITHMS; }
const char *tc_algorithm_name(int i) { return i >= 0 && i < NUM_ALGORITHMS ? algorithms[i].name : NULL; }
const char *tc_algorithm_summary(int i) { return i >= 0 && i < NUM_ALGORITHMS ? algorithms[i].summary : NULL; }
unsigned tc_algorithm_properties(int i) { return i >= 0 && i < NUM_ALGORITHMS ? algorithms[i].props : 0; }

int tc_algorithm_find(const char *name)
{
    for (int i = 0; name && i < NUM_ALGORITHMS; i++)
        if (!strcmp(algorithms[i].name, name)) return i;
    return -1;
}

tc_status tc_alltoall_plan(const char *name, const tc_topology *topo, tc_schedule **sched)
{
    int i = tc_algorithm_find(name);
    if (i < 0) {
        char list[512] = "";
        for (int k = 0; k < NUM_ALGORITHMS; k++) {
            if (k) strncat(list, ", ", sizeof list - strlen(list) - 1);
            strncat(list, algorithms[k].name, sizeof list - strlen(list) - 1);
        }
        TC_FAIL(TC_ERR_ARG, "unknown all-to-all algorithm '%s'; valid: %s", name ? name : "", list);
    }
    if (!topo || !topo->finalized) TC_FAIL(TC_ERR_ARG, "%s: topology not finalized", algorithms[i].name);
    return algorithms[i].plan(topo, sched);
}

tc_status tc_alltoall_plan_for_execution(const char *name, const tc_topology *topo, int sync_depth,
                                         tc_schedule **sched)
{
    tc_status rc = tc_alltoall_plan(name, topo, sched);
    if (rc != TC_OK) return rc;
    if (!(tc_algorithm_properties(tc_algorithm_find(name)) & TC_PROP_CONTENTION_FREE)) return TC_OK;
    tc_sync_stats stats;
    rc = tc_schedule_add_syncs(*sched, topo, sync_depth, &stats);
    if (rc != TC_OK) {
        tc_schedule_destroy(*sched);
        *sched = NULL;
    }
    return rc;
}
