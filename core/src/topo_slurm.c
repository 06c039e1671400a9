/* Slurm topology.conf (tree plugin): SwitchName=, Nodes=, Switches=,
 * LinkSpeed=; and the text of `scontrol show topology`, the same lines with
 * Level= (the switch's height, checked against the tree) and LinkSpeed=1
 * where none was configured (Slurm's default: read as no rate).  Keys are case-insensitive, '#' starts a comment, a trailing
 * backslash continues a line.  LinkSpeed applies to the links from the switch
 * to everything its line lists; Slurm leaves its unit open, topocoll reads a
 * bare number as Mbit/s and also accepts units ("10Gbit"). */
#include "tc_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct slurm_switch {
    char *name, *nodes, *switches;
    double speed;
    int line, level;      /* level: scontrol's Level=, -1 if not given */
} slurm_switch;

static void free_switches(slurm_switch *sw, int n)
{
    for (int i = 0; i < n; i++) { free(sw[i].name); free(sw[i].nodes); free(sw[i].switches); }
    free(sw);
}

/* Hang the names of a hostlist below switch sw (machines: new machines, in
 * list order; else switches declared before); where: "file:line". */
tc_status tc_slurm_attach(tc_topology *t, const char *list, const char *sw, double speed, const char *where,
                          bool machines)
{
    char *names;
    size_t n;
    tc_status rc = tc_hostlist_expand(list, &names, &n);
    if (rc) TC_FAIL(rc, "%s: %s", where, tc_error_message());
    char *p = names;
    for (size_t i = 0; i < n; i++, p += strlen(p) + 1) {
        int node = tc_topology_node_find(t, p);
        if (machines && node < 0) {
            if ((rc = tc_topology_add_machine(t, p, 1, where))) break;
        } else if (node < 0) {
            rc = tc_error_set(TC_ERR_TOPOLOGY, __FILE__, __LINE__, "%s: switch '%s' lists unknown switch '%s'",
                              where, sw, p);
            break;
        } else if (tc_topology_node_kind(t, node) == TC_NODE_MACHINE) {
            rc = tc_error_set(TC_ERR_TOPOLOGY, __FILE__, __LINE__,
                              machines ? "%s: machine '%s' (%s) is not a leaf: switch '%s' lists it again; a machine hangs on one switch"
                                       : "%s: machine '%s' (%s) is not a leaf: switch '%s' lists it as a switch",
                              where, p, t->nodes[node].where ? t->nodes[node].where : "?", sw);
            break;
        } else if (machines) {
            rc = tc_error_set(TC_ERR_TOPOLOGY, __FILE__, __LINE__, "%s: duplicate name '%s': it is a switch (%s)",
                              where, p, t->nodes[node].where ? t->nodes[node].where : "?");
            break;
        }
        if ((rc = tc_topology_add_link(t, p, sw, speed, 0, where))) break;
    }
    free(names);
    return rc;
}

static tc_status add_links(tc_topology *t, const char *list, const slurm_switch *sw, const char *file, bool machines)
{
    char where[512];
    snprintf(where, sizeof where, "%s:%d", file, sw->line);
    return tc_slurm_attach(t, list, sw->name, sw->speed, where, machines);
}

tc_status tc_slurm_parse(const char *text, size_t len, const char *file, tc_topology **out)
{
    tc_status rc = TC_OK;
    slurm_switch *sw = NULL;
    int nsw = 0, capsw = 0;
    tc_topology *t = NULL;
    char *buf = tc_xmalloc(len + 1);
    if (!buf) TC_FAIL(TC_ERR_NOMEM, "out of memory");
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (!file) file = "<string>";

    /* Logical lines: a physical line ending in a backslash continues on the
     * next; comments end at the end of their physical line. */
    int lineno = 0;
    char *next_line = buf;
    char *line = NULL;
    size_t cap = 0;
    while (next_line) {
        int start_line = lineno + 1;
        size_t used = 0;
        bool more = true;
        while (more && next_line) {
            char *phys = next_line, *nl = strchr(phys, '\n');
            if (nl) *nl = '\0';
            next_line = nl ? nl + 1 : NULL;
            lineno++;
            char *hash = strchr(phys, '#');
            if (hash) *hash = '\0';
            size_t l = strlen(phys);
            while (l && strchr(" \t\r", phys[l - 1])) phys[--l] = '\0';
            more = l && phys[l - 1] == '\\';
            if (more) phys[--l] = ' ';
            if (used + l + 2 > cap) {
                cap = (used + l + 2) * 2;
                char *n = realloc(line, cap);
                if (!n) { free(line); TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "out of memory"); }
                line = n;
            }
            memcpy(line + used, phys, l);
            used += l;
            line[used++] = ' ';
            line[used] = '\0';
        }
        if (!line) continue;
        slurm_switch cur = {0};
        cur.line = start_line;
        cur.level = -1;
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
            char *eq = strchr(tok, '=');
            if (!eq) TC_FAIL_GOTO(rc, fail_cur, TC_ERR_PARSE, "%s:%d: expected Key=Value, got '%s'", file, start_line, tok);
            *eq = '\0';
            const char *val = eq + 1;
            if (!*val) TC_FAIL_GOTO(rc, fail_cur, TC_ERR_PARSE, "%s:%d: %s= has no value", file, start_line, tok);
            char **slot = NULL;
            if (!strcasecmp(tok, "SwitchName")) slot = &cur.name;
            else if (!strcasecmp(tok, "Nodes")) slot = &cur.nodes;
            else if (!strcasecmp(tok, "Switches")) slot = &cur.switches;
            else if (!strcasecmp(tok, "LinkSpeed")) {
                if (tc_parse_rate(val, TC_BARE_RATE_UNIT, &cur.speed))
                    TC_FAIL_GOTO(rc, fail_cur, TC_ERR_PARSE, "%s:%d: LinkSpeed: %s", file, start_line, tc_error_message());
                continue;
            } else if (!strcasecmp(tok, "Level")) {
                char *end;
                long v = strtol(val, &end, 10);
                if (*end || v < 0 || v > 1000)
                    TC_FAIL_GOTO(rc, fail_cur, TC_ERR_PARSE, "%s:%d: Level=%s: expected a switch level 0-1000", file,
                                 start_line, val);
                cur.level = (int)v;
                continue;
            } else if (!strcasecmp(tok, "BlockName") || !strcasecmp(tok, "BlockSizes"))
                TC_FAIL_GOTO(rc, fail_cur, TC_ERR_UNSUPPORTED, "%s:%d: %s belongs to Slurm's block topology; topocoll reads the tree topology (SwitchName=)",
                             file, start_line, tok);
            else
                TC_FAIL_GOTO(rc, fail_cur, TC_ERR_PARSE, "%s:%d: unknown key '%s' (expected SwitchName, Nodes, Switches or LinkSpeed)",
                             file, start_line, tok);
            if (*slot) TC_FAIL_GOTO(rc, fail_cur, TC_ERR_PARSE, "%s:%d: %s= given twice", file, start_line, tok);
            *slot = tc_strdup(val);
            if (!*slot) TC_FAIL_GOTO(rc, fail_cur, TC_ERR_NOMEM, "out of memory");
        }
        if (cur.level >= 0 && cur.speed == 1e6) cur.speed = 0;   /* scontrol's LinkSpeed=1: none configured */
        if (cur.name || cur.nodes || cur.switches || cur.speed > 0) {
            if (!cur.name)
                TC_FAIL_GOTO(rc, fail_cur, TC_ERR_PARSE, "%s:%d: line has no SwitchName=", file, start_line);
            if (nsw == capsw) {
                capsw = capsw ? capsw * 2 : 16;
                slurm_switch *n = realloc(sw, sizeof *n * (size_t)capsw);
                if (!n) TC_FAIL_GOTO(rc, fail_cur, TC_ERR_NOMEM, "out of memory");
                sw = n;
            }
            sw[nsw++] = cur;
        }
        continue;
    fail_cur:
        free(cur.name); free(cur.nodes); free(cur.switches);
        free(line);
        goto out;
    }
    free(line);
    if (nsw == 0) TC_FAIL_GOTO(rc, out, TC_ERR_TOPOLOGY, "%s: no SwitchName= line: the file describes no switch", file);

    TC_TRY(rc, out, tc_topology_create(&t));
    char where[512];
    for (int i = 0; i < nsw; i++) {
        snprintf(where, sizeof where, "%s:%d", file, sw[i].line);
        TC_TRY(rc, out, tc_topology_add_switch(t, sw[i].name, where));
    }
    /* machines first, in file order, so ranks follow the file */
    for (int i = 0; i < nsw; i++)
        if (sw[i].nodes) TC_TRY(rc, out, add_links(t, sw[i].nodes, &sw[i], file, true));
    for (int i = 0; i < nsw; i++)
        if (sw[i].switches) TC_TRY(rc, out, add_links(t, sw[i].switches, &sw[i], file, false));
    TC_TRY(rc, out, tc_topology_finalize(t));
    for (int i = 0; i < nsw; i++) {   /* scontrol's levels: leaves 0, each switch one above its highest child */
        int node = tc_topology_node_find(t, sw[i].name), h = 0;
        if (sw[i].level < 0 || node < 0) continue;
        for (int l = 0; l < t->num_links; l++)
            if (t->links[l].parent == node && t->nodes[t->links[l].child].kind == TC_NODE_SWITCH) {
                int below = -1;
                for (int j = 0; j < nsw; j++)
                    if (!strcmp(sw[j].name, t->nodes[t->links[l].child].name)) below = sw[j].level;
                if (below >= h) h = below + 1;
            }
        if (sw[i].level != h)
            TC_FAIL_GOTO(rc, out, TC_ERR_TOPOLOGY, "%s:%d: switch '%s' has Level=%d, but its children put it at level %d",
                         file, sw[i].line, sw[i].name, sw[i].level, h);
    }
    *out = t;
    t = NULL;
out:
    tc_topology_destroy(t);
    free_switches(sw, nsw);
    free(buf);
    return rc;
}

/* What neither Slurm file can say: machines without a switch, slots. */
tc_status tc_slurm_writable(const tc_topology *t, const char *file)
{
    if (!t->finalized) TC_FAIL(TC_ERR_ARG, "topology not finalized");
    if (tc_topology_num_switches(t) == 0)
        TC_FAIL(TC_ERR_UNSUPPORTED, "Slurm's %s cannot describe a machine without a switch", file);
    for (int r = 0; r < t->num_machines; r++)
        if (t->nodes[t->machines[r]].slots != 1)
            TC_FAIL(TC_ERR_UNSUPPORTED, "machine '%s' has %d slots; %s cannot say so (use topocoll YAML)",
                    t->nodes[t->machines[r]].name, t->nodes[t->machines[r]].slots, file);
    return TC_OK;
}

/* Children of a switch, machines in rank order first, then switches. */
tc_status tc_slurm_write(const tc_topology *t, FILE *f)
{
    tc_status rc = tc_slurm_writable(t, "topology.conf");
    if (rc) return rc;
    for (int l = 0; l < t->num_links; l++)
        if (t->links[l].latency > 0)
            TC_FAIL(TC_ERR_UNSUPPORTED, "link %s-%s has a latency; topology.conf cannot say so (use YAML)",
                    t->nodes[t->links[l].child].name, t->nodes[t->links[l].parent].name);
    tc_walk w;
    if ((rc = tc_topology_walk(t, &w))) return rc;
    fprintf(f, "# topology.conf written by topocoll %s\n", TOPOCOLL_VERSION);
    for (int i = 0; i < w.ns; i++) {
        int s = w.order[i];
        double speed = -1;
        bool mixed = false;
        for (int k = w.begin[s]; k < w.begin[s + 1]; k++) {
            double bw = t->links[t->parent_link[w.child[k]]].bandwidth;
            if (speed >= 0 && speed != bw) mixed = true;
            speed = bw;
        }
        if (mixed)
            TC_FAIL_GOTO(rc, out, TC_ERR_UNSUPPORTED, "links below switch '%s' differ in bandwidth; topology.conf has one LinkSpeed per switch (use YAML)",
                         t->nodes[s].name);
        char *machines, *switches;
        TC_TRY(rc, out, tc_topology_children(t, &w, s, &machines, &switches));
        fprintf(f, "SwitchName=%s", t->nodes[s].name);
        if (machines) fprintf(f, " Nodes=%s", machines);
        if (switches) fprintf(f, " Switches=%s", switches);
        free(machines);
        free(switches);
        if (speed > 0) {
            if (speed / 1e6 == (double)(long long)(speed / 1e6)) fprintf(f, " LinkSpeed=%lld", (long long)(speed / 1e6));
            else {
                char buf[32];
                tc_format_rate(speed, buf, sizeof buf);
                fprintf(f, " LinkSpeed=%s", buf);
            }
        }
        fputc('\n', f);
    }
    if (ferror(f)) rc = tc_error_set(TC_ERR_IO, __FILE__, __LINE__, "could not write topology.conf");
out:
    tc_walk_free(&w);
    return rc;
}
