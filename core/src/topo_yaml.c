/*
 * The native YAML topology format (parsed with libyaml):
 *
 *   topocoll: 1                # format version (optional)
 *   name: figure1              # optional
 *   bandwidth: 100Mbit         # default for every link (optional)
 *   latency: 50us              # default for every link (optional)
 *   switches:                  # in any order; ranks follow machine order
 *     - name: s0
 *       machines: n[0-2]       # hostlist, or a list of names/hostlists
 *       switches: [s1]         # child switches (name, hostlist or list)
 *       bandwidth: 1Gbit       # links from s0 to what it lists (optional)
 *       latency: 5us
 *     - name: s1
 *       uplink: {bandwidth: 10Gbit, latency: 1us}   # s1's own link to s0
 *   machines:                  # per-machine settings (optional)
 *     n0: {slots: 4, bandwidth: 10Gbit, latency: 1us}  # slots; own link
 *
 * A link's values come from, most specific first: the child's own settings
 * (machine entry or switch uplink), its parent switch's, the file's.
 */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef struct yctx {
    yaml_document_t doc;
    const char *file;
    char where[512];
    yaml_node_pair_t **machine_pairs;   /* the machines map by name (sorted), */
    size_t num_machine_pairs;           /* so a machine's settings are found in O(log M) */
} yctx;

static const char *where_of(yctx *c, yaml_node_t *n)
{
    snprintf(c->where, sizeof c->where, "%s:%lu", c->file, (unsigned long)n->start_mark.line + 1);
    return c->where;
}

#define YFAIL(c, node, status, fmt, ...) \
    TC_FAIL((status), "%s: " fmt, where_of((c), (node)), __VA_ARGS__)

static yaml_node_t *node_at(yctx *c, int id) { return yaml_document_get_node(&c->doc, id); }

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* Values of a link setting pair; < 0 means not given. */
typedef struct link_values { double bw, lat; } link_values;

static tc_status read_link_value(yctx *c, const char *key, yaml_node_t *v, link_values *lv, bool *matched)
{
    *matched = true;
    if (!strcmp(key, "bandwidth")) {
        if (!scalar(v) || tc_parse_rate(scalar(v), TC_BARE_RATE_UNIT, &lv->bw))
            YFAIL(c, v, TC_ERR_PARSE, "bandwidth: %s", scalar(v) ? tc_error_message() : "expected a rate such as 100Mbit");
    } else if (!strcmp(key, "latency")) {
        if (!scalar(v) || tc_parse_time(scalar(v), 0, &lv->lat))
            YFAIL(c, v, TC_ERR_PARSE, "latency: %s", scalar(v) ? tc_error_message() : "expected a time such as 50us");
    } else
        *matched = false;
    return TC_OK;
}

/* A list of names: a scalar hostlist, or a sequence of scalar hostlists.
 * Calls fn for every name. */
typedef tc_status (*name_fn)(yctx *c, yaml_node_t *where, const char *name, void *arg);

static tc_status for_each_name(yctx *c, yaml_node_t *n, name_fn fn, void *arg)
{
    yaml_node_item_t *items = NULL, *end = NULL;
    yaml_node_item_t single;
    if (n->type == YAML_SCALAR_NODE) {
        single = 0;
        items = &single;
        end = items + 1;
    } else if (n->type == YAML_SEQUENCE_NODE) {
        items = n->data.sequence.items.start;
        end = n->data.sequence.items.top;
    } else
        YFAIL(c, n, TC_ERR_PARSE, "%s", "expected a name, a hostlist such as n[0-7], or a list of them");
    for (yaml_node_item_t *it = items; it < end; it++) {
        yaml_node_t *item = n->type == YAML_SCALAR_NODE ? n : node_at(c, *it);
        if (!scalar(item)) YFAIL(c, item, TC_ERR_PARSE, "%s", "expected a name or hostlist");
        char *names;
        size_t count;
        if (tc_hostlist_expand(scalar(item), &names, &count)) YFAIL(c, item, TC_ERR_PARSE, "%s", tc_error_message());
        char *p = names;
        tc_status rc = TC_OK;
        for (size_t i = 0; i < count && rc == TC_OK; i++, p += strlen(p) + 1) rc = fn(c, item, p, arg);
        free(names);
        if (rc) return rc;
    }
    return TC_OK;
}

typedef struct sw_entry {
    yaml_node_t *node, *name, *machines, *switches;
    const char *sname;
    link_values down, up;
} sw_entry;

typedef struct pass_arg {
    tc_topology *t;
    sw_entry *sw;
    link_values file;
    yaml_node_t *machines_map;
} pass_arg;

static tc_status declare_machine(yctx *c, yaml_node_t *w, const char *name, void *arg)
{
    pass_arg *a = arg;
    int old = tc_topology_node_find(a->t, name);
    if (old >= 0 && tc_topology_node_kind(a->t, old) == TC_NODE_MACHINE)
        YFAIL(c, w, TC_ERR_TOPOLOGY, "machine '%s' (%s) is not a leaf: it is listed again; a machine hangs on one switch",
              name, a->t->nodes[old].where ? a->t->nodes[old].where : "?");
    if (old >= 0)
        YFAIL(c, w, TC_ERR_TOPOLOGY, "duplicate name '%s': it is a switch (%s)", name,
              a->t->nodes[old].where ? a->t->nodes[old].where : "?");
    return tc_topology_add_machine(a->t, name, 1, where_of(c, w));
}

/* qsort has no context argument: the document being indexed (one a thread) */
static _Thread_local yctx *key_ctx;

static int cmp_pair(const void *a, const void *b)
{
    yctx *c = key_ctx;
    return strcmp(scalar(node_at(c, (*(yaml_node_pair_t *const *)a)->key)),
                  scalar(node_at(c, (*(yaml_node_pair_t *const *)b)->key)));
}

/* Index the machines map by name (a linear search a machine made files of
 * many machines quadratic); a machine given twice is refused. */
static tc_status index_machines(yctx *c, yaml_node_t *map)
{
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    c->machine_pairs = tc_xmalloc(sizeof(yaml_node_pair_t *) * (n ? n : 1));
    if (!c->machine_pairs) TC_FAIL(TC_ERR_NOMEM, "yaml: out of memory");
    for (size_t i = 0; i < n; i++) {
        yaml_node_pair_t *p = map->data.mapping.pairs.start + i;
        if (!scalar(node_at(c, p->key))) YFAIL(c, node_at(c, p->key), TC_ERR_PARSE, "%s", "expected a machine name");
        c->machine_pairs[i] = p;
    }
    key_ctx = c;
    qsort(c->machine_pairs, n, sizeof *c->machine_pairs, cmp_pair);
    c->num_machine_pairs = n;
    for (size_t i = 1; i < n; i++) {
        yaml_node_t *a = node_at(c, c->machine_pairs[i - 1]->key), *b = node_at(c, c->machine_pairs[i]->key);
        if (!strcmp(scalar(a), scalar(b))) {
            unsigned long first = (unsigned long)(a->start_mark.line < b->start_mark.line ? a : b)->start_mark.line + 1;
            YFAIL(c, a->start_mark.line < b->start_mark.line ? b : a, TC_ERR_PARSE,
                  "machine '%s' has settings twice (also at line %lu)", scalar(a), first);
        }
    }
    return TC_OK;
}

/* The settings of one machine from the machines map (own link values). */
static tc_status machine_settings(yctx *c, yaml_node_t *map, const char *name, link_values *lv, int *slots,
                                  bool *found)
{
    *found = false;
    if (!map || !c->machine_pairs) return TC_OK;
    size_t lo = 0, hi = c->num_machine_pairs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(scalar(node_at(c, c->machine_pairs[mid]->key)), name) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo == c->num_machine_pairs || strcmp(scalar(node_at(c, c->machine_pairs[lo]->key)), name)) return TC_OK;
    {
        yaml_node_pair_t *p = c->machine_pairs[lo];
        yaml_node_t *v = node_at(c, p->value);
        *found = true;
        if (v->type == YAML_SCALAR_NODE && !*scalar(v)) return TC_OK;   /* "n0:" with nothing */
        if (v->type != YAML_MAPPING_NODE)
            YFAIL(c, v, TC_ERR_PARSE, "machine '%s': expected settings such as {slots: 4}", name);
        for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
            yaml_node_t *kk = node_at(c, q->key), *vv = node_at(c, q->value);
            const char *key = scalar(kk);
            bool matched;
            if (!key) YFAIL(c, kk, TC_ERR_PARSE, "%s", "expected a key");
            tc_status rc = read_link_value(c, key, vv, lv, &matched);
            if (rc) return rc;
            if (matched) continue;
            if (!strcmp(key, "slots")) {
                char *end;
                long s = scalar(vv) ? strtol(scalar(vv), &end, 10) : 0;
                if (!scalar(vv) || end == scalar(vv) || *end || s < 1 || s > TC_MAX_MACHINES)
                    YFAIL(c, vv, TC_ERR_PARSE, "machine '%s': slots must be a whole number from 1 to %d (the limit of ranks)",
                          name, TC_MAX_MACHINES);
                *slots = (int)s;
            } else
                YFAIL(c, kk, TC_ERR_PARSE, "machine '%s': unknown key '%s' (expected slots, bandwidth or latency)", name, key);
        }
    }
    return TC_OK;
}

static double pick(double own, double parent, double file) { return own >= 0 ? own : parent >= 0 ? parent : file >= 0 ? file : 0; }

static tc_status link_machine(yctx *c, yaml_node_t *w, const char *name, void *arg)
{
    pass_arg *a = arg;
    link_values own = {-1, -1};
    int slots = 1;
    bool found;
    tc_status rc = machine_settings(c, a->machines_map, name, &own, &slots, &found);
    if (rc) return rc;
    if (slots != 1 && (rc = tc_topology_set_slots(a->t, name, slots, where_of(c, w)))) return rc;
    return tc_topology_add_link(a->t, name, a->sw->sname, pick(own.bw, a->sw->down.bw, a->file.bw),
                                pick(own.lat, a->sw->down.lat, a->file.lat), where_of(c, w));
}

typedef struct child_arg { pass_arg *a; sw_entry *all; int n; } child_arg;

static tc_status link_switch(yctx *c, yaml_node_t *w, const char *name, void *arg)
{
    child_arg *ca = arg;
    sw_entry *child = NULL;
    /* pass 1 declared switch i as node i, before any machine */
    int node = tc_topology_node_find(ca->a->t, name);
    if (node >= 0 && node < ca->n && tc_topology_node_kind(ca->a->t, node) == TC_NODE_SWITCH) child = &ca->all[node];
    if (!child) {
        if (node >= 0)
            YFAIL(c, w, TC_ERR_TOPOLOGY, "machine '%s' is not a leaf: switch '%s' lists it under switches", name,
                  ca->a->sw->sname);
        YFAIL(c, w, TC_ERR_TOPOLOGY, "switch '%s' lists unknown switch '%s'", ca->a->sw->sname, name);
    }
    return tc_topology_add_link(ca->a->t, name, ca->a->sw->sname, pick(child->up.bw, ca->a->sw->down.bw, ca->a->file.bw),
                                pick(child->up.lat, ca->a->sw->down.lat, ca->a->file.lat), where_of(c, w));
}

static tc_status check_machines_map(yctx *c, tc_topology *t, yaml_node_t *map)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node_at(c, p->key);
        if (!scalar(k)) YFAIL(c, k, TC_ERR_PARSE, "%s", "expected a machine name");
        int n = tc_topology_node_find(t, scalar(k));
        if (n < 0) YFAIL(c, k, TC_ERR_TOPOLOGY, "machine '%s' is not listed under any switch", scalar(k));
        if (tc_topology_node_kind(t, n) != TC_NODE_MACHINE) YFAIL(c, k, TC_ERR_TOPOLOGY, "'%s' is a switch, not a machine", scalar(k));
    }
    return TC_OK;
}

static tc_status build(yctx *c, tc_topology **out)
{
    tc_status rc = TC_OK;
    yaml_node_t *root = yaml_document_get_root_node(&c->doc);
    tc_topology *t = NULL;
    sw_entry *sw = NULL;
    int nsw = 0;
    if (!root) TC_FAIL(TC_ERR_PARSE, "%s: empty file", c->file);
    if (root->type != YAML_MAPPING_NODE)
        YFAIL(c, root, TC_ERR_PARSE, "%s", "expected a mapping with 'switches:' (see docs/topologies.md)");
    pass_arg a = {0};
    a.file = (link_values){-1, -1};
    yaml_node_t *switches = NULL, *name = NULL;
    TC_TRY(rc, out, tc_topology_create(&t));
    a.t = t;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node_at(c, p->key), *v = node_at(c, p->value);
        const char *key = scalar(k);
        bool matched;
        if (!key) { rc = tc_error_set(TC_ERR_PARSE, __FILE__, __LINE__, "%s: expected a key", where_of(c, k)); goto out; }
        TC_TRY(rc, out, read_link_value(c, key, v, &a.file, &matched));
        if (matched) continue;
        if (!strcmp(key, "switches")) switches = v;
        else if (!strcmp(key, "machines")) a.machines_map = v;
        else if (!strcmp(key, "name")) name = v;
        else if (!strcmp(key, "topocoll")) {
            if (!scalar(v) || strcmp(scalar(v), "1"))
                TC_FAIL_GOTO(rc, out, TC_ERR_UNSUPPORTED, "%s: topocoll format version '%s' is not supported (this is version 1)",
                             where_of(c, v), scalar(v) ? scalar(v) : "?");
        } else
            TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s: unknown key '%s' (expected switches, machines, bandwidth, latency, name, topocoll)",
                         where_of(c, k), key);
    }
    if (name && scalar(name)) TC_TRY(rc, out, tc_topology_set_name(t, scalar(name)));
    if (a.machines_map && a.machines_map->type != YAML_MAPPING_NODE)
        TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s: machines: expected a mapping of machine names to settings", where_of(c, a.machines_map));
    if (a.machines_map) TC_TRY(rc, out, index_machines(c, a.machines_map));
    if (!switches) {
        /* a lone machine needs no switch */
        if (a.machines_map && a.machines_map->data.mapping.pairs.top - a.machines_map->data.mapping.pairs.start == 1) {
            yaml_node_t *k = node_at(c, a.machines_map->data.mapping.pairs.start->key);
            link_values own = {-1, -1};
            int slots = 1;
            bool found;
            TC_TRY(rc, out, tc_topology_add_machine(t, scalar(k) ? scalar(k) : "", 1, where_of(c, k)));
            TC_TRY(rc, out, machine_settings(c, a.machines_map, scalar(k), &own, &slots, &found));
            TC_TRY(rc, out, tc_topology_set_slots(t, scalar(k), slots, where_of(c, k)));
            goto finalize;
        }
        TC_FAIL_GOTO(rc, out, TC_ERR_TOPOLOGY, "%s: no 'switches:' list", c->file);
    }
    if (switches->type != YAML_SEQUENCE_NODE)
        TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s: switches: expected a list of switches (- name: s0 ...)", where_of(c, switches));
    nsw = (int)(switches->data.sequence.items.top - switches->data.sequence.items.start);
    sw = tc_xcalloc((size_t)nsw, sizeof *sw);
    if (!sw) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "out of memory");
    /* pass 1: declare switches and read their settings */
    for (int i = 0; i < nsw; i++) {
        yaml_node_t *e = node_at(c, switches->data.sequence.items.start[i]);
        sw[i].node = e;
        sw[i].down = sw[i].up = (link_values){-1, -1};
        if (e->type != YAML_MAPPING_NODE)
            TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s: expected a switch (name: ..., machines: ..., switches: ...)", where_of(c, e));
        for (yaml_node_pair_t *p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top; p++) {
            yaml_node_t *k = node_at(c, p->key), *v = node_at(c, p->value);
            const char *key = scalar(k);
            bool matched;
            if (!key) TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s: expected a key", where_of(c, k));
            TC_TRY(rc, out, read_link_value(c, key, v, &sw[i].down, &matched));
            if (matched) continue;
            if (!strcmp(key, "name")) sw[i].name = v;
            else if (!strcmp(key, "machines")) sw[i].machines = v;
            else if (!strcmp(key, "switches")) sw[i].switches = v;
            else if (!strcmp(key, "uplink")) {
                if (v->type != YAML_MAPPING_NODE)
                    TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s: uplink: expected {bandwidth: ..., latency: ...}", where_of(c, v));
                for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
                    yaml_node_t *kk = node_at(c, q->key);
                    if (!scalar(kk)) TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s: expected a key", where_of(c, kk));
                    TC_TRY(rc, out, read_link_value(c, scalar(kk), node_at(c, q->value), &sw[i].up, &matched));
                    if (!matched)
                        TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s: uplink: unknown key '%s' (expected bandwidth or latency)",
                                     where_of(c, kk), scalar(kk));
                }
            } else
                TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s: unknown switch key '%s' (expected name, machines, switches, bandwidth, latency, uplink)",
                             where_of(c, k), key);
        }
        if (!scalar(sw[i].name) || !*scalar(sw[i].name))
            TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s: switch without a name", where_of(c, e));
        sw[i].sname = scalar(sw[i].name);
        TC_TRY(rc, out, tc_topology_add_switch(t, sw[i].sname, where_of(c, sw[i].name)));
    }
    /* pass 2: machines in file order (ranks), then links */
    for (int i = 0; i < nsw; i++)
        if (sw[i].machines) TC_TRY(rc, out, for_each_name(c, sw[i].machines, declare_machine, &a));
    for (int i = 0; i < nsw; i++) {
        a.sw = &sw[i];
        if (sw[i].machines) TC_TRY(rc, out, for_each_name(c, sw[i].machines, link_machine, &a));
        child_arg ca = {&a, sw, nsw};
        if (sw[i].switches) TC_TRY(rc, out, for_each_name(c, sw[i].switches, link_switch, &ca));
    }
    if (a.machines_map) TC_TRY(rc, out, check_machines_map(c, t, a.machines_map));
finalize:
    TC_TRY(rc, out, tc_topology_finalize(t));
    *out = t;
    t = NULL;
out:
    free(sw);
    tc_topology_destroy(t);
    return rc;
}

static tc_status parser_error(const yaml_parser_t *parser, const char *file)
{
    return tc_error_set(TC_ERR_PARSE, __FILE__, __LINE__, "%s:%lu: %s%s%s", file,
                        (unsigned long)parser->problem_mark.line + 1, parser->problem ? parser->problem : "malformed YAML",
                        parser->context ? " " : "", parser->context ? parser->context : "");
}

/* A first pass over the events, before the document is built: nesting
 * deeper than TC_MAX_NESTING (libyaml's time grows with the square of the
 * depth), aliases (a topology needs none, and they let a small file stand
 * for a large one) and NUL characters in values (C strings would end there)
 * are refused at the line where they occur. */
static tc_status prescan(const char *text, size_t len, const char *file)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    tc_status rc = TC_OK;
    int depth = 0;
    if (!yaml_parser_initialize(&parser)) TC_FAIL(TC_ERR_NOMEM, "yaml: out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    for (;;) {
        if (!yaml_parser_parse(&parser, &ev)) { rc = parser_error(&parser, file); break; }
        unsigned long line = (unsigned long)ev.start_mark.line + 1;
        yaml_event_type_t type = ev.type;
        if (type == YAML_MAPPING_START_EVENT || type == YAML_SEQUENCE_START_EVENT) depth++;
        else if (type == YAML_MAPPING_END_EVENT || type == YAML_SEQUENCE_END_EVENT) depth--;
        if (depth > TC_MAX_NESTING)
            rc = tc_error_set(TC_ERR_LIMIT, __FILE__, __LINE__, "%s:%lu: nesting deeper than the limit of %d levels",
                              file, line, TC_MAX_NESTING);
        else if (type == YAML_ALIAS_EVENT)
            rc = tc_error_set(TC_ERR_PARSE, __FILE__, __LINE__, "%s:%lu: aliases (*name) are not supported in a topology",
                              file, line);
        else if (type == YAML_SCALAR_EVENT && memchr(ev.data.scalar.value, '\0', ev.data.scalar.length))
            rc = tc_error_set(TC_ERR_PARSE, __FILE__, __LINE__, "%s:%lu: a NUL character in a value", file, line);
        yaml_event_delete(&ev);
        if (rc != TC_OK || type == YAML_STREAM_END_EVENT) break;
    }
    yaml_parser_delete(&parser);
    return rc;
}

tc_status tc_yaml_load_document(const char *text, size_t len, const char *file, yaml_document_t *doc)
{
    yaml_parser_t parser;
    tc_status rc = prescan(text, len, file);
    if (rc != TC_OK) return rc;
    if (!yaml_parser_initialize(&parser)) TC_FAIL(TC_ERR_NOMEM, "yaml: out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, doc)) rc = parser_error(&parser, file);
    yaml_parser_delete(&parser);
    return rc;
}

tc_status tc_yaml_parse(const char *text, size_t len, const char *file, tc_topology **out)
{
    yctx c;
    c.file = file ? file : "<string>";
    tc_status rc = tc_yaml_load_document(text, len, c.file, &c.doc);
    if (rc != TC_OK) return rc;
    c.machine_pairs = NULL;
    c.num_machine_pairs = 0;
    rc = build(&c, out);
    free(c.machine_pairs);
    yaml_document_delete(&c.doc);
    return rc;
}

/* ---- writer: defaults at the top where every link shares them, the rest as
 * each child's own settings ---- */
/* A double-quoted YAML scalar: names are of a safe alphabet, but some of
 * them (":", "-", "sw:") mean something unquoted, and a topology's own name
 * comes from a file name or a file and may hold anything.  Bytes outside
 * printable ASCII are escaped (YAML's \xNN), so the output is always YAML. */
void tc_yaml_put_scalar(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f) fprintf(f, "\\x%02x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void put_values(FILE *f, double bw, double lat, bool bw_own, bool lat_own)
{
    char buf[32];
    const char *sep = "";
    if (bw_own) { tc_format_rate(bw, buf, sizeof buf); fprintf(f, "bandwidth: %s", buf); sep = ", "; }
    if (lat_own) { tc_format_time(lat, buf, sizeof buf); fprintf(f, "%slatency: %s", sep, buf); }
}

tc_status tc_yaml_write(const tc_topology *t, FILE *f)
{
    if (!t->finalized) TC_FAIL(TC_ERR_ARG, "topology not finalized");
    tc_status rc = TC_OK;
    int L = t->num_links;
    bool same_bw = L > 0, same_lat = L > 0;
    for (int l = 1; l < L; l++) {
        same_bw = same_bw && t->links[l].bandwidth == t->links[0].bandwidth;
        same_lat = same_lat && t->links[l].latency == t->links[0].latency;
    }
    double dbw = same_bw ? t->links[0].bandwidth : 0, dlat = same_lat ? t->links[0].latency : 0;
    tc_walk w;
    if ((rc = tc_topology_walk(t, &w))) return rc;
    int ns = w.ns;
    char buf[32];
    fprintf(f, "# topocoll topology (written by topocoll %s)\ntopocoll: 1\n", TOPOCOLL_VERSION);
    if (t->name && *t->name) { fputs("name: ", f); tc_yaml_put_scalar(f, t->name); fputc('\n', f); }
    if (dbw > 0) { tc_format_rate(dbw, buf, sizeof buf); fprintf(f, "bandwidth: %s\n", buf); }
    if (dlat > 0) { tc_format_time(dlat, buf, sizeof buf); fprintf(f, "latency: %s\n", buf); }
    if (ns) fputs("switches:\n", f);
    for (int i = 0; i < ns; i++) {
        int s = w.order[i];
        char *machines, *switches;
        TC_TRY(rc, out, tc_topology_children(t, &w, s, &machines, &switches));
        fputs("  - name: ", f);
        tc_yaml_put_scalar(f, t->nodes[s].name);
        if (machines) { fputs("\n    machines: ", f); tc_yaml_put_scalar(f, machines); }
        if (switches) { fputs("\n    switches: ", f); tc_yaml_put_scalar(f, switches); }
        fputc('\n', f);
        free(machines);
        free(switches);
        int l = t->parent_link[s];
        if (l >= 0 && (t->links[l].bandwidth != dbw || t->links[l].latency != dlat)) {
            fputs("    uplink: {", f);
            put_values(f, t->links[l].bandwidth, t->links[l].latency, t->links[l].bandwidth != dbw,
                       t->links[l].latency != dlat);
            fputs("}\n", f);
        }
    }
    bool header = false;
    for (int r = 0; r < t->num_machines; r++) {
        int m = t->machines[r], l = t->parent_link[m];
        bool bw_own = l >= 0 && t->links[l].bandwidth != dbw, lat_own = l >= 0 && t->links[l].latency != dlat;
        if (t->nodes[m].slots == 1 && !bw_own && !lat_own && l >= 0) continue;
        if (!header) { fputs("machines:\n", f); header = true; }
        fputs("  ", f);
        tc_yaml_put_scalar(f, t->nodes[m].name);
        fputs(": {", f);
        if (t->nodes[m].slots != 1) fprintf(f, "slots: %d%s", t->nodes[m].slots, bw_own || lat_own ? ", " : "");
        if (l >= 0) put_values(f, t->links[l].bandwidth, t->links[l].latency, bw_own, lat_own);
        fputs("}\n", f);
    }
    if (ferror(f)) rc = tc_error_set(TC_ERR_IO, __FILE__, __LINE__, "could not write the topology");
out:
    tc_walk_free(&w);
    return rc;
}
