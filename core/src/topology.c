/* Topology model: machines (leaves) and switches joined by full-duplex links.
 * Building, validation (finalize), paths, all-to-all loads and the Faraj-Yuan
 * root.  Planning complexity: finalize O(V); a path O(height). */
#include "tc_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

tc_status tc_topology_create(tc_topology **topo)
{
    if (!topo) TC_FAIL(TC_ERR_ARG, "topology: no handle");
    *topo = tc_xcalloc(1, sizeof **topo);
    if (!*topo) TC_FAIL(TC_ERR_NOMEM, "topology: out of memory");
    return TC_OK;
}

static void free_derived(tc_topology *t)
{
    free(t->rank_of_node); free(t->parent); free(t->parent_link);
    free(t->depth); free(t->below);
    t->rank_of_node = t->parent = t->parent_link = t->depth = t->below = NULL;
    t->finalized = false;
}

void tc_topology_destroy(tc_topology *t)
{
    if (!t) return;
    for (int i = 0; i < t->num_nodes; i++) { free(t->nodes[i].name); free(t->nodes[i].where); }
    for (int i = 0; i < t->num_links; i++) free(t->links[i].where);
    free(t->nodes); free(t->links); free(t->hash); free(t->machines); free(t->name); free(t->note);
    free_derived(t);
    free(t);
}

/* A copy of text ("" for NULL) in *slot, the old one freed. */
static tc_status set_text(char **slot, const char *text)
{
    char *n = tc_strdup(text ? text : "");
    if (!n) TC_FAIL(TC_ERR_NOMEM, "topology: out of memory");
    free(*slot);
    *slot = n;
    return TC_OK;
}

tc_status tc_topology_set_name(tc_topology *t, const char *name) { return set_text(&t->name, name); }
tc_status tc_topology_set_note(tc_topology *t, const char *note) { return set_text(&t->note, note); }

const char *tc_topology_note(const tc_topology *t) { return t && t->note ? t->note : ""; }

/* ---- name lookup ---- */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

int tc_topology_node_find(const tc_topology *t, const char *name)
{
    if (!t->hash_cap || !name) return -1;
    uint32_t mask = (uint32_t)t->hash_cap - 1;
    for (uint32_t i = name_hash(name) & mask;; i = (i + 1) & mask) {
        int n = t->hash[i];
        if (n < 0) return -1;
        if (!strcmp(t->nodes[n].name, name)) return n;
    }
}

static int hash_insert(tc_topology *t, int node)
{
    if ((t->num_nodes + 1) * 2 > t->hash_cap) {
        int cap = t->hash_cap ? t->hash_cap * 2 : 64;
        while (cap < (t->num_nodes + 1) * 2) cap *= 2;
        int *h = malloc(sizeof(int) * (size_t)cap);
        if (!h) return -1;
        memset(h, 0xff, sizeof(int) * (size_t)cap);
        free(t->hash);
        t->hash = h;
        t->hash_cap = cap;
        for (int i = 0; i < node; i++) hash_insert(t, i);
    }
    uint32_t mask = (uint32_t)t->hash_cap - 1;
    uint32_t i = name_hash(t->nodes[node].name) & mask;
    while (t->hash[i] >= 0) i = (i + 1) & mask;
    t->hash[i] = node;
    return 0;
}

/* Names as Slurm accepts them, so that every topology can be written in
 * either format: letters, digits and . _ - : + (no spaces, commas, brackets). */
static bool valid_name(const char *s)
{
    if (!s || !*s) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._-:+", *s)) return false;
    return true;
}

/* A name for a message: printable, at most 64 bytes shown. */
static const char *shown(const char *s, char *buf, size_t len)
{
    size_t i = 0;
    for (; s && *s && i + 5 < len && i < 64; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f) buf[i++] = (char)c;
        else i += (size_t)snprintf(buf + i, len - i, "\\x%02x", c);
    }
    buf[i] = '\0';
    if (s && *s && i < len - 4) strcat(buf, "...");
    return buf;
}

static const char *at(const char *where) { return where ? where : "?"; }

static tc_status add_node(tc_topology *t, const char *name, tc_node_kind kind, int slots,
                          const char *where)
{
    char buf[96];
    if (name && strlen(name) > TC_MAX_NAME_LEN)
        TC_FAIL(TC_ERR_LIMIT, "%s: name '%s' is longer than the limit of %d bytes", at(where),
                shown(name, buf, sizeof buf), TC_MAX_NAME_LEN);
    if (!valid_name(name))
        TC_FAIL(TC_ERR_TOPOLOGY, "%s: invalid name '%s': names may hold letters, digits and . _ - : + only",
                at(where), shown(name ? name : "", buf, sizeof buf));
    if (kind == TC_NODE_MACHINE && t->num_machines >= TC_MAX_MACHINES)
        TC_FAIL(TC_ERR_LIMIT, "%s: more than the limit of %d machines (ranks)", at(where), TC_MAX_MACHINES);
    if (kind == TC_NODE_SWITCH && t->num_nodes - t->num_machines >= TC_MAX_SWITCHES)
        TC_FAIL(TC_ERR_LIMIT, "%s: more than the limit of %d switches", at(where), TC_MAX_SWITCHES);
    int old = tc_topology_node_find(t, name);
    if (old >= 0)
        TC_FAIL(TC_ERR_TOPOLOGY, "%s: duplicate name '%s' (already a %s, declared at %s)", at(where), name,
                t->nodes[old].kind == TC_NODE_MACHINE ? "machine" : "switch", at(t->nodes[old].where));
    if (t->num_nodes == t->cap_nodes) {
        int cap = t->cap_nodes ? t->cap_nodes * 2 : 32;
        tc_node *n = realloc(t->nodes, sizeof *n * (size_t)cap);
        if (!n) TC_FAIL(TC_ERR_NOMEM, "topology: out of memory");
        t->nodes = n;
        t->cap_nodes = cap;
    }
    tc_node *n = &t->nodes[t->num_nodes];
    n->name = tc_strdup(name);
    n->where = where ? tc_strdup(where) : NULL;
    n->kind = kind;
    n->slots = slots;
    n->host = false;
    if (!n->name || hash_insert(t, t->num_nodes)) TC_FAIL(TC_ERR_NOMEM, "topology: out of memory");
    t->num_nodes++;
    if (kind == TC_NODE_MACHINE) {
        if (t->num_machines == t->cap_machines) {
            int cap = t->cap_machines ? t->cap_machines * 2 : 32;
            int *m = realloc(t->machines, sizeof *m * (size_t)cap);
            if (!m) TC_FAIL(TC_ERR_NOMEM, "topology: out of memory");
            t->machines = m;
            t->cap_machines = cap;
        }
        t->machines[t->num_machines++] = t->num_nodes - 1;
    }
    free_derived(t);
    return TC_OK;
}

tc_status tc_topology_add_switch(tc_topology *t, const char *name, const char *where)
{
    return add_node(t, name, TC_NODE_SWITCH, 0, where);
}

tc_status tc_topology_add_machine(tc_topology *t, const char *name, int slots, const char *where)
{
    if (slots < 1) TC_FAIL(TC_ERR_TOPOLOGY, "%s: machine '%s' has %d slots; at least 1 is needed", at(where), name, slots);
    return add_node(t, name, TC_NODE_MACHINE, slots, where);
}

tc_status tc_topology_set_slots(tc_topology *t, const char *machine, int slots, const char *where)
{
    int n = tc_topology_node_find(t, machine);
    if (n < 0) TC_FAIL(TC_ERR_TOPOLOGY, "%s: unknown machine '%s'", at(where), machine);
    if (t->nodes[n].kind != TC_NODE_MACHINE) TC_FAIL(TC_ERR_TOPOLOGY, "%s: '%s' is a switch, not a machine", at(where), machine);
    if (slots < 1) TC_FAIL(TC_ERR_TOPOLOGY, "%s: machine '%s' has %d slots; at least 1 is needed", at(where), machine, slots);
    t->nodes[n].slots = slots;
    return TC_OK;
}

tc_status tc_topology_add_link(tc_topology *t, const char *child, const char *parent, double bw,
                               double lat, const char *where)
{
    int c = tc_topology_node_find(t, child), p = tc_topology_node_find(t, parent);
    if (c < 0) TC_FAIL(TC_ERR_TOPOLOGY, "%s: unknown name '%s'", at(where), child);
    if (p < 0) TC_FAIL(TC_ERR_TOPOLOGY, "%s: unknown name '%s'", at(where), parent);
    if (c == p) TC_FAIL(TC_ERR_TOPOLOGY, "%s: '%s' is linked to itself", at(where), child);
    if (bw < 0 || lat < 0) TC_FAIL(TC_ERR_TOPOLOGY, "%s: link %s-%s has a negative bandwidth or latency", at(where), child, parent);
    if (t->num_links == t->cap_links) {
        int cap = t->cap_links ? t->cap_links * 2 : 32;
        tc_link_decl *l = realloc(t->links, sizeof *l * (size_t)cap);
        if (!l) TC_FAIL(TC_ERR_NOMEM, "topology: out of memory");
        t->links = l;
        t->cap_links = cap;
    }
    tc_link_decl *l = &t->links[t->num_links];
    l->child = c;
    l->parent = p;
    l->bandwidth = bw;
    l->latency = lat;
    l->where = where ? tc_strdup(where) : NULL;
    t->num_links++;
    free_derived(t);
    return TC_OK;
}

/* ---- validation ---- */
static int uf_find(int *uf, int x)
{
    while (uf[x] != x) { uf[x] = uf[uf[x]]; x = uf[x]; }
    return x;
}

tc_status tc_topology_finalize(tc_topology *t)
{
    tc_status rc = TC_OK;
    int V = t->num_nodes;
    int *uf = NULL, *deg = NULL, *adj_start = NULL, *adj = NULL, *queue = NULL;
    free_derived(t);
    if (t->num_machines < 1) TC_FAIL(TC_ERR_TOPOLOGY, "topology has no machines (at least 1 is needed)");

    uf = tc_xmalloc(sizeof(int) * (size_t)V);
    deg = tc_xcalloc((size_t)V, sizeof(int));
    if (!uf || !deg) TC_FAIL_GOTO(rc, done, TC_ERR_NOMEM, "topology: out of memory");
    for (int i = 0; i < V; i++) uf[i] = i;

    for (int l = 0; l < t->num_links; l++) {
        const tc_link_decl *k = &t->links[l];
        const tc_node *a = &t->nodes[k->child], *b = &t->nodes[k->parent];
        if (a->kind == TC_NODE_MACHINE && b->kind == TC_NODE_MACHINE)
            TC_FAIL_GOTO(rc, done, TC_ERR_TOPOLOGY, "%s: machine '%s' is linked to machine '%s': machines attach to switches",
                         at(k->where), a->name, b->name);
        int ra = uf_find(uf, k->child), rb = uf_find(uf, k->parent);
        if (ra == rb) {
            for (int m = 0; m < l; m++) {
                const tc_link_decl *o = &t->links[m];
                if ((o->child == k->child && o->parent == k->parent) || (o->child == k->parent && o->parent == k->child))
                    TC_FAIL_GOTO(rc, done, TC_ERR_TOPOLOGY, "%s: link %s-%s is given twice (first at %s)",
                                 at(k->where), a->name, b->name, at(o->where));
            }
            TC_FAIL_GOTO(rc, done, TC_ERR_TOPOLOGY, "%s: cycle: the link %s-%s closes a loop (the network must be a tree)",
                         at(k->where), a->name, b->name);
        }
        uf[ra] = rb;
        deg[k->child]++;
        deg[k->parent]++;
    }
    for (int i = 0; i < V; i++) {
        const tc_node *n = &t->nodes[i];
        if (n->kind != TC_NODE_MACHINE || deg[i] <= 1) continue;
        int first = -1, second = -1;
        for (int l = 0; l < t->num_links && second < 0; l++) {
            int other = t->links[l].child == i ? t->links[l].parent : t->links[l].parent == i ? t->links[l].child : -1;
            if (other < 0) continue;
            if (first < 0) first = l; else second = l;
        }
        const tc_link_decl *a = &t->links[first], *b = &t->links[second];
        TC_FAIL_GOTO(rc, done, TC_ERR_TOPOLOGY, "machine '%s' (%s) is not a leaf: it is linked to '%s' (%s) and to '%s' (%s)",
                     n->name, at(n->where), t->nodes[a->child == i ? a->parent : a->child].name, at(a->where),
                     t->nodes[b->child == i ? b->parent : b->child].name, at(b->where));
    }
    int first_root = uf_find(uf, t->machines[0]);
    for (int i = 0; i < V; i++)
        if (uf_find(uf, i) != first_root)
            TC_FAIL_GOTO(rc, done, TC_ERR_TOPOLOGY, "not connected: %s '%s' (%s) cannot be reached from machine '%s'",
                         t->nodes[i].kind == TC_NODE_MACHINE ? "machine" : "switch", t->nodes[i].name,
                         at(t->nodes[i].where), t->nodes[t->machines[0]].name);

    /* Orient the tree from its top: the first switch that no link declares
     * as a child (the file's own root), else the first switch, else the
     * only machine. */
    t->top = -1;
    for (int i = 0; i < V; i++) deg[i] = 0;
    for (int l = 0; l < t->num_links; l++) deg[t->links[l].child]++;
    for (int i = 0; i < V && t->top < 0; i++)
        if (t->nodes[i].kind == TC_NODE_SWITCH && deg[i] == 0) t->top = i;
    for (int i = 0; i < V && t->top < 0; i++)
        if (t->nodes[i].kind == TC_NODE_SWITCH) t->top = i;
    if (t->top < 0) t->top = t->machines[0];
    for (int i = 0; i < V; i++) deg[i] = 0;
    for (int l = 0; l < t->num_links; l++) { deg[t->links[l].child]++; deg[t->links[l].parent]++; }
    adj_start = tc_xcalloc((size_t)V + 1, sizeof(int));
    adj = tc_xmalloc(sizeof(int) * 2 * (size_t)(t->num_links ? t->num_links : 1));
    queue = tc_xmalloc(sizeof(int) * (size_t)V);
    t->parent = tc_xmalloc(sizeof(int) * (size_t)V);
    t->parent_link = tc_xmalloc(sizeof(int) * (size_t)V);
    t->depth = tc_xcalloc((size_t)V, sizeof(int));
    t->below = tc_xcalloc((size_t)V, sizeof(int));
    t->rank_of_node = tc_xmalloc(sizeof(int) * (size_t)V);
    if (!adj_start || !adj || !queue || !t->parent || !t->parent_link || !t->depth || !t->below || !t->rank_of_node)
        TC_FAIL_GOTO(rc, done, TC_ERR_NOMEM, "topology: out of memory");
    for (int i = 0; i < V; i++) adj_start[i + 1] = adj_start[i] + deg[i];
    for (int i = 0; i < V; i++) deg[i] = adj_start[i];
    for (int l = 0; l < t->num_links; l++) {
        adj[deg[t->links[l].child]++] = l;
        adj[deg[t->links[l].parent]++] = l;
    }
    for (int i = 0; i < V; i++) { t->parent[i] = -1; t->parent_link[i] = -1; t->rank_of_node[i] = -1; }
    for (int r = 0; r < t->num_machines; r++) t->rank_of_node[t->machines[r]] = r;
    int head = 0, tail = 0;
    queue[tail++] = t->top;
    t->height = 0;
    while (head < tail) {
        int u = queue[head++];
        for (int e = adj_start[u]; e < adj_start[u + 1]; e++) {
            tc_link_decl *k = &t->links[adj[e]];
            int v = k->child == u ? k->parent : k->child;
            if (v == t->parent[u]) continue;
            t->parent[v] = u;
            t->parent_link[v] = adj[e];
            t->depth[v] = t->depth[u] + 1;
            if (t->depth[v] > t->height) t->height = t->depth[v];
            k->child = v;      /* store links oriented child -> parent */
            k->parent = u;
            queue[tail++] = v;
        }
    }
    if (t->height > TC_MAX_LEVELS)
        TC_FAIL_GOTO(rc, done, TC_ERR_LIMIT, "topology: a machine sits %d links below the top switch; the limit is %d levels",
                     t->height, TC_MAX_LEVELS);
    for (int i = tail - 1; i >= 0; i--) {
        int u = queue[i];
        if (t->nodes[u].kind == TC_NODE_MACHINE) t->below[u]++;
        if (t->parent[u] >= 0) t->below[t->parent[u]] += t->below[u];
    }
    t->finalized = true;
done:
    free(uf); free(deg); free(adj_start); free(adj); free(queue);
    if (rc != TC_OK) free_derived(t);
    return rc;
}

/* ---- queries ---- */
const char *tc_topology_name(const tc_topology *t) { return t->name ? t->name : ""; }
int tc_topology_num_nodes(const tc_topology *t) { return t->num_nodes; }
int tc_topology_num_machines(const tc_topology *t) { return t->num_machines; }
int tc_topology_num_switches(const tc_topology *t) { return t->num_nodes - t->num_machines; }
const char *tc_topology_node_name(const tc_topology *t, int n) { return t->nodes[n].name; }
tc_node_kind tc_topology_node_kind(const tc_topology *t, int n) { return t->nodes[n].kind; }
int tc_topology_machine_node(const tc_topology *t, int rank) { return t->machines[rank]; }
int tc_topology_node_parent(const tc_topology *t, int node) { return t->parent[node]; }
int tc_topology_machine_rank(const tc_topology *t, int node)
{
    if (t->rank_of_node) return t->rank_of_node[node];
    for (int r = 0; r < t->num_machines; r++)
        if (t->machines[r] == node) return r;
    return -1;
}
int tc_topology_machine_slots(const tc_topology *t, int rank) { return t->nodes[t->machines[rank]].slots; }
int tc_topology_num_links(const tc_topology *t) { return t->num_links; }

void tc_topology_link(const tc_topology *t, int l, int *child, int *parent, double *bw, double *lat)
{
    const tc_link_decl *k = &t->links[l];
    if (child) *child = k->child;
    if (parent) *parent = k->parent;
    if (bw) *bw = k->bandwidth;
    if (lat) *lat = k->latency;
}

int tc_topology_link_machines_below(const tc_topology *t, int l) { return t->below[t->links[l].child]; }

int64_t tc_topology_link_load(const tc_topology *t, int l)
{
    int64_t b = t->below[t->links[l].child];
    return b * ((int64_t)t->num_machines - b);
}

int64_t tc_topology_alltoall_load(const tc_topology *t)
{
    int64_t best = 0;
    for (int l = 0; l < t->num_links; l++) {
        int64_t x = tc_topology_link_load(t, l);
        if (x > best) best = x;
    }
    return best;
}

double tc_topology_peak_factor(const tc_topology *t)
{
    int64_t load = tc_topology_alltoall_load(t), m = t->num_machines;
    return load ? (double)(m * (m - 1)) / (double)load : 0.0;
}

double tc_topology_peak_throughput(const tc_topology *t, double default_bw)
{
    double worst = 0;   /* seconds per bit of block size on the slowest-to-drain link */
    for (int l = 0; l < t->num_links; l++) {
        double bw = t->links[l].bandwidth > 0 ? t->links[l].bandwidth : default_bw;
        double x = (double)tc_topology_link_load(t, l) / bw;
        if (x > worst) worst = x;
    }
    int64_t m = t->num_machines;
    return worst > 0 ? (double)(m * (m - 1)) / worst : 0.0;
}

/* The rate of the slowest link joining a host (a machine, or a machine
 * expanded into its ranks) to the network. */
static double slowest_host_rate(const tc_topology *t, double default_bw)
{
    double r = 0;
    for (int l = 0; l < t->num_links; l++) {
        int child = t->links[l].child;
        int host = t->nodes[child].kind == TC_NODE_MACHINE ? !tc_topology_link_is_local(t, l) : t->nodes[child].host;
        double bw = t->links[l].bandwidth > 0 ? t->links[l].bandwidth : default_bw;
        if (host && (r == 0 || bw < r)) r = bw;
    }
    return r;
}

/* floor(rate(l) / r), at least 1, at most TC_MAX_CAPACITY (r > 0). */
static int capacity_over(const tc_topology *t, int l, double default_bw, double r)
{
    double bw = t->links[l].bandwidth > 0 ? t->links[l].bandwidth : default_bw;
    double c = r > 0 ? bw / r * (1 + 1e-12) : 1;   /* 200 Mbit over 100: 2, not 1.9999 */
    return c < 1 ? 1 : c > TC_MAX_CAPACITY ? TC_MAX_CAPACITY : (int)c;
}

int tc_topology_link_capacity(const tc_topology *t, int l, double default_bw)
{
    return capacity_over(t, l, default_bw, slowest_host_rate(t, default_bw));
}

int64_t tc_topology_capacitated_load(const tc_topology *t, double default_bw, int *link, double *host_rate)
{
    double r = slowest_host_rate(t, default_bw);
    int64_t best = 0;
    if (link) *link = -1;
    if (host_rate) *host_rate = r;
    for (int l = 0; l < t->num_links; l++) {
        int64_t cap = capacity_over(t, l, default_bw, r), x = (tc_topology_link_load(t, l) + cap - 1) / cap;
        if (x > best) {
            best = x;
            if (link) *link = l;
        }
    }
    return best;
}

int tc_topology_height(const tc_topology *t) { return t->height; }

int tc_topology_path(const tc_topology *t, int src, int dst, int32_t *edges)
{
    int a = t->machines[src], b = t->machines[dst], n = 0, down = 0;
    int32_t tmp[256];
    int32_t *rev = t->height <= 128 ? tmp : NULL;
    /* climb the deeper end until both meet; up edges go out in order, down
     * edges are collected and reversed */
    while (a != b) {
        if (t->depth[a] >= t->depth[b]) {
            edges[n++] = 2 * t->parent_link[a];
            a = t->parent[a];
        } else {
            int32_t e = 2 * t->parent_link[b] + 1;
            if (rev) rev[down++] = e; else edges[t->height * 2 - 1 - down++] = e;
            b = t->parent[b];
        }
    }
    for (int i = down - 1; i >= 0; i--)
        edges[n++] = rev ? rev[i] : edges[t->height * 2 - 1 - i];
    return n;
}

/* ---- Faraj & Yuan, section 4.1: the root and its subtrees ---- */
tc_status tc_topology_aapc_root(const tc_topology *t, int *root_node, int *num_subtrees, int *sizes,
                                int *subtree_of_rank, int *subtree_node)
{
    if (!t->finalized) TC_FAIL(TC_ERR_ARG, "topology not finalized");
    int M = t->num_machines;
    if (M < 2) TC_FAIL(TC_ERR_UNSUPPORTED, "the all-to-all root needs at least 2 machines (topology has %d)", M);
    /* A bottleneck link L=(u,v) with |Mu| >= |Mv|: walk from u away from v
     * while u has only one branch holding machines.  Here a link's child side
     * holds `below` machines; u is the side with more. */
    int64_t load = tc_topology_alltoall_load(t);
    int bl = -1;
    for (int l = 0; l < t->num_links && bl < 0; l++)
        if (tc_topology_link_load(t, l) == load) bl = l;
    int c = t->links[bl].child, p = t->links[bl].parent;
    /* On a tie (|Mu| = |Mv|) take the parent side: for the paper's Figure 1
     * this gives its root s1 and so exactly its Table 4. */
    int u = 2 * t->below[c] > M ? c : p, from = u == c ? p : c;
    for (;;) {
        /* branches of u other than towards `from` that hold machines */
        int count = 0, next = -1;
        for (int l = 0; l < t->num_links; l++) {
            int a = t->links[l].child, b = t->links[l].parent, w;
            if (a == u) w = b; else if (b == u) w = a; else continue;
            if (w == from) continue;
            int m = w == t->parent[u] ? M - t->below[u] : t->below[w];
            if (m > 0) { count++; next = w; }
        }
        if (count != 1) break;
        from = u;
        u = next;
    }
    *root_node = u;
    /* Subtrees: every branch of the root holding machines (a machine on the
     * root is a subtree of size 1); branches without machines are dropped. */
    int k = 0;
    int *branch_of = tc_xmalloc(sizeof(int) * (size_t)t->num_nodes);
    if (!branch_of) TC_FAIL(TC_ERR_NOMEM, "out of memory");
    for (int l = 0; l < t->num_links; l++) {
        int a = t->links[l].child, b = t->links[l].parent, w;
        if (a == u) w = b; else if (b == u) w = a; else continue;
        int m = w == t->parent[u] ? M - t->below[u] : t->below[w];
        if (m == 0) continue;
        subtree_node[k] = w;
        sizes[k] = m;
        k++;
    }
    /* Largest first; ties keep link order (the paper allows any order of
     * equal sizes, but the proofs of steps 1-5 need non-increasing sizes). */
    for (int i = 1; i < k; i++) {
        int s = sizes[i], n = subtree_node[i], j = i - 1;
        while (j >= 0 && sizes[j] < s) { sizes[j + 1] = sizes[j]; subtree_node[j + 1] = subtree_node[j]; j--; }
        sizes[j + 1] = s;
        subtree_node[j + 1] = n;
    }
    /* Which subtree each machine is in: climb to the root's neighbour. */
    for (int i = 0; i < t->num_nodes; i++) branch_of[i] = -2;
    branch_of[u] = -1;
    for (int i = 0; i < k; i++) branch_of[subtree_node[i]] = i;
    for (int r = 0; r < M; r++) {
        int x = t->machines[r];
        /* climb until a node whose branch is known; the root's parent side is
         * reached through the root's parent, so climbing works both ways:
         * a machine above the root climbs past the root's parent chain. */
        int y = x;
        while (branch_of[y] == -2) {
            if (t->parent[y] < 0) break;
            y = t->parent[y];
        }
        if (branch_of[y] >= 0) { subtree_of_rank[r] = branch_of[y]; continue; }
        /* reached the root from below (impossible: then x's branch is a child
         * branch of the root, which was labelled) or the top without meeting
         * a label: x lies on the root's parent side */
        int pi = -1;
        for (int i = 0; i < k; i++)
            if (subtree_node[i] == t->parent[u]) pi = i;
        subtree_of_rank[r] = pi;
    }
    free(branch_of);
    *num_subtrees = k;
    return TC_OK;
}
