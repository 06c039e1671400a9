/*
 * An InfiniBand fabric as ibnetdiscover (infiniband-diags) prints it:
 *
 *   Switch  36 "S-248a0703005dd7c0"   # "leaf0 ..." enhanced port 0 lid 3 lmc 0
 *   [1]     "H-0c42a10300a1b2c0"[1](c42a10300a1b2c1)   # "node01 HCA-1" lid 7 4xEDR
 *   [35]    "S-248a0703005dd800"[3]   # "spine0 ..." lid 5 4xHDR
 *
 *   Ca      1 "H-0c42a10300a1b2c0"    # "node01 HCA-1"
 *   [1](c42a10300a1b2c1)  "S-248a0703005dd7c0"[1]   # lid 7 lmc 0 "leaf0 ..." lid 3 4xEDR
 *
 * A node line (Switch or Ca, its port count, its id, its description), then
 * a line a connected port: its number, the peer's id and port, and, last in
 * the comment, the link's width and speed.  Key=value lines (vendid=,
 * caguid=, ...) and comments are skipped; routers are refused.
 *
 * Machines are the host adapters (Ca), named by the first word of their
 * description ("node01 HCA-1": node01) or by the node-name map (lines
 * "GUID name", as opensm's); an adapter's link rate is its port's width x
 * lane rate (data rates, Gbit/s a lane: SDR 2, DDR 4, QDR 8, FDR10 10, FDR
 * 13.64, EDR 25, HDR 50, NDR 100, XDR 200; 4xHDR is 200 Gbit/s).  Switches
 * are named by their description's first word (letters, digits and . _ -
 * : + kept, others '_'), else by their id.
 *
 * A fabric with several spines is not a tree.  Read tier by tier from the
 * leaves (switches holding adapters): the switches of the next tier that
 * connect exactly the same switches below are merged into one switch named
 * "a+b", and a link's rate is the sum of the cables' between the two
 * (parallel cables too).  This assumes the subnet manager spreads traffic
 * evenly over the merged spines (up*-down* routing does, roughly, for
 * all-to-all); the topology's note says which switches were merged.  A
 * switch of a tier that reaches two different merged switches above, a
 * link within a tier, or an adapter on two leaves, is an error naming them.
 */
#define _GNU_SOURCE
#include "tc_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct ib_node {
    char id[32];            /* "S-..." or "H-..." */
    char name[TC_MAX_NAME_LEN + 1];
    bool sw;
    int line;
    int tier;               /* switches: tier (1 = leaf); -1 none yet */
} ib_node;

typedef struct ib_cable { int a, pa, b, pb; double rate; int line; } ib_cable;

typedef struct ibctx {
    const char *file;
    ib_node *nodes;
    int n, cap;
    int *by_id;               /* node numbers sorted by id, once the nodes are read (NULL before) */
    ib_cable *cables;
    int nc, ccap;
    char **map_guid, **map_name;   /* node-name map */
    int nmap;
} ibctx;

static const struct { const char *speed; double lane_gbit; } speeds[] = {
    {"SDR", 2}, {"DDR", 4}, {"QDR", 8}, {"FDR10", 10}, {"FDR", 13.64}, {"EDR", 25}, {"HDR", 50}, {"NDR", 100},
    {"XDR", 200},
};

/* "4xHDR": bit/s; 0 if not a width x speed token; -1 if the speed is unknown */
static double link_rate(const char *tok)
{
    char *end;
    long width = strtol(tok, &end, 10);
    if (end == tok || (*end != 'x' && *end != 'X') || width < 1 || width > 32) return 0;
    for (size_t i = 0; i < sizeof speeds / sizeof speeds[0]; i++)
        if (!strcasecmp(end + 1, speeds[i].speed)) return (double)width * speeds[i].lane_gbit * 1e9;
    return isalpha((unsigned char)end[1]) ? -1 : 0;
}

static _Thread_local const ibctx *sort_ctx;   /* qsort has no context argument */
static int cmp_id(const void *x, const void *y)
{
    return strcasecmp(sort_ctx->nodes[*(const int *)x].id, sort_ctx->nodes[*(const int *)y].id);
}

static int cmp_node_name(const void *x, const void *y)
{
    return strcmp(sort_ctx->nodes[*(const int *)x].name, sort_ctx->nodes[*(const int *)y].name);
}

static int cmp_int(const void *x, const void *y) { return (*(const int *)x > *(const int *)y) - (*(const int *)x < *(const int *)y); }

/* Candidates' sets of groups below, compared as int lists (qsort context). */
typedef struct key_view { const int *keys, *begin, *cand; } key_view;
static _Thread_local key_view key_ctx;
static int cmp_key(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    int la = key_ctx.begin[a + 1] - key_ctx.begin[a], lb = key_ctx.begin[b + 1] - key_ctx.begin[b];
    for (int k = 0; k < la && k < lb; k++) {
        int d = cmp_int(&key_ctx.keys[key_ctx.begin[a] + k], &key_ctx.keys[key_ctx.begin[b] + k]);
        if (d) return d;
    }
    return (la > lb) - (la < lb);
}

/* A node by id: a binary search once the nodes are read, a scan before. */
static int find(const ibctx *c, const char *id)
{
    if (!c->by_id) {
        for (int i = 0; i < c->n; i++)
            if (!strcasecmp(c->nodes[i].id, id)) return i;
        return -1;
    }
    int lo = 0, hi = c->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, d = strcasecmp(c->nodes[c->by_id[mid]].id, id);
        if (!d) return c->by_id[mid];
        if (d < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* the map's name for a node id ("H-0c42..."), by GUID */
static const char *mapped(const ibctx *c, const char *id)
{
    unsigned long long want = strtoull(id + 2, NULL, 16);
    for (int i = 0; i < c->nmap; i++)
        if (strtoull(c->map_guid[i], NULL, 16) == want) return c->map_name[i];
    return NULL;
}

/* A node's name: the map's, else its description's first word; characters
 * outside names' alphabet become '_'; the id if nothing is left. */
static void name_of(const ibctx *c, ib_node *x, const char *desc)
{
    const char *m = mapped(c, x->id), *src = m ? m : desc;
    size_t k = 0;
    while (*src == ' ') src++;
    for (; *src && (m || *src != ' ') && k < TC_MAX_NAME_LEN; src++)
        x->name[k++] = isalnum((unsigned char)*src) || strchr("._-:+", *src) ? *src : '_';
    x->name[k] = '\0';
    if (!k) snprintf(x->name, sizeof x->name, "%s", x->id);
}

static tc_status read_map(ibctx *c, const char *path)
{
    char *text;
    size_t len;
    tc_status rc = tc_read_file(path, "node-name map", &text, &len);
    if (rc) return rc;
    int line = 0;
    char *save = NULL;
    for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
        nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        line++;
        char *hash = strchr(p, '#');
        if (hash) *hash = '\0';
        char *guid = strtok_r(p, " \t\r", &save), *name = guid ? strtok_r(NULL, "\r", &save) : NULL;
        if (!guid) continue;
        while (name && (*name == ' ' || *name == '\t')) name++;
        if (name && *name == '"') {
            char *q = strchr(++name, '"');
            if (q) *q = '\0';
        }
        char *end;
        strtoull(guid, &end, 16);
        if (*end || end == guid || !name || !*name) {
            free(text);
            TC_FAIL(TC_ERR_PARSE, "%s:%d: expected 'GUID name' (a hexadecimal GUID, then the node's name)", path, line);
        }
        char **g = realloc(c->map_guid, sizeof *g * (size_t)(c->nmap + 1));
        if (g) c->map_guid = g;
        char **nm = g ? realloc(c->map_name, sizeof *nm * (size_t)(c->nmap + 1)) : NULL;
        if (nm) c->map_name = nm;
        if (!g || !nm || !(c->map_guid[c->nmap] = tc_strdup(guid))) { free(text); TC_FAIL(TC_ERR_NOMEM, "out of memory"); }
        if (!(c->map_name[c->nmap] = tc_strdup(name))) { free(c->map_guid[c->nmap]); free(text); TC_FAIL(TC_ERR_NOMEM, "out of memory"); }
        c->nmap++;
    }
    free(text);
    return TC_OK;
}

/* '"S-GUID"' or '"H-GUID"' at *p into id; moves past it. */
static bool quoted_id(const char **p, char *id, size_t len)
{
    while (**p == ' ' || **p == '\t') (*p)++;
    if (**p != '"') return false;
    const char *q = strchr(*p + 1, '"');
    if (!q || (size_t)(q - *p - 1) >= len || q - *p - 1 < 3) return false;
    memcpy(id, *p + 1, (size_t)(q - *p - 1));
    id[q - *p - 1] = '\0';
    *p = q + 1;
    return (id[0] == 'S' || id[0] == 'H') && id[1] == '-';
}

/* The file's logical lines, trimmed, without blanks' and comments' (kind
 * 0: blank, 1: skip, 2: node, 3: port). */
static int kind_of(const char *s)
{
    if (!*s) return 0;
    if (*s == '#' || (isalpha((unsigned char)*s) && strchr(s, '=') && !strchr(s, '"'))) return 1;
    if (*s == '[') return 3;
    return 2;
}

/* After the nodes: the index by id, and no id twice. */
static tc_status index_nodes(ibctx *c)
{
    if (!(c->by_id = tc_xmalloc(sizeof(int) * (size_t)(c->n + 1)))) TC_FAIL(TC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < c->n; i++) c->by_id[i] = i;
    sort_ctx = c;
    if (c->n) qsort(c->by_id, (size_t)c->n, sizeof(int), cmp_id);
    for (int i = 1; i < c->n; i++) {
        const ib_node *a = &c->nodes[c->by_id[i - 1]], *b = &c->nodes[c->by_id[i]];
        if (!strcasecmp(a->id, b->id))
            TC_FAIL(TC_ERR_PARSE, "%s:%d: node %s again (line %d)", c->file, a->line > b->line ? a->line : b->line, b->id,
                    a->line < b->line ? a->line : b->line);
    }
    return TC_OK;
}

/* Two passes: the nodes, then the ports (peers may come later in the file). */
static tc_status parse_lines(ibctx *c, char *text)
{
    for (int pass = 0; pass < 2; pass++) {
        tc_status rc = pass == 1 ? index_nodes(c) : TC_OK;
        if (rc) return rc;
        int line = 0, cur = -1;
        for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
            nl = strchr(p, '\n');
            size_t l = nl ? (size_t)(nl - p) : strlen(p);
            char buf[1024];
            line++;
            if (l >= sizeof buf) TC_FAIL(TC_ERR_PARSE, "%s:%d: a line of %zu bytes; ibnetdiscover's are short", c->file, line, l);
            memcpy(buf, p, l);
            buf[l] = '\0';
            while (l && strchr("\r \t", buf[l - 1])) buf[--l] = '\0';
            const char *s = buf;
            while (*s == ' ' || *s == '\t') s++;
            int kind = kind_of(s);
            if (kind == 0) cur = -1;
            if (kind < 2) continue;
            const char *hash = strchr(s, '#'), *comment = hash ? hash + 1 : "";
            if (kind == 2) {
                if (!strncmp(s, "Rt", 2) && (s[2] == ' ' || s[2] == '\t'))
                    TC_FAIL(TC_ERR_UNSUPPORTED, "%s:%d: a router: topocoll reads one subnet's switches and adapters", c->file, line);
                bool sw = !strncmp(s, "Switch", 6);
                if (!sw && strncmp(s, "Ca", 2))
                    TC_FAIL(TC_ERR_PARSE, "%s:%d: expected a node line (Switch, Ca) or a port line ([N] ...), got '%.60s'",
                            c->file, line, s);
                const char *q = s + (sw ? 6 : 2);
                char *end, id[32];
                long ports = strtol(q, &end, 10);
                q = end;
                if (end == s + (sw ? 6 : 2) || ports < 1 || ports > 4096 || !quoted_id(&q, id, sizeof id) || id[0] != (sw ? 'S' : 'H'))
                    TC_FAIL(TC_ERR_PARSE, "%s:%d: expected '%s PORTS \"%s-GUID\" # \"description\"'", c->file, line,
                            sw ? "Switch" : "Ca", sw ? "S" : "H");
                if (pass == 1) { cur = find(c, id); continue; }
                if (c->n == c->cap) {
                    c->cap = c->cap ? c->cap * 2 : 64;
                    ib_node *nn = realloc(c->nodes, sizeof *nn * (size_t)c->cap);
                    if (!nn) TC_FAIL(TC_ERR_NOMEM, "out of memory");
                    c->nodes = nn;
                }
                ib_node *x = &c->nodes[c->n++];
                memset(x, 0, sizeof *x);
                snprintf(x->id, sizeof x->id, "%s", id);
                x->sw = sw;
                x->line = line;
                x->tier = -1;
                const char *d = strchr(comment, '"'), *de = d ? strchr(d + 1, '"') : NULL;
                char desc[256] = "";
                if (d && de) snprintf(desc, sizeof desc, "%.*s", (int)(de - d - 1), d + 1);
                name_of(c, x, desc);
                cur = c->n - 1;
                continue;
            }
            if (pass == 0) continue;
            if (cur < 0) TC_FAIL(TC_ERR_PARSE, "%s:%d: a port line outside a node (after a blank line?)", c->file, line);
            const char *q = s + 1;
            char *end, peer[32];
            long port = strtol(q, &end, 10);
            if (end == q || *end != ']' || port < 0 || port > 4096) TC_FAIL(TC_ERR_PARSE, "%s:%d: expected '[PORT]'", c->file, line);
            q = end + 1;
            if (*q == '(' && !(q = strchr(q, ')'))) TC_FAIL(TC_ERR_PARSE, "%s:%d: unclosed '(' after the port", c->file, line);
            if (*q == ')') q++;
            long peer_port = -1;
            if (quoted_id(&q, peer, sizeof peer) && *q == '[') peer_port = strtol(q + 1, &end, 10);
            if (peer_port < 0 || *end != ']')
                TC_FAIL(TC_ERR_PARSE, "%s:%d: port %ld: expected the peer, '\"S-GUID\"[PORT]' or '\"H-GUID\"[PORT]' "
                        "(a truncated line?)", c->file, line, port);
            int b = find(c, peer);
            if (b < 0) TC_FAIL(TC_ERR_TOPOLOGY, "%s:%d: port %ld leads to %s, which the file does not describe", c->file, line, port, peer);
            const char *last = NULL;   /* the rate: the comment's last token */
            for (const char *t = comment; *t; t++)
                if ((t == comment || t[-1] == ' ' || t[-1] == '\t') && *t != ' ' && *t != '\t') last = t;
            double rate = last ? link_rate(last) : 0;
            if (rate < 0)
                TC_FAIL(TC_ERR_PARSE, "%s:%d: unknown link speed '%s' (known: 1x to 32x of SDR, DDR, QDR, FDR10, FDR, "
                        "EDR, HDR, NDR, XDR)", c->file, line, last);
            if (rate == 0)
                TC_FAIL(TC_ERR_PARSE, "%s:%d: port %ld: no link width and speed (such as 4xHDR) at the end of the line",
                        c->file, line, port);
            if (c->nc == c->ccap) {
                c->ccap = c->ccap ? c->ccap * 2 : 256;
                ib_cable *nc2 = realloc(c->cables, sizeof *nc2 * (size_t)c->ccap);
                if (!nc2) TC_FAIL(TC_ERR_NOMEM, "out of memory");
                c->cables = nc2;
            }
            bool first = cur < b || (cur == b && port <= peer_port);   /* one order for both ends' lines */
            c->cables[c->nc++] = first ? (ib_cable){cur, (int)port, b, (int)peer_port, rate, line}
                                       : (ib_cable){b, (int)peer_port, cur, (int)port, rate, line};
        }
    }
    return TC_OK;
}

static int cmp_cable(const void *x, const void *y)
{
    const ib_cable *a = x, *b = y;
    if (a->a != b->a) return a->a - b->a;
    if (a->pa != b->pa) return a->pa - b->pa;
    if (a->b != b->b) return a->b - b->b;
    return a->pb - b->pb;
}

/* Hosts by their leaf's name, then their own (ranks grouped by switch, as
 * every topology file orders them); the leaf's name is in desc_leaf. */
typedef struct ib_host { const char *leaf, *name; int node; } ib_host;
static int cmp_host(const void *x, const void *y)
{
    const ib_host *a = x, *b = y;
    int c = strverscmp(a->leaf, b->leaf);
    return c ? c : strverscmp(a->name, b->name);
}

/* The tree: tiers from the leaves up, switches of a tier that serve the same
 * switches below merged. */
static tc_status build(ibctx *c, tc_topology **out)
{
    tc_status rc = TC_OK;
    tc_topology *t = NULL;
    int *gid = NULL, *members = NULL, *parent = NULL, ngroups = 0;
    double *up_rate = NULL;
    char *note = NULL;
    size_t note_len = 0;
    /* one cable a port pair, its two lines agreeing */
    if (c->nc) qsort(c->cables, (size_t)c->nc, sizeof *c->cables, cmp_cable);
    int m = 0;
    for (int i = 0; i < c->nc; i++) {
        if (m && !cmp_cable(&c->cables[m - 1], &c->cables[i])) {
            if (c->cables[m - 1].rate != c->cables[i].rate)
                TC_FAIL(TC_ERR_TOPOLOGY, "%s:%d: the cable %s[%d]-%s[%d] runs at another rate at line %d", c->file,
                        c->cables[i].line, c->nodes[c->cables[i].a].name, c->cables[i].pa, c->nodes[c->cables[i].b].name,
                        c->cables[i].pb, c->cables[m - 1].line);
            continue;
        }
        c->cables[m++] = c->cables[i];
    }
    c->nc = m;
    /* unique names: switches sharing a description (the model's name) are
     * named by their ids; two adapters of one name are an error */
    {
        int *by_name = tc_xmalloc(sizeof(int) * (size_t)(c->n + 1));
        if (!by_name) TC_FAIL(TC_ERR_NOMEM, "out of memory");
        for (int i = 0; i < c->n; i++) by_name[i] = i;
        sort_ctx = c;
        if (c->n) qsort(by_name, (size_t)c->n, sizeof(int), cmp_node_name);
        for (int i = 0; i + 1 < c->n; i++) {
            int j = i + 1;
            while (j < c->n && !strcmp(c->nodes[by_name[i]].name, c->nodes[by_name[j]].name)) j++;
            for (int a = i; a < j && j - i > 1; a++)
                for (int b = a + 1; b < j; b++)
                    if (!c->nodes[by_name[a]].sw && !c->nodes[by_name[b]].sw) {
                        const ib_node *x = &c->nodes[by_name[a]], *y = &c->nodes[by_name[b]];
                        free(by_name);
                        TC_FAIL(TC_ERR_TOPOLOGY, "%s:%d: adapter %s has the name %s of the one at line %d: a host "
                                "with two adapters is not supported (name them apart with --node-name-map)", c->file,
                                x->line > y->line ? x->line : y->line, x->line > y->line ? x->id : y->id, x->name,
                                x->line < y->line ? x->line : y->line);
                    }
            for (int a = i; a < j && j - i > 1; a++)
                if (c->nodes[by_name[a]].sw)
                    snprintf(c->nodes[by_name[a]].name, sizeof c->nodes[by_name[a]].name, "%s", c->nodes[by_name[a]].id);
            i = j - 1;
        }
        free(by_name);
    }
    /* adapters: one leaf each */
    gid = tc_xmalloc(sizeof(int) * (size_t)(c->n + 1));
    members = tc_xmalloc(sizeof(int) * (size_t)(c->n + 1));
    parent = tc_xmalloc(sizeof(int) * (size_t)(c->n + 1));
    up_rate = tc_xcalloc((size_t)c->n + 1, sizeof(double));
    if (!gid || !members || !parent || !up_rate) TC_FAIL_GOTO(rc, done, TC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < c->n; i++) gid[i] = parent[i] = -1;
    for (int i = 0; i < c->nc; i++) {
        ib_cable *k = &c->cables[i];
        int h = !c->nodes[k->a].sw ? k->a : !c->nodes[k->b].sw ? k->b : -1, s = h == k->a ? k->b : k->a;
        if (h < 0) continue;
        if (!c->nodes[s].sw)
            TC_FAIL_GOTO(rc, done, TC_ERR_TOPOLOGY, "%s:%d: adapters %s and %s are cabled to each other; topocoll reads "
                         "switched fabrics", c->file, k->line, c->nodes[h].name, c->nodes[s].name);
        if (parent[h] >= 0 && parent[h] != s)
            TC_FAIL_GOTO(rc, done, TC_ERR_TOPOLOGY, "%s:%d: host %s is on two leaves, %s and %s; a machine hangs on one "
                         "switch", c->file, k->line, c->nodes[h].name, c->nodes[parent[h]].name, c->nodes[s].name);
        parent[h] = s;
        up_rate[h] += k->rate;
        c->nodes[s].tier = 1;
    }
    /* groups of tier 1: each leaf its own */
    for (int i = 0; i < c->n; i++)
        if (c->nodes[i].sw && c->nodes[i].tier == 1) { gid[i] = ngroups; members[ngroups++] = i; }
    if (!ngroups) TC_FAIL_GOTO(rc, done, TC_ERR_TOPOLOGY, "%s: no switch holds an adapter: no machines", c->file);
    /* group tiers upwards; gparent[g]: the group above g */
    int *gparent = tc_xmalloc(sizeof(int) * (size_t)(c->n + 1));
    char (*gname)[TC_MAX_NAME_LEN + 1] = NULL;
    if (!gparent) TC_FAIL_GOTO(rc, done, TC_ERR_NOMEM, "out of memory");
    for (int g = 0; g < c->n; g++) gparent[g] = -1;
    /* switch-to-switch neighbours (CSR), for the tiers' sets below */
    int *adj_begin = tc_xcalloc((size_t)c->n + 2, sizeof(int)), *adj = tc_xmalloc(sizeof(int) * (size_t)(2 * c->nc + 1));
    int *cand = tc_xmalloc(sizeof(int) * (size_t)(c->n + 1)), *key_begin = tc_xmalloc(sizeof(int) * (size_t)(c->n + 2));
    int *keys = tc_xmalloc(sizeof(int) * (size_t)(2 * c->nc + 1));
    if (!adj_begin || !adj || !cand || !key_begin || !keys) {
        free(adj_begin); free(adj); free(cand); free(key_begin); free(keys);
        TC_FAIL_GOTO(rc, groups_done, TC_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < c->nc; k++)
        if (c->nodes[c->cables[k].a].sw && c->nodes[c->cables[k].b].sw) { adj_begin[c->cables[k].a + 2]++; adj_begin[c->cables[k].b + 2]++; }
    for (int i = 0; i < c->n; i++) adj_begin[i + 2] += adj_begin[i + 1];
    for (int k = 0; k < c->nc; k++)
        if (c->nodes[c->cables[k].a].sw && c->nodes[c->cables[k].b].sw) {
            adj[adj_begin[c->cables[k].a + 1]++] = c->cables[k].b;
            adj[adj_begin[c->cables[k].b + 1]++] = c->cables[k].a;
        }
    int lo = 0, hi = ngroups, tier = 1;
    for (;;) {
        /* switches above the tier's groups, each with its sorted set of groups below; equal sets, one group */
        int before = ngroups, nc2 = 0, nk = 0;
        for (int i = 0; i < c->n; i++) {
            if (!c->nodes[i].sw || c->nodes[i].tier >= 0) continue;
            int first = nk;
            for (int a = adj_begin[i]; a < adj_begin[i + 1]; a++)
                if (gid[adj[a]] >= lo && gid[adj[a]] < hi) keys[nk++] = gid[adj[a]];
            if (nk == first) continue;
            qsort(keys + first, (size_t)(nk - first), sizeof(int), cmp_int);
            int w = first;
            for (int a = first; a < nk; a++)
                if (a == first || keys[a] != keys[a - 1]) keys[w++] = keys[a];
            nk = w;
            key_begin[nc2] = first;
            cand[nc2++] = i;
            key_begin[nc2] = nk;
        }
        key_ctx = (key_view){keys, key_begin, cand};
        int *order = tc_xmalloc(sizeof(int) * (size_t)(nc2 + 1));
        if (!order) { rc = tc_error_set(TC_ERR_NOMEM, __FILE__, __LINE__, "out of memory"); break; }
        for (int k = 0; k < nc2; k++) order[k] = k;
        if (nc2) qsort(order, (size_t)nc2, sizeof(int), cmp_key);
        for (int k = 0; k < nc2; k++) {
            int i = cand[order[k]];
            c->nodes[i].tier = tier + 1;
            if (k == 0 || cmp_key(&order[k - 1], &order[k])) members[ngroups++] = i;
            gid[i] = ngroups - 1;
        }
        free(order);
        if (ngroups == before) break;   /* nothing above: the top */
        /* each group below under one group above */
        for (int k = 0; k < c->nc; k++) {
            ib_cable *cb = &c->cables[k];
            for (int end = 0; end < 2; end++) {
                int x = end ? cb->b : cb->a, y = end ? cb->a : cb->b;
                if (!c->nodes[x].sw || !c->nodes[y].sw || gid[x] < lo || gid[x] >= hi) continue;
                if (gid[y] >= lo && gid[y] < hi && gid[y] != gid[x] && !rc)
                    rc = tc_error_set(TC_ERR_TOPOLOGY, __FILE__, __LINE__, "%s:%d: switches %s and %s, of one tier, are "
                                      "cabled to each other: not a tree", c->file, cb->line, c->nodes[x].name,
                                      c->nodes[y].name);
                if (rc || gid[y] < hi) continue;
                if (gparent[gid[x]] >= 0 && gparent[gid[x]] != gid[y])
                    rc = tc_error_set(TC_ERR_TOPOLOGY, __FILE__, __LINE__, "%s:%d: %s reaches %s and %s above it, which "
                                      "serve different switches below: not a tree, even with the switches of a tier "
                                      "that serve the same switches merged", c->file, cb->line, c->nodes[x].name,
                                      c->nodes[members[gparent[gid[x]]]].name, c->nodes[y].name);
                else
                    gparent[gid[x]] = gid[y];
            }
        }
        if (rc) break;
        lo = hi;
        hi = ngroups;
        tier++;
    }
    free(adj_begin); free(adj); free(cand); free(key_begin); free(keys);
    if (rc) goto groups_done;
    for (int i = 0; i < c->n; i++)
        if (c->nodes[i].sw && gid[i] < 0)
            TC_FAIL_GOTO(rc, groups_done, TC_ERR_TOPOLOGY, "%s:%d: switch %s is not connected to the adapters' switches",
                         c->file, c->nodes[i].line, c->nodes[i].name);
    if (hi - lo > 1)
        TC_FAIL_GOTO(rc, groups_done, TC_ERR_TOPOLOGY, "%s: the fabric falls apart into %d parts (no switch joins %s and %s)",
                     c->file, hi - lo, c->nodes[members[lo]].name, c->nodes[members[lo + 1]].name);
    /* the groups' names: "a+b" for merged ones, and the note */
    gname = tc_xcalloc((size_t)ngroups + 1, sizeof *gname);
    if (!gname) TC_FAIL_GOTO(rc, groups_done, TC_ERR_NOMEM, "out of memory");
    for (int g = 0; g < ngroups; g++) {
        int count = 0;
        bool fits = true;
        for (int i = 0; i < c->n; i++)
            if (c->nodes[i].sw && gid[i] == g) {
                size_t l = strlen(gname[g]);
                if (fits && l + strlen(c->nodes[i].name) + 2 < sizeof gname[g])
                    snprintf(gname[g] + l, sizeof gname[g] - l, "%s%s", count ? "+" : "", c->nodes[i].name);
                else
                    fits = false;
                count++;
            }
        if (!fits)   /* too long a name: the first and a count ("spine0+63") */
            snprintf(gname[g], sizeof gname[g], "%.200s+%d", c->nodes[members[g]].name, count - 1);
        if (count > 1) {
            char line[512];
            int len = snprintf(line, sizeof line, "%s%d switches read as one, %s: they serve the same switches below; "
                               "its links carry the sum of their cables' rates", note_len ? "; " : "", count, gname[g]);
            char *nn = realloc(note, note_len + (size_t)len + 1);
            if (!nn) TC_FAIL_GOTO(rc, groups_done, TC_ERR_NOMEM, "out of memory");
            note = nn;
            memcpy(note + note_len, line, (size_t)len + 1);
            note_len += (size_t)len;
        }
    }
    /* the topology: switches, machines in name order, links with summed rates */
    TC_TRY(rc, groups_done, tc_topology_create(&t));
    char where[512];
    for (int g = 0; g < ngroups; g++) {
        snprintf(where, sizeof where, "%s:%d", c->file, c->nodes[members[g]].line);
        TC_TRY(rc, groups_done, tc_topology_add_switch(t, gname[g], where));
    }
    double *grate = tc_xcalloc((size_t)ngroups + 1, sizeof(double));   /* a group's link up: its cables' sum */
    if (!grate) TC_FAIL_GOTO(rc, groups_done, TC_ERR_NOMEM, "out of memory");
    for (int k = 0; k < c->nc; k++) {
        ib_cable *cb = &c->cables[k];
        if (!c->nodes[cb->a].sw || !c->nodes[cb->b].sw) continue;
        if (gparent[gid[cb->a]] == gid[cb->b]) grate[gid[cb->a]] += cb->rate;
        else if (gparent[gid[cb->b]] == gid[cb->a]) grate[gid[cb->b]] += cb->rate;
    }
    for (int g = 0; g < ngroups && rc == TC_OK; g++) {
        if (gparent[g] < 0) continue;
        snprintf(where, sizeof where, "%s:%d", c->file, c->nodes[members[g]].line);
        rc = tc_topology_add_link(t, gname[g], gname[gparent[g]], grate[g], 0, where);
    }
    free(grate);
    if (rc) goto groups_done;
    ib_host *hosts = tc_xmalloc(sizeof *hosts * (size_t)(c->n + 1));
    int nh = 0;
    if (!hosts) TC_FAIL_GOTO(rc, groups_done, TC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < c->n; i++)
        if (!c->nodes[i].sw && parent[i] >= 0)   /* (an adapter without a cable is not in the fabric) */
            hosts[nh++] = (ib_host){gname[gid[parent[i]]], c->nodes[i].name, i};
    if (nh) qsort(hosts, (size_t)nh, sizeof *hosts, cmp_host);
    for (int k = 0; k < nh && rc == TC_OK; k++) {
        int i = hosts[k].node;
        snprintf(where, sizeof where, "%s:%d", c->file, c->nodes[i].line);
        rc = tc_topology_add_machine(t, c->nodes[i].name, 1, where);
        if (rc == TC_OK) rc = tc_topology_add_link(t, c->nodes[i].name, gname[gid[parent[i]]], up_rate[i], 0, where);
    }
    free(hosts);
    if (rc) goto groups_done;
    if (note) TC_TRY(rc, groups_done, tc_topology_set_note(t, note));
    TC_TRY(rc, groups_done, tc_topology_finalize(t));
    *out = t;
    t = NULL;
groups_done:
    free(gname);
    free(gparent);
done:
    tc_topology_destroy(t);
    free(gid);
    free(members);
    free(parent);
    free(up_rate);
    free(note);
    return rc;
}

tc_status tc_ibnet_parse(const char *text, size_t len, const char *file, const char *node_name_map, tc_topology **out)
{
    ibctx c;
    memset(&c, 0, sizeof c);
    c.file = file ? file : "<string>";
    char *buf = tc_xmalloc(len + 1);
    if (!buf) TC_FAIL(TC_ERR_NOMEM, "out of memory");
    memcpy(buf, text, len);
    buf[len] = '\0';
    tc_status rc = node_name_map ? read_map(&c, node_name_map) : TC_OK;
    if (rc == TC_OK) rc = parse_lines(&c, buf);
    if (rc == TC_OK && c.n == 0) rc = tc_error_set(TC_ERR_PARSE, __FILE__, __LINE__, "%s: no Switch or Ca lines: not ibnetdiscover output", c.file);
    if (rc == TC_OK) rc = build(&c, out);
    for (int i = 0; i < c.nmap; i++) { free(c.map_guid[i]); free(c.map_name[i]); }
    free(c.map_guid); free(c.map_name);
    free(c.nodes); free(c.cables); free(c.by_id); free(buf);
    return rc;
}
