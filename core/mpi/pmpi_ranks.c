/* Which machine each rank runs on, and a communicator's ranks as a tree:
 * TOPOCOLL_RANK_MAP or the processor name, matched exactly or up to the
 * first dot; machines holding several of the communicator's ranks are
 * planned as switches holding them (tc_topology_expand). */
#include "pmpi_shared.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pmpi_my_machine(char *name)
{
    if (pmpi_cfg.rank_map) {
        const char *p = pmpi_cfg.rank_map;
        for (int r = pmpi_world_rank(); r > 0; r--) p += strlen(p) + 1;
        snprintf(name, PMPI_NAME_LEN, "%s", p);
        return;
    }
    int len = 0;
    char buf[MPI_MAX_PROCESSOR_NAME];
    PMPI_Get_processor_name(buf, &len);
    snprintf(name, PMPI_NAME_LEN, "%s", buf);
}

int pmpi_machine_rank(const char *name)
{
    const tc_topology *t = pmpi_cfg.topo;
    if (!t) return -1;
    int node = tc_topology_node_find(t, name);
    if (node < 0) {
        char short_name[PMPI_NAME_LEN];
        snprintf(short_name, sizeof short_name, "%s", name);
        char *dot = strchr(short_name, '.');
        if (dot) { *dot = '\0'; node = tc_topology_node_find(t, short_name); }
    }
    return node < 0 ? -1 : tc_topology_machine_rank(t, node);
}

int pmpi_comm_machines(MPI_Comm comm, int **ranks_out, int **world_out, char *why, size_t len)
{
    int size, wr = pmpi_world_rank(), shared = 0;
    char mine[PMPI_NAME_LEN];
    PMPI_Comm_size(comm, &size);
    memset(mine, 0, sizeof mine);
    pmpi_my_machine(mine);
    char *names = (char *)malloc((size_t)size * PMPI_NAME_LEN);
    int *ranks = (int *)malloc(sizeof(int) * (size_t)size), *world = (int *)malloc(sizeof(int) * (size_t)size);
    if (!names || !ranks || !world) pmpi_fatal("out of memory gathering the machines of %s ranks%s", "a communicator's", "");
    PMPI_Allgather(mine, PMPI_NAME_LEN, MPI_CHAR, names, PMPI_NAME_LEN, MPI_CHAR, comm);
    PMPI_Allgather(&wr, 1, MPI_INT, world, 1, MPI_INT, comm);
    for (int r = 0; r < size && shared >= 0; r++) {
        ranks[r] = pmpi_machine_rank(names + (size_t)r * PMPI_NAME_LEN);
        if (ranks[r] < 0) {
            snprintf(why, len, "rank %d's machine '%s' is not in the topology", r, names + (size_t)r * PMPI_NAME_LEN);
            shared = -1;
        }
        for (int q = 0; q < r && shared == 0; q++) shared = ranks[q] == ranks[r];
    }
    free(names);
    *ranks_out = ranks;
    *world_out = world;
    return shared;
}

int *pmpi_comm_clusters(int size, const int *world)
{
    int *clusters = (int *)malloc(sizeof(int) * (size_t)size);
    const char **label = (const char **)malloc(sizeof(char *) * (size_t)size);
    if (!clusters || !label) pmpi_fatal("out of memory%s%s", "", "");
    for (int r = 0; r < size; r++) {
        const char *q = pmpi_cfg.clusters;
        for (int w = world[r]; w > 0; w--) q += strlen(q) + 1;
        label[r] = q;
        clusters[r] = r;
        for (int k = 0; k < r; k++)
            if (!strcmp(label[k], q)) { clusters[r] = clusters[k]; break; }
    }
    free(label);
    return clusters;
}

tc_topology *pmpi_ranks_topology(const int *mach, int size, char *why, size_t len)
{
    int *distinct = (int *)calloc((size_t)size + 1, sizeof(int)), *count = (int *)calloc((size_t)size + 1, sizeof(int));
    int *index = (int *)malloc(sizeof(int) * (size_t)size), *order = (int *)malloc(sizeof(int) * (size_t)size);
    int *first = (int *)malloc(sizeof(int) * (size_t)size);
    int nd = 0, shared = 0;
    tc_topology *t1 = NULL, *t2 = NULL, *t3 = NULL;
    if (!distinct || !count || !index || !order || !first) {
        snprintf(why, len, "out of memory");
        goto out;
    }
    for (int r = 0; r < size; r++) {
        int k = 0;
        while (k < nd && distinct[k] != mach[r]) k++;
        if (k == nd) distinct[nd++] = mach[r];
        index[r] = count[k]++;
        order[r] = k;
        if (count[k] > 1) shared = 1;
    }
    if (tc_topology_restrict(pmpi_cfg.topo, distinct, nd, &t1) != TC_OK) {
        snprintf(why, len, "%s", tc_error_message());
        goto out;
    }
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

void *pmpi_cached(MPI_Comm comm, int *keyval, MPI_Comm_delete_attr_function *destroy)
{
    void *attr = NULL;
    int found = 0;
    if (*keyval == MPI_KEYVAL_INVALID) PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, destroy, keyval, NULL);
    PMPI_Comm_get_attr(comm, *keyval, &attr, &found);
    return found ? attr : NULL;
}

void pmpi_delete_cached(int keyval)
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
