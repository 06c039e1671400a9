/*
 * Slurm's topology.yaml (topology.yaml(5), which supersedes topology.conf):
 *
 *   - topology: fabric          # a list of named topologies
 *     cluster_default: true     # the one used where none is named
 *     tree:
 *       switches:
 *         - switch: spine
 *           children: leaf[0-1] # hostlist of switches
 *         - switch: leaf0
 *           nodes: n[0-3]       # hostlist of nodes
 *   - topology: blocks
 *     block:
 *       block_sizes: [4, 16]
 *       blocks:
 *         - block: b0
 *           nodes: n[0-3]
 *   - topology: none
 *     flat: true
 *
 * Which topology: the one named (--topology-name, TOPOCOLL_TOPOLOGY_NAME),
 * else the first with cluster_default: true, else the only one.  A tree
 * topology is read as topology.conf's switches; a block topology as a
 * two-level tree, one switch a block below a top switch named after the
 * topology (Slurm's blocks are groups of nodes with fast links among them);
 * a flat topology names no nodes and is refused.  Slurm gives no link rates
 * in this file: the links have none (--bandwidth, TOPOCOLL_BANDWIDTH).
 */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

typedef struct sctx {
    yaml_document_t doc;
    const char *file;
    char where[512];
} sctx;

static const char *at(sctx *c, const yaml_node_t *n)
{
    snprintf(c->where, sizeof c->where, "%s:%lu", c->file, (unsigned long)n->start_mark.line + 1);
    return c->where;
}

#define SFAIL(c, node, status, ...)                                                                        \
    do {                                                                                                   \
        char msg_[512];                                                                                    \
        snprintf(msg_, sizeof msg_, __VA_ARGS__);                                                          \
        TC_FAIL((status), "%s: %s", at((c), (node)), msg_);                                                \
    } while (0)

static yaml_node_t *node(sctx *c, int id) { return yaml_document_get_node(&c->doc, id); }
static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value of key in mapping m (NULL if absent); keys outside allowed
 * (a NULL-terminated list) are refused at their line. */
static tc_status lookup(sctx *c, yaml_node_t *m, const char *const *allowed, const char *what, const char *key,
                        yaml_node_t **out)
{
    *out = NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(c, p->key);
        const char *name = scalar(k);
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++) known = name && !strcmp(name, *a);
        if (!known) {
            char list[256] = "";
            for (const char *const *a = allowed; *a; a++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", a == allowed ? "" : ", ", *a);
            SFAIL(c, k, TC_ERR_PARSE, "unknown key '%s' in %s (expected %s)", name ? name : "?", what, list);
        }
        if (!strcmp(name, key)) *out = node(c, p->value);
    }
    return TC_OK;
}

static tc_status need_mapping(sctx *c, yaml_node_t *n, const char *what)
{
    if (!n || n->type != YAML_MAPPING_NODE) SFAIL(c, n ? n : yaml_document_get_root_node(&c->doc), TC_ERR_PARSE, "%s: expected a mapping", what);
    return TC_OK;
}

static tc_status need_sequence(sctx *c, yaml_node_t *n, const char *what)
{
    if (!n || n->type != YAML_SEQUENCE_NODE) SFAIL(c, n ? n : yaml_document_get_root_node(&c->doc), TC_ERR_PARSE, "%s: expected a list", what);
    return TC_OK;
}

/* A hostlist, or a list of names and hostlists, as one hostlist string. */
static tc_status names_of(sctx *c, yaml_node_t *n, const char *what, char **out)
{
    *out = NULL;
    if (scalar(n)) {
        if (!*scalar(n)) SFAIL(c, n, TC_ERR_PARSE, "%s: empty", what);
        *out = tc_strdup(scalar(n));
    } else if (n->type == YAML_SEQUENCE_NODE) {
        size_t len = 1;
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
            const char *s = scalar(node(c, *it));
            if (!s || !*s) SFAIL(c, node(c, *it), TC_ERR_PARSE, "%s: expected a name or hostlist", what);
            len += strlen(s) + 1;
        }
        if (len == 1) SFAIL(c, n, TC_ERR_PARSE, "%s: empty list", what);
        if ((*out = tc_xmalloc(len)) != NULL) {
            (*out)[0] = '\0';
            for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
                strcat(strcat(*out, **out ? "," : ""), scalar(node(c, *it)));
        }
    } else
        SFAIL(c, n, TC_ERR_PARSE, "%s: expected a hostlist such as n[0-7] or a list of names", what);
    if (!*out) TC_FAIL(TC_ERR_NOMEM, "out of memory");
    return TC_OK;
}

static bool truthy(const char *s) { return s && (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcmp(s, "1")); }
/* (flat: false reads as no topology type at all: Slurm requires one) */

static tc_status tree_of(sctx *c, yaml_node_t *tree, tc_topology *t)
{
    static const char *const tree_keys[] = {"switches", NULL}, *const sw_keys[] = {"switch", "children", "nodes", NULL};
    yaml_node_t *list, *name, *kids, *nodes;
    tc_status rc = TC_OK;
    TC_TRY(rc, out, need_mapping(c, tree, "tree"));
    TC_TRY(rc, out, lookup(c, tree, tree_keys, "a tree", "switches", &list));
    TC_TRY(rc, out, need_sequence(c, list ? list : tree, "tree: switches"));
    int n = (int)(list->data.sequence.items.top - list->data.sequence.items.start);
    for (int pass = 0; pass < 3; pass++)   /* switches, then nodes in file order, then children */
        for (int i = 0; i < n; i++) {
            yaml_node_t *sw = node(c, list->data.sequence.items.start[i]);
            TC_TRY(rc, out, need_mapping(c, sw, "a switch"));
            TC_TRY(rc, out, lookup(c, sw, sw_keys, "a switch", "switch", &name));
            TC_TRY(rc, out, lookup(c, sw, sw_keys, "a switch", "children", &kids));
            TC_TRY(rc, out, lookup(c, sw, sw_keys, "a switch", "nodes", &nodes));
            if (!scalar(name) || !*scalar(name)) SFAIL(c, sw, TC_ERR_PARSE, "%s", "a switch without 'switch: NAME'");
            char where[512];
            snprintf(where, sizeof where, "%s", at(c, pass == 1 && nodes ? nodes : pass == 2 && kids ? kids : sw));
            char *names = NULL;
            if (pass == 0) rc = tc_topology_add_switch(t, scalar(name), where);
            else if (pass == 1 && nodes && (rc = names_of(c, nodes, "nodes", &names)) == TC_OK)
                rc = tc_slurm_attach(t, names, scalar(name), 0, where, true);
            else if (pass == 2 && kids && (rc = names_of(c, kids, "children", &names)) == TC_OK)
                rc = tc_slurm_attach(t, names, scalar(name), 0, where, false);
            free(names);
            if (rc) goto out;
        }
out:
    return rc;
}

static tc_status block_of(sctx *c, yaml_node_t *block, const char *top, tc_topology *t)
{
    static const char *const block_keys[] = {"block_sizes", "blocks", NULL}, *const b_keys[] = {"block", "nodes", NULL};
    yaml_node_t *sizes, *list, *name, *nodes;
    tc_status rc = TC_OK;
    TC_TRY(rc, out, need_mapping(c, block, "block"));
    TC_TRY(rc, out, lookup(c, block, block_keys, "a block topology", "block_sizes", &sizes));
    TC_TRY(rc, out, lookup(c, block, block_keys, "a block topology", "blocks", &list));
    if (sizes) {   /* read for errors only: the planner uses the blocks themselves */
        TC_TRY(rc, out, need_sequence(c, sizes, "block_sizes"));
        for (yaml_node_item_t *it = sizes->data.sequence.items.start; it < sizes->data.sequence.items.top; it++) {
            const char *s = scalar(node(c, *it));
            char *end;
            long v = s ? strtol(s, &end, 10) : 0;
            if (!s || *end || v < 1 || v > TC_MAX_MACHINES) SFAIL(c, node(c, *it), TC_ERR_PARSE, "block_sizes: '%s' is not a node count", s ? s : "?");
        }
    }
    TC_TRY(rc, out, need_sequence(c, list ? list : block, "block: blocks"));
    TC_TRY(rc, out, tc_topology_add_switch(t, top, at(c, block)));
    for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
        yaml_node_t *b = node(c, *it);
        TC_TRY(rc, out, need_mapping(c, b, "a block"));
        TC_TRY(rc, out, lookup(c, b, b_keys, "a block", "block", &name));
        TC_TRY(rc, out, lookup(c, b, b_keys, "a block", "nodes", &nodes));
        if (!scalar(name) || !*scalar(name)) SFAIL(c, b, TC_ERR_PARSE, "%s", "a block without 'block: NAME'");
        if (!nodes) SFAIL(c, b, TC_ERR_PARSE, "block '%s' has no nodes", scalar(name));
        char where[512], *names = NULL;
        snprintf(where, sizeof where, "%s", at(c, b));
        TC_TRY(rc, out, tc_topology_add_switch(t, scalar(name), where));
        TC_TRY(rc, out, tc_topology_add_link(t, scalar(name), top, 0, 0, where));
        TC_TRY(rc, out, names_of(c, nodes, "nodes", &names));
        rc = tc_slurm_attach(t, names, scalar(name), 0, where, true);
        free(names);
        if (rc) goto out;
    }
out:
    return rc;
}

static tc_status build(sctx *c, const char *want, tc_topology **out)
{
    static const char *const keys[] = {"topology", "cluster_default", "tree", "block", "flat", NULL};
    yaml_node_t *root = yaml_document_get_root_node(&c->doc), *pick = NULL;
    if (!root) TC_FAIL(TC_ERR_PARSE, "%s: empty file: no topology", c->file);
    if (root->type != YAML_SEQUENCE_NODE)
        SFAIL(c, root, TC_ERR_PARSE, "%s", "expected a list of topologies ('- topology: NAME'), as Slurm's topology.yaml");
    char names[512] = "";
    int count = 0, defaults = 0;
    for (yaml_node_item_t *it = root->data.sequence.items.start; it < root->data.sequence.items.top; it++) {
        yaml_node_t *m = node(c, *it), *name, *def;
        tc_status rc = need_mapping(c, m, "a topology");
        if (!rc) rc = lookup(c, m, keys, "a topology", "topology", &name);
        if (!rc) rc = lookup(c, m, keys, "a topology", "cluster_default", &def);
        if (rc) return rc;
        yaml_node_pair_t *first = m->data.mapping.pairs.start;
        if (first == m->data.mapping.pairs.top || strcmp(scalar(node(c, first->key)) ? scalar(node(c, first->key)) : "", "topology") ||
            !scalar(name) || !*scalar(name))
            SFAIL(c, m, TC_ERR_PARSE, "%s", "a topology must start with 'topology: NAME'");
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", count ? ", " : "", scalar(name));
        count++;
        if (want ? !strcmp(want, scalar(name)) : !pick && truthy(scalar(def)) && !defaults++) pick = m;
    }
    if (!pick && !want && count == 1) pick = node(c, root->data.sequence.items.start[0]);
    if (!pick && want) TC_FAIL(TC_ERR_ARG, "%s: no topology named '%s' (the file has: %s)", c->file, want, names);
    if (!pick)
        TC_FAIL(TC_ERR_ARG, "%s: %d topologies (%s) and none is cluster_default: name one (--topology-name, "
                            "TOPOCOLL_TOPOLOGY_NAME)", c->file, count, names);
    const char *top = NULL;
    for (yaml_node_pair_t *p = pick->data.mapping.pairs.start; p < pick->data.mapping.pairs.top; p++)
        if (!strcmp(scalar(node(c, p->key)), "topology")) top = scalar(node(c, p->value));
    tc_topology *t = NULL;
    tc_status rc = TC_OK;
    TC_TRY(rc, done, tc_topology_create(&t));
    TC_TRY(rc, done, tc_topology_set_name(t, top));
    yaml_node_t *tree, *block, *flat;
    TC_TRY(rc, done, lookup(c, pick, keys, "a topology", "tree", &tree));
    TC_TRY(rc, done, lookup(c, pick, keys, "a topology", "block", &block));
    TC_TRY(rc, done, lookup(c, pick, keys, "a topology", "flat", &flat));
    if (!!tree + !!block + !!flat != 1)
        TC_FAIL_GOTO(rc, done, TC_ERR_PARSE, "%s: topology '%s' must have exactly one of tree, block or flat (%d given)",
                     at(c, pick), top, !!tree + !!block + !!flat);
    if (flat)
        TC_FAIL_GOTO(rc, done, TC_ERR_UNSUPPORTED, "%s: topology '%s' is flat: it names no switches or nodes; pick a "
                     "tree or block topology (--topology-name)", at(c, flat), top);
    TC_TRY(rc, done, tree ? tree_of(c, tree, t) : block_of(c, block, top, t));
    TC_TRY(rc, done, tc_topology_finalize(t));
    *out = t;
    t = NULL;
done:
    tc_topology_destroy(t);
    return rc;
}

tc_status tc_slurm_yaml_parse(const char *text, size_t len, const char *file, const char *name, tc_topology **out)
{
    sctx c;
    c.file = file ? file : "<string>";
    tc_status rc = tc_yaml_load_document(text, len, c.file, &c.doc);
    if (rc != TC_OK) return rc;
    rc = build(&c, name && *name ? name : NULL, out);
    yaml_document_delete(&c.doc);
    return rc;
}

/* One tree topology, the cluster default; children machines first. */
tc_status tc_slurm_yaml_write(const tc_topology *t, FILE *f)
{
    tc_status rc = tc_slurm_writable(t, "topology.yaml");
    if (rc) return rc;
    for (int l = 0; l < t->num_links; l++)
        if (t->links[l].bandwidth > 0 || t->links[l].latency > 0)
            TC_FAIL(TC_ERR_UNSUPPORTED, "link %s-%s has a %s; topology.yaml has no link rates or latencies (use "
                    "topocoll YAML, or topology.conf for one rate a switch)", t->nodes[t->links[l].child].name,
                    t->nodes[t->links[l].parent].name, t->links[l].bandwidth > 0 ? "rate" : "latency");
    tc_walk w;
    if ((rc = tc_topology_walk(t, &w))) return rc;
    fprintf(f, "# topology.yaml written by topocoll %s\n- topology: ", TOPOCOLL_VERSION);
    tc_yaml_put_scalar(f, t->name && *t->name ? t->name : "topocoll");
    fprintf(f, "\n  cluster_default: true\n  tree:\n    switches:\n");
    for (int i = 0; i < w.ns; i++) {
        int s = w.order[i];
        char *machines, *switches;
        TC_TRY(rc, out, tc_topology_children(t, &w, s, &machines, &switches));
        fprintf(f, "      - switch: ");
        tc_yaml_put_scalar(f, t->nodes[s].name);
        fputc('\n', f);
        if (switches) { fprintf(f, "        children: "); tc_yaml_put_scalar(f, switches); fputc('\n', f); }
        if (machines) { fprintf(f, "        nodes: "); tc_yaml_put_scalar(f, machines); fputc('\n', f); }
        free(machines);
        free(switches);
    }
    if (ferror(f)) rc = tc_error_set(TC_ERR_IO, __FILE__, __LINE__, "could not write topology.yaml");
out:
    tc_walk_free(&w);
    return rc;
}
