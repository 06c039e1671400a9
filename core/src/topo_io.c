/* Loading and writing topologies in any format, synthetic topologies from a
 * short string, and structural equality (for round-trip tests). */
#include "tc_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char *const format_names[] = {"auto", "slurm", "yaml", "slurm-yaml", "mpich", "ibnetdiscover", NULL};

const char *tc_format_name(int format)
{
    return format >= 0 && format < (int)(sizeof format_names / sizeof *format_names) ? format_names[format] : NULL;
}

/* The format of a file by its contents (its extension for .conf): */
static tc_format sniff(const char *path, const char *text, size_t len)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (dot && !strcasecmp(dot, ".conf")) return TC_FORMAT_SLURM;
    int line = 0;
    bool yaml_list = false, first_content = true, second_is_rank = false;
    for (size_t i = 0; i < len; line++) {
        size_t e = i;
        while (e < len && text[e] != '\n') e++;
        const char *s = text + i;
        size_t l = e - i;
        i = e + 1;
        while (l && (*s == ' ' || *s == '\t')) { s++; l--; }
        if (l >= 11 && !strncasecmp(s, "SwitchName=", 11)) return TC_FORMAT_SLURM;
        if ((l >= 7 && !strncmp(s, "Switch", 6) && (s[6] == ' ' || s[6] == '\t')) ||
            (l >= 3 && !strncmp(s, "Ca", 2) && (s[2] == ' ' || s[2] == '\t')) || (l >= 10 && !strncmp(s, "switchguid=", 10)) ||
            (l >= 7 && !strncmp(s, "caguid=", 7)))
            return TC_FORMAT_IBNET;
        if (line == 1) {   /* MPICH: a header, then "RANK: G S P" */
            size_t k = 0;
            while (k < l && s[k] >= '0' && s[k] <= '9') k++;
            second_is_rank = k > 0 && k < l && s[k] == ':';
        }
        if (!l || *s == '#' || (l >= 3 && !strncmp(s, "---", 3))) continue;
        if (first_content) yaml_list = *s == '-' && (l == 1 || s[1] == ' ' || s[1] == '\t');
        first_content = false;
    }
    if (second_is_rank) return TC_FORMAT_MPICH;
    return yaml_list ? TC_FORMAT_SLURM_YAML : TC_FORMAT_YAML;
}

tc_status tc_topology_parse_with(const char *text, size_t len, tc_format format, const char *filename,
                                 const tc_load_options *opt, tc_topology **topo)
{
    if (!text || !topo) TC_FAIL(TC_ERR_ARG, "topology: missing argument");
    const char *file = filename ? filename : "<string>";
    if (len > (size_t)TC_MAX_FILE_BYTES)
        TC_FAIL(TC_ERR_LIMIT, "%s: %zu bytes is more than the limit of %ld bytes for a topology", file, len,
                (long)TC_MAX_FILE_BYTES);
    /* The parsers read C strings: a NUL byte would end the file early. */
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        int line = 1;
        for (const char *c = text; c < nul; c++) line += *c == '\n';
        TC_FAIL(TC_ERR_PARSE, "%s:%d: a NUL byte: a topology file is text", file, line);
    }
    if (format == TC_FORMAT_AUTO) format = sniff(filename, text, len);
    tc_status rc;
    switch (format) {
    case TC_FORMAT_SLURM: rc = tc_slurm_parse(text, len, filename, topo); break;
    case TC_FORMAT_YAML: rc = tc_yaml_parse(text, len, filename, topo); break;
    case TC_FORMAT_SLURM_YAML: rc = tc_slurm_yaml_parse(text, len, filename, opt ? opt->topology_name : NULL, topo); break;
    case TC_FORMAT_MPICH: rc = tc_mpich_parse(text, len, filename, topo); break;
    case TC_FORMAT_IBNET: rc = tc_ibnet_parse(text, len, filename, opt ? opt->node_name_map : NULL, topo); break;
    default: TC_FAIL(TC_ERR_ARG, "topology: format %d (0 to %d)", (int)format, TC_FORMAT_IBNET);
    }
    if (rc == TC_OK && filename && *filename != '<' && !*tc_topology_name(*topo)) {
        const char *base = strrchr(filename, '/');
        base = base ? base + 1 : filename;
        char name[256];
        snprintf(name, sizeof name, "%s", base);
        char *dot = strrchr(name, '.');
        if (dot && dot != name) *dot = '\0';
        if (tc_topology_set_name(*topo, name)) { tc_topology_destroy(*topo); *topo = NULL; TC_FAIL(TC_ERR_NOMEM, "out of memory"); }
    }
    return rc;
}

tc_status tc_topology_parse(const char *text, size_t len, tc_format format, const char *filename, tc_topology **topo)
{
    return tc_topology_parse_with(text, len, format, filename, NULL, topo);
}

/* "chain:8,8", "24": a spec rather than a file name (no path, no extension). */
static bool looks_synthetic(const char *s)
{
    if (!*s || strchr(s, '/') || strchr(s, '.')) return false;
    if (strchr(s, ':')) return true;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return false;
    return true;
}

tc_status tc_read_file(const char *path, const char *what, char **text, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f) TC_FAIL(TC_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) break;
        if (len > (size_t)TC_MAX_FILE_BYTES) {
            fclose(f);
            free(buf);
            TC_FAIL(TC_ERR_LIMIT, "%s: more than the limit of %ld bytes for a %s file", path, (long)TC_MAX_FILE_BYTES, what);
        }
        if (len == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf) TC_FAIL(TC_ERR_NOMEM, "out of memory reading '%s'", path);
    if (bad) { free(buf); TC_FAIL(TC_ERR_IO, "cannot read %s '%s'", what, path); }
    buf[len] = '\0';
    *text = buf;
    *len_out = len;
    return TC_OK;
}

tc_status tc_topology_load(const char *path, tc_format format, tc_topology **topo)
{
    return tc_topology_load_with(path, format, NULL, topo);
}

tc_status tc_topology_load_with(const char *path, tc_format format, const tc_load_options *opt, tc_topology **topo)
{
    if (!path || !topo) TC_FAIL(TC_ERR_ARG, "topology: missing argument");
    /* a spec, unless a file of that name exists */
    if (looks_synthetic(path) && access(path, F_OK) != 0) {
        int err = errno;
        tc_status rc = tc_topology_synthetic(path, topo);
        if (rc != TC_OK && err == ENOENT)
            TC_FAIL(rc, "'%.200s' is no file, nor a valid topology spec: %s", path, tc_error_message());
        return rc;
    }
    char *buf;
    size_t len;
    tc_status rc = tc_read_file(path, "topology", &buf, &len);
    if (rc) return rc;
    rc = tc_topology_parse_with(buf, len, format, path, opt, topo);
    free(buf);
    return rc;
}

tc_status tc_topology_write(const tc_topology *topo, tc_format format, FILE *out)
{
    if (!topo || !out) TC_FAIL(TC_ERR_ARG, "topology: missing argument");
    switch (format) {
    case TC_FORMAT_SLURM: return tc_slurm_write(topo, out);
    case TC_FORMAT_SLURM_YAML: return tc_slurm_yaml_write(topo, out);
    case TC_FORMAT_MPICH: return tc_mpich_write(topo, out);
    case TC_FORMAT_IBNET:
        TC_FAIL(TC_ERR_UNSUPPORTED, "ibnetdiscover output is read, not written: it is a fabric's discovery, with "
                "GUIDs a topology does not have");
    case TC_FORMAT_AUTO:
    case TC_FORMAT_YAML: return tc_yaml_write(topo, out);
    }
    TC_FAIL(TC_ERR_ARG, "topology: format %d (0 to %d)", (int)format, TC_FORMAT_IBNET);
}

/* ---- synthetic ---- */
static tc_status parse_counts(const char *spec, const char *list, int *counts, int *n, int max)
{
    *n = 0;
    const char *p = list;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 1000000)
            TC_FAIL(TC_ERR_PARSE, "topology spec '%.64s': expected numbers from 0 to 1000000 separated by commas", spec);
        if (*n == max) TC_FAIL(TC_ERR_LIMIT, "topology spec '%.64s': more than %d numbers", spec, max);
        counts[(*n)++] = (int)v;
        p = end;
        if (*p == ',') p++;
        else if (*p) TC_FAIL(TC_ERR_PARSE, "topology spec '%.64s': unexpected '%c'", spec, *p);
    }
    if (*n == 0) TC_FAIL(TC_ERR_PARSE, "topology spec '%.64s': no numbers", spec);
    return TC_OK;
}

typedef struct synth { tc_topology *t; int nm, ns; } synth;

static tc_status synth_switch(synth *s, int parent, char *name)
{
    sprintf(name, "s%d", s->ns++);
    tc_status rc = tc_topology_add_switch(s->t, name, NULL);
    if (rc || parent < 0) return rc;
    char pname[32];
    sprintf(pname, "s%d", parent);
    return tc_topology_add_link(s->t, name, pname, 0, 0, NULL);
}

static tc_status synth_machines(synth *s, const char *sw, int count)
{
    char name[32];
    for (int i = 0; i < count; i++) {
        sprintf(name, "n%d", s->nm++);
        tc_status rc = tc_topology_add_machine(s->t, name, 1, NULL);
        if (rc || (rc = tc_topology_add_link(s->t, name, sw, 0, 0, NULL))) return rc;
    }
    return TC_OK;
}

static tc_status synth_tree(synth *s, int parent, const int *fan, int levels)
{
    char name[32];
    int me = s->ns;
    tc_status rc = synth_switch(s, parent, name);
    if (rc) return rc;
    if (levels == 1) return synth_machines(s, name, fan[0]);
    for (int i = 0; i < fan[0] && rc == TC_OK; i++) rc = synth_tree(s, me, fan + 1, levels - 1);
    return rc;
}

tc_status tc_topology_synthetic(const char *spec, tc_topology **topo)
{
    int counts[64], n;
    tc_status rc = TC_OK;
    synth s = {0};
    char name[32];
    if (!spec || !topo) TC_FAIL(TC_ERR_ARG, "topology spec: missing argument");
    const char *colon = strchr(spec, ':');
    const char *kind = colon ? spec : "star";
    size_t kind_len = colon ? (size_t)(colon - spec) : 4;
    TC_TRY(rc, out, parse_counts(spec, colon ? colon + 1 : spec, counts, &n, 64));
    /* Refuse what would pass the limits before building any of it. */
    int64_t machines = 0, switches = 0, levels = n;
    if (kind[0] == 't') {
        int64_t width = 1;
        for (int i = 0; i < n; i++) {
            switches += width;
            width = width * counts[i] > TC_MAX_MACHINES + 1LL ? TC_MAX_MACHINES + 1LL : width * counts[i];
        }
        machines = width;
    } else {
        for (int i = 0; i < n; i++) machines += counts[i];
        switches = n;
        levels = kind[0] == 'c' ? n : 2;
    }
    if (machines > TC_MAX_MACHINES)
        TC_FAIL_GOTO(rc, out, TC_ERR_LIMIT, "topology spec '%.64s': more than the limit of %d machines", spec,
                     TC_MAX_MACHINES);
    if (switches > TC_MAX_SWITCHES)
        TC_FAIL_GOTO(rc, out, TC_ERR_LIMIT, "topology spec '%.64s': more than the limit of %d switches", spec,
                     TC_MAX_SWITCHES);
    if (levels > TC_MAX_LEVELS)
        TC_FAIL_GOTO(rc, out, TC_ERR_LIMIT, "topology spec '%.64s': more than the limit of %d levels", spec,
                     TC_MAX_LEVELS);
    TC_TRY(rc, out, tc_topology_create(&s.t));
    TC_TRY(rc, out, tc_topology_set_name(s.t, spec));
    if (!strncmp(kind, "star", kind_len) && kind_len == 4) {
        TC_TRY(rc, out, synth_switch(&s, -1, name));
        TC_TRY(rc, out, synth_machines(&s, name, counts[0]));
        for (int i = 1; i < n; i++) {
            TC_TRY(rc, out, synth_switch(&s, 0, name));
            TC_TRY(rc, out, synth_machines(&s, name, counts[i]));
        }
    } else if (!strncmp(kind, "chain", kind_len) && kind_len == 5) {
        for (int i = 0; i < n; i++) {
            TC_TRY(rc, out, synth_switch(&s, i - 1, name));
            TC_TRY(rc, out, synth_machines(&s, name, counts[i]));
        }
    } else if (!strncmp(kind, "tree", kind_len) && kind_len == 4) {
        TC_TRY(rc, out, synth_tree(&s, -1, counts, n));
    } else
        TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "topology spec '%.64s': unknown shape '%.*s' (use N, star:a,b,.., chain:a,b,.. or tree:f1,..,m)",
                     spec, (int)kind_len, kind);
    TC_TRY(rc, out, tc_topology_finalize(s.t));
    *topo = s.t;
    return TC_OK;
out:
    tc_topology_destroy(s.t);
    return rc;
}

/* ---- equality ---- */
static int link_between(const tc_topology *t, int x, int y)
{
    if (t->parent[x] == y) return t->parent_link[x];
    if (t->parent[y] == x) return t->parent_link[y];
    return -1;
}

int tc_topology_equal(const tc_topology *a, const tc_topology *b)
{
    if (!a->finalized || !b->finalized) return 0;
    if (a->num_nodes != b->num_nodes || a->num_machines != b->num_machines || a->num_links != b->num_links) return 0;
    for (int r = 0; r < a->num_machines; r++) {
        const tc_node *x = &a->nodes[a->machines[r]], *y = &b->nodes[b->machines[r]];
        if (strcmp(x->name, y->name) || x->slots != y->slots) return 0;
    }
    for (int i = 0; i < a->num_nodes; i++) {
        int j = tc_topology_node_find(b, a->nodes[i].name);
        if (j < 0 || b->nodes[j].kind != a->nodes[i].kind) return 0;
    }
    for (int l = 0; l < a->num_links; l++) {
        int x = tc_topology_node_find(b, a->nodes[a->links[l].child].name);
        int y = tc_topology_node_find(b, a->nodes[a->links[l].parent].name);
        int m = link_between(b, x, y);
        if (m < 0 || b->links[m].bandwidth != a->links[l].bandwidth || b->links[m].latency != a->links[l].latency)
            return 0;
    }
    return 1;
}

tc_status tc_topology_copy_links_finalize(const tc_topology *t, const char *keep, tc_topology *r)
{
    for (int l = 0; l < t->num_links; l++) {
        const tc_link_decl *k = &t->links[l];
        if (keep && !(keep[k->child] && keep[k->parent])) continue;
        tc_status rc = tc_topology_add_link(r, t->nodes[k->child].name, t->nodes[k->parent].name, k->bandwidth,
                                            k->latency, k->where);
        if (rc != TC_OK) return rc;
    }
    return tc_topology_finalize(r);
}

/* ---- restriction to some machines ---- */
tc_status tc_topology_restrict(const tc_topology *t, const int *ranks, int n, tc_topology **out)
{
    tc_status rc = TC_OK;
    tc_topology *r = NULL;
    char *keep = NULL;
    if (!t->finalized) TC_FAIL(TC_ERR_ARG, "topology not finalized");
    if (n < 1) TC_FAIL(TC_ERR_ARG, "restrict: no machines given");
    keep = tc_xcalloc((size_t)t->num_nodes, 1);
    if (!keep) TC_FAIL(TC_ERR_NOMEM, "out of memory");
    TC_TRY(rc, done, tc_topology_create(&r));
    TC_TRY(rc, done, tc_topology_set_name(r, t->name ? t->name : ""));
    TC_TRY(rc, done, tc_topology_set_note(r, tc_topology_note(t)));
    for (int i = 0; i < t->num_nodes; i++)
        if (t->nodes[i].kind == TC_NODE_SWITCH) {
            keep[i] = 1;
            TC_TRY(rc, done, tc_topology_add_switch(r, t->nodes[i].name, t->nodes[i].where));
            if (t->nodes[i].host) TC_TRY(rc, done, tc_topology_mark_host(r, t->nodes[i].name));
        }
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= t->num_machines)
            TC_FAIL_GOTO(rc, done, TC_ERR_ARG, "restrict: machine rank %d out of range (%d machines)", ranks[i], t->num_machines);
        int node = t->machines[ranks[i]];
        if (keep[node]) TC_FAIL_GOTO(rc, done, TC_ERR_ARG, "restrict: machine '%s' given twice", t->nodes[node].name);
        keep[node] = 1;
        TC_TRY(rc, done, tc_topology_add_machine(r, t->nodes[node].name, t->nodes[node].slots, t->nodes[node].where));
    }
    TC_TRY(rc, done, tc_topology_copy_links_finalize(t, keep, r));
    *out = r;
    r = NULL;
done:
    free(keep);
    tc_topology_destroy(r);
    return rc;
}

/* ---- what the writers share ---- */
typedef struct order_key { int key, node; } order_key;

static int cmp_order(const void *a, const void *b)
{
    const order_key *x = a, *y = b;
    return x->key != y->key ? (x->key < y->key ? -1 : 1) : (x->node > y->node) - (x->node < y->node);
}

tc_status tc_topology_walk(const tc_topology *t, tc_walk *w)
{
    int V = t->num_nodes;
    /* the files list a switch's machines together: ranks must not come back
     * to a switch after others' (MPICH's coordinates may) */
    char *left = tc_xcalloc((size_t)V + 1, 1);
    if (!left) TC_FAIL(TC_ERR_NOMEM, "out of memory");
    for (int r = 1; r < t->num_machines; r++) {
        int a = t->parent[t->machines[r - 1]], b = t->parent[t->machines[r]];
        if (a == b) continue;
        if (a >= 0) left[a] = 1;
        if (b >= 0 && left[b]) {
            free(left);
            TC_FAIL(TC_ERR_UNSUPPORTED, "rank %d (%s) is on switch %s again after ranks on other switches: this format "
                    "lists a switch's machines together, in rank order, and the ranks interleave switches",
                    r, t->nodes[t->machines[r]].name, t->nodes[b].name);
        }
    }
    free(left);
    order_key *keys = tc_xmalloc(sizeof(order_key) * (size_t)V);
    int *pos = tc_xmalloc(sizeof(int) * (size_t)V);
    memset(w, 0, sizeof *w);
    w->order = tc_xmalloc(sizeof(int) * (size_t)V);
    w->begin = tc_xcalloc((size_t)V + 1, sizeof(int));
    w->child = tc_xmalloc(sizeof(int) * (size_t)V);
    if (!keys || !pos || !w->order || !w->begin || !w->child) {
        free(keys); free(pos); tc_walk_free(w);
        TC_FAIL(TC_ERR_NOMEM, "out of memory");
    }
    /* switches by their first machine's rank (those without machines last),
     * then by declaration: the order that keeps rank order when read back */
    for (int i = 0; i < V; i++) keys[i] = (order_key){INT32_MAX, i};
    for (int r = t->num_machines - 1; r >= 0; r--)
        if (t->parent[t->machines[r]] >= 0) keys[t->parent[t->machines[r]]].key = r;
    int ns = 0;
    for (int i = 0; i < V; i++)
        if (t->nodes[i].kind == TC_NODE_SWITCH) keys[ns++] = keys[i];
    qsort(keys, (size_t)ns, sizeof *keys, cmp_order);
    for (int i = 0; i < ns; i++) { w->order[i] = keys[i].node; pos[keys[i].node] = i; }
    w->ns = ns;
    /* children of each node: machines in rank order, then switches in that order */
    for (int i = 0; i < V; i++)
        if (t->parent[i] >= 0) w->begin[t->parent[i] + 1]++;
    for (int i = 0; i < V; i++) w->begin[i + 1] += w->begin[i];
    for (int i = 0; i < V; i++) pos[i] = w->begin[i];   /* now: next free slot a node */
    for (int r = 0; r < t->num_machines; r++) {
        int m = t->machines[r];
        if (t->parent[m] >= 0) w->child[pos[t->parent[m]]++] = m;
    }
    for (int i = 0; i < ns; i++) {
        int sw = w->order[i];
        if (t->parent[sw] >= 0) w->child[pos[t->parent[sw]]++] = sw;
    }
    free(keys);
    free(pos);
    return TC_OK;
}

void tc_walk_free(tc_walk *w)
{
    free(w->order);
    free(w->begin);
    free(w->child);
    memset(w, 0, sizeof *w);
}

tc_status tc_topology_children(const tc_topology *t, const tc_walk *w, int s, char **machines, char **switches)
{
    tc_status rc = TC_OK;
    int n = w->begin[s + 1] - w->begin[s], nm = 0;
    const int *kids = w->child + w->begin[s];
    const char **names = tc_xmalloc(sizeof(char *) * (size_t)(n ? n : 1));
    *machines = *switches = NULL;
    if (!names) TC_FAIL(TC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) names[i] = t->nodes[kids[i]].name;
    while (nm < n && t->nodes[kids[nm]].kind == TC_NODE_MACHINE) nm++;
    if (nm) rc = tc_hostlist_compress(names, (size_t)nm, machines);
    if (n > nm && rc == TC_OK) rc = tc_hostlist_compress(names + nm, (size_t)(n - nm), switches);
    free(names);
    return rc;
}
