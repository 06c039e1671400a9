/* Ranks beyond one a machine, and clusters: the two views of a topology that
 * the hierarchical algorithms plan on (hierarchical-factor, local-group, and
 * faraj-yuan on machines with several ranks). */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

/* Shared memory as a link: fast enough never to be the bottleneck (a
 * 100 Gbit/s network would still leave it 10x faster), so loads and peak
 * bounds are those of the network. */
#define TC_SHM_BANDWIDTH 1e12
#define TC_SHM_LATENCY 1e-7

tc_status tc_topology_mark_host(tc_topology *t, const char *name)
{
    int n = tc_topology_node_find(t, name);
    if (n < 0 || t->nodes[n].kind != TC_NODE_SWITCH) TC_FAIL(TC_ERR_ARG, "'%s' is not a switch", name);
    t->nodes[n].host = true;
    return TC_OK;
}

tc_status tc_topology_expand(const tc_topology *t, const int *count, tc_topology **out)
{
    tc_status rc = TC_OK;
    tc_topology *r = NULL;
    char name[512];
    if (!t->finalized) TC_FAIL(TC_ERR_ARG, "topology not finalized");
    for (int m = 0; m < t->num_machines; m++)
        if (count[m] < 1)
            TC_FAIL(TC_ERR_ARG, "machine '%s': %d ranks (at least 1 is needed)", t->nodes[t->machines[m]].name,
                    count[m]);
    TC_TRY(rc, done, tc_topology_create(&r));
    TC_TRY(rc, done, tc_topology_set_name(r, t->name ? t->name : ""));
    TC_TRY(rc, done, tc_topology_set_note(r, tc_topology_note(t)));
    for (int i = 0; i < t->num_nodes; i++) {
        const tc_node *n = &t->nodes[i];
        int rank = t->rank_of_node[i];
        if (n->kind == TC_NODE_SWITCH || count[rank] > 1) {
            TC_TRY(rc, done, tc_topology_add_switch(r, n->name, n->where));
            if (n->host || n->kind == TC_NODE_MACHINE) TC_TRY(rc, done, tc_topology_mark_host(r, n->name));
        }
    }
    for (int m = 0; m < t->num_machines; m++) {
        const tc_node *n = &t->nodes[t->machines[m]];
        if (count[m] == 1) {
            TC_TRY(rc, done, tc_topology_add_machine(r, n->name, 1, n->where));
            continue;
        }
        for (int k = 0; k < count[m]; k++) {
            snprintf(name, sizeof name, "%s.%d", n->name, k);
            TC_TRY(rc, done, tc_topology_add_machine(r, name, 1, n->where));
            TC_TRY(rc, done, tc_topology_add_link(r, name, n->name, TC_SHM_BANDWIDTH, TC_SHM_LATENCY, n->where));
        }
    }
    TC_TRY(rc, done, tc_topology_copy_links_finalize(t, NULL, r));
    *out = r;
    r = NULL;
done:
    tc_topology_destroy(r);
    return rc;
}

int tc_topology_machine_host(const tc_topology *t, int rank)
{
    int node = t->machines[rank], up = t->parent[node];
    return up >= 0 && t->nodes[up].host ? up : node;
}

static int find(int *uf, int x)
{
    while (uf[x] != x) { uf[x] = uf[uf[x]]; x = uf[x]; }
    return x;
}

int tc_topology_clusters(const tc_topology *t, double default_bw, int *cluster_of_rank)
{
    int V = t->num_nodes, n = 0;
    int *uf = tc_xmalloc(sizeof(int) * (size_t)V), *id = tc_xmalloc(sizeof(int) * (size_t)V);
    if (!uf || !id) { free(uf); free(id); return -1; }
    double worst = 0;
    for (int l = 0; l < t->num_links; l++) {
        double bw = t->links[l].bandwidth > 0 ? t->links[l].bandwidth : default_bw;
        double x = (double)tc_topology_link_load(t, l) / bw;
        if (x > worst) worst = x;
    }
    for (int i = 0; i < V; i++) { uf[i] = i; id[i] = -1; }
    for (int l = 0; l < t->num_links; l++) {
        double bw = t->links[l].bandwidth > 0 ? t->links[l].bandwidth : default_bw;
        /* ties within 1e-9 are bottlenecks too: equal loads over equal links */
        if ((double)tc_topology_link_load(t, l) / bw < worst * (1 - 1e-9))
            uf[find(uf, t->links[l].child)] = find(uf, t->links[l].parent);
    }
    for (int r = 0; r < t->num_machines; r++) {
        int root = find(uf, t->machines[r]);
        if (id[root] < 0) id[root] = n++;
        cluster_of_rank[r] = id[root];
    }
    free(uf);
    free(id);
    return n;
}

int tc_topology_levels(const tc_topology *t, int rank, char *buf, size_t len)
{
    int chain[256], k = 0;
    for (int x = t->machines[rank]; x >= 0 && t->parent[x] >= 0 && k < 256; x = t->parent[x]) chain[k++] = x;
    if (k == 0) chain[k++] = t->machines[rank];    /* a lone machine */
    size_t at = 0;
    for (int i = k - 1; i >= 0; i--) {
        int n = snprintf(buf + at, len - at, "%s%s", i == k - 1 ? "" : "/", t->nodes[chain[i]].name);
        if (n < 0 || (size_t)n >= len - at) return -1;
        at += (size_t)n;
    }
    return k;
}

void tc_topology_path_cost(const tc_topology *t, int a, int b, double default_bw, double default_lat, double *lat,
                           double *bw)
{
    int32_t edges[512];
    int n = 2 * t->height <= 512 ? tc_topology_path(t, a, b, edges) : 0;
    *lat = 0;
    *bw = 0;
    for (int k = 0; k < n; k++) {
        const tc_link_decl *l = &t->links[edges[k] / 2];
        double x = l->bandwidth > 0 ? l->bandwidth : default_bw;
        *lat += l->latency > 0 ? l->latency : default_lat;
        if (*bw == 0 || x < *bw) *bw = x;
    }
}

int32_t *tc_topology_hop_table(const tc_topology *t)
{
    const int p = tc_topology_num_machines(t);
    int32_t *hops = tc_xmalloc(sizeof(int32_t) * (size_t)p * (size_t)p + 1);
    int32_t *path = tc_xmalloc(sizeof(int32_t) * (2 * (size_t)t->height + 2));
    if (!hops || !path) { free(hops); free(path); return NULL; }
    for (int q = 0; q < p; q++)
        for (int r = 0; r < p; r++) hops[(size_t)q * p + r] = q == r ? 1 : tc_topology_path(t, q, r, path);
    free(path);
    return hops;
}

int tc_topology_link_is_local(const tc_topology *t, int l)
{
    return t->nodes[t->links[l].child].kind == TC_NODE_MACHINE && t->nodes[t->links[l].parent].host;
}
