/*
 * MPICH's coordinates file (MPIR_CVAR_COORDINATES_FILE): a header line,
 * then one line a rank, "RANK: GROUP SWITCH PORT" (whole numbers; PORT may
 * be -1, unknown), as MPICH's own reader takes it.
 *
 * Read as a three-level tree: a top switch "fabric", a switch "gG" a group,
 * a switch "gG-sS" a switch of a group, and below it the ranks' hosts: the
 * ranks on one port are one machine "gG-sS-pP" with that many slots (their
 * ranks must be consecutive: topocoll numbers a machine's ranks together);
 * a rank on port -1 is a machine of its own, "rankR".  Ranks must be 0..n-1,
 * each once, in any order of lines.  The file names no hosts and no rates.
 * Written back (tc_mpich_write) from any tree of that shape.
 */
#include "tc_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct coord { long rank, group, sw, port; int line; } coord;

static int by_rank(const void *a, const void *b)
{
    const coord *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* A whole number at *p (after blanks); -1 allowed where neg. */
static int number(const char **p, long *v, bool neg)
{
    while (**p == ' ' || **p == '\t') (*p)++;
    const char *s = *p;
    if (*s == '-' && !neg) return 0;
    char *end;
    long x = strtol(s, &end, 10);
    if (end == s || (*end && !strchr(" \t\r:", *end)) || x > 1000000000L || (neg ? x < -1 : x < 0)) return 0;
    *p = end;
    *v = x;
    return 1;
}

tc_status tc_mpich_parse(const char *text, size_t len, const char *file, tc_topology **out)
{
    coord *c = NULL;
    size_t n = 0, cap = 0;
    tc_topology *t = NULL;
    tc_status rc = TC_OK;
    if (!file) file = "<string>";
    int line = 0;
    for (const char *p = text, *end = text + len; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *stop = nl ? nl : end;
        char buf[256];
        size_t l = (size_t)(stop - p);
        const char *lp = p;
        p = nl ? nl + 1 : end;
        if (line == 0) continue;   /* the header, as MPICH skips it */
        if (l >= sizeof buf) TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s:%d: a line of %zu bytes; a coordinates line is short", file, line + 1, l);
        memcpy(buf, lp, l);
        buf[l] = '\0';
        const char *q = buf;
        while (*q == ' ' || *q == '\t' || *q == '\r') q++;
        if (!*q) continue;
        coord x = {0, 0, 0, 0, line + 1};
        if (!number(&q, &x.rank, false) || *q++ != ':')
            TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s:%d: expected 'RANK: GROUP SWITCH PORT', got '%.60s'", file, line + 1, buf);
        if (!number(&q, &x.group, false) || !number(&q, &x.sw, false) || !number(&q, &x.port, true))
            TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s:%d: rank %ld: expected GROUP SWITCH PORT (whole numbers, PORT -1 if "
                         "unknown), got '%.60s'", file, line + 1, x.rank, buf);
        while (*q == ' ' || *q == '\t' || *q == '\r') q++;
        if (*q) TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s:%d: rank %ld: unexpected '%.40s' after the port", file, line + 1, x.rank, q);
        if (x.rank >= TC_MAX_MACHINES)
            TC_FAIL_GOTO(rc, out, TC_ERR_LIMIT, "%s:%d: rank %ld: more than the limit of %d ranks", file, line + 1, x.rank, TC_MAX_MACHINES);
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            coord *nc = realloc(c, sizeof *c * cap);
            if (!nc) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "out of memory");
            c = nc;
        }
        c[n++] = x;
    }
    if (n == 0) TC_FAIL_GOTO(rc, out, TC_ERR_PARSE, "%s: no rank lines after the header", file);
    qsort(c, n, sizeof *c, by_rank);
    for (size_t i = 0; i < n; i++) {
        if (i && c[i].rank == c[i - 1].rank)
            TC_FAIL_GOTO(rc, out, TC_ERR_TOPOLOGY, "%s:%d: rank %ld again (line %d)", file, c[i].line, c[i].rank, c[i - 1].line);
        if (c[i].rank != (long)i)
            TC_FAIL_GOTO(rc, out, TC_ERR_TOPOLOGY, "%s: rank %zu has no line (ranks are 0 to %zu, each once)", file, i, n - 1);
    }
    TC_TRY(rc, out, tc_topology_create(&t));
    TC_TRY(rc, out, tc_topology_add_switch(t, "fabric", file));
    char name[64], parent[64], where[512];
    for (size_t i = 0; i < n;) {
        snprintf(where, sizeof where, "%s:%d", file, c[i].line);
        size_t j = i + 1;
        if (c[i].port >= 0)
            while (j < n && c[j].port == c[i].port && c[j].sw == c[i].sw && c[j].group == c[i].group) j++;
        snprintf(name, sizeof name, "g%ld", c[i].group);
        if (tc_topology_node_find(t, name) < 0) {
            TC_TRY(rc, out, tc_topology_add_switch(t, name, where));
            TC_TRY(rc, out, tc_topology_add_link(t, name, "fabric", 0, 0, where));
        }
        snprintf(parent, sizeof parent, "g%ld-s%ld", c[i].group, c[i].sw);
        if (tc_topology_node_find(t, parent) < 0) {
            TC_TRY(rc, out, tc_topology_add_switch(t, parent, where));
            TC_TRY(rc, out, tc_topology_add_link(t, parent, name, 0, 0, where));
        }
        if (c[i].port >= 0) snprintf(name, sizeof name, "g%ld-s%ld-p%ld", c[i].group, c[i].sw, c[i].port);
        else snprintf(name, sizeof name, "rank%ld", c[i].rank);
        int old = tc_topology_node_find(t, name);
        if (old >= 0)
            TC_FAIL_GOTO(rc, out, TC_ERR_TOPOLOGY, "%s: rank %ld is on port %s, whose ranks started at %s; a port's ranks "
                         "must be consecutive (topocoll numbers a machine's ranks together)", where, c[i].rank, name,
                         t->nodes[old].where ? t->nodes[old].where : "?");
        TC_TRY(rc, out, tc_topology_add_machine(t, name, (int)(j - i), where));
        TC_TRY(rc, out, tc_topology_add_link(t, name, parent, 0, 0, where));
        i = j;
    }
    TC_TRY(rc, out, tc_topology_finalize(t));
    *out = t;
    t = NULL;
out:
    tc_topology_destroy(t);
    free(c);
    return rc;
}

/* Any tree whose machines all sit three switches below the top: group =
 * the machine's grandparent's index among the top's children, switch = its
 * parent's index within the group, port = its index on the switch. */
tc_status tc_mpich_write(const tc_topology *t, FILE *f)
{
    if (!t->finalized) TC_FAIL(TC_ERR_ARG, "topology not finalized");
    for (int r = 0; r < t->num_machines; r++) {
        int m = t->machines[r];
        if (t->depth[m] != 3)
            TC_FAIL(TC_ERR_UNSUPPORTED, "machine '%s' is %d switch%s below the top; MPICH's coordinates say group, "
                    "switch and port: a tree of three levels", t->nodes[m].name, t->depth[m], t->depth[m] == 1 ? "" : "es");
    }
    fprintf(f, "# rank: group switch port (MPICH coordinates, written by topocoll %s)\n", TOPOCOLL_VERSION);
    int rank = 0;
    for (int r = 0; r < t->num_machines; r++) {
        int m = t->machines[r], sw = t->parent[m], g = t->parent[sw], top = t->parent[g];
        int port = 0, swi = 0, gi = 0;
        for (int q = 0; q < r; q++) port += t->parent[t->machines[q]] == sw;
        for (int l = 0; l < t->num_links; l++) {   /* indices in link order: the file's */
            if (t->links[l].parent == g && t->nodes[t->links[l].child].kind == TC_NODE_SWITCH && t->links[l].child < sw) swi++;
            if (t->links[l].parent == top && t->nodes[t->links[l].child].kind == TC_NODE_SWITCH && t->links[l].child < g) gi++;
        }
        for (int k = 0; k < t->nodes[m].slots; k++) fprintf(f, "%d: %d %d %d\n", rank++, gi, swi, port);
    }
    return ferror(f) ? tc_error_set(TC_ERR_IO, __FILE__, __LINE__, "could not write the coordinates") : TC_OK;
}
