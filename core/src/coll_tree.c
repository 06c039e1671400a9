/*
 * Multilevel topology-aware collective trees (Karonis, de Supinski, Foster,
 * Gropp, Lusk, Lacour: "A multilevel approach to topology-aware collective
 * operations in computational grids", MPICH-G2), and the two trees they are
 * compared with: MPICH's binomial tree and MagPIe's two-level tree.
 *
 * One recursive construction serves all three; the algorithms differ only in
 * which levels of the group vectors they look at (data, below):
 *   build(S, root, l): if l is past the last level used, join S by the
 *   bottom shape; else split S by its groups at level l (the root's group
 *   first, then by first rank), join the groups' leaders (the root, else the
 *   group's first rank) by shape[l], and build each group at level l+1.
 * So each group at each level receives exactly one message from outside it.
 * Cost: O(n * levels) time and memory; no communication.
 */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

/* What each algorithm reads of the group vectors. */
typedef enum { USE_NONE, USE_ONE_LEVEL, USE_ALL_LEVELS } level_use;
static const struct { const char *name; level_use use; } tree_algorithms[] = {
    {"binomial", USE_NONE},          /* MPICH: topology-unaware                  */
    {"two-level", USE_ONE_LEVEL},    /* MagPIe: clusters at cluster_level        */
    {"multilevel", USE_ALL_LEVELS},  /* Karonis et al.                            */
};
#define NUM_TREE_ALGORITHMS ((int)(sizeof tree_algorithms / sizeof tree_algorithms[0]))
_Static_assert(NUM_TREE_ALGORITHMS == TC_NUM_TREE_ALGORITHMS, "topocoll.h's TC_NUM_TREE_ALGORITHMS");

int tc_tree_algorithm_count(void) { return NUM_TREE_ALGORITHMS; }
const char *tc_tree_algorithm_name(int i) { return i >= 0 && i < NUM_TREE_ALGORITHMS ? tree_algorithms[i].name : NULL; }

typedef struct builder {
    tc_tree *t;
    int L;                  /* levels looked at */
    const int *col;         /* groups of the levels looked at: col[r * L + l] */
    const tc_tree_shape *shape;
    int *nkids;             /* children added so far, per rank */
} builder;

static void add_edge(builder *b, int from, int to, int level)
{
    b->t->parent[to] = from;
    b->t->edge_level[to] = level;
    b->t->child[b->t->child_begin[from] + b->nkids[from]++] = to;
}

/* Join members (m[0] the root) by a flat or binomial tree; largest subtrees
 * first (MPICH's order), so the last message sent is to a leaf. */
static void join(builder *b, const int *m, int k, tc_tree_shape shape, int level, int pass)
{
    if (pass == 0) {
        for (int v = 1; v < k; v++) b->nkids[m[shape == TC_SHAPE_FLAT ? 0 : (v & (v - 1))]]++;
        return;
    }
    if (shape == TC_SHAPE_FLAT) {
        for (int v = 1; v < k; v++) add_edge(b, m[0], m[v], level);
        return;
    }
    /* binomial: v's children are v + j for the powers of two j below v's
     * lowest set bit (below k for v = 0), largest first */
    for (int v = 0; v < k; v++) {
        int j = 1;
        if (v) j = (v & -v) >> 1;
        else while (j * 2 < k) j *= 2;
        for (; j >= 1; j >>= 1)
            if (v + j < k) add_edge(b, m[v], m[v + j], level);
    }
}

static tc_tree_shape shape_at(const builder *b, int l)
{
    tc_tree_shape s = b->shape ? b->shape[l] : TC_SHAPE_DEFAULT;
    if (s != TC_SHAPE_DEFAULT) return s;
    return l == 0 && b->L > 0 ? TC_SHAPE_FLAT : TC_SHAPE_BINOMIAL;
}

/* members: ranks of one group at level l (rank order), root among them.
 * pass 0 counts children, pass 1 places them (same walk both times). */
static int build(builder *b, int *members, int k, int root, int l, int pass)
{
    if (l == b->L) {
        int *m = malloc(sizeof(int) * (size_t)k);
        if (!m) return -1;
        m[0] = root;
        for (int i = 0, j = 1; i < k; i++)
            if (members[i] != root) m[j++] = members[i];
        join(b, m, k, shape_at(b, l), l, pass);
        free(m);
        return 0;
    }
    /* groups at level l in order: the root's, then by first member */
    int *gid = malloc(sizeof(int) * (size_t)k), *leaders = malloc(sizeof(int) * (size_t)k);
    int *sorted = malloc(sizeof(int) * (size_t)k), ng = 0, rc = 0;
    if (!gid || !leaders || !sorted) { free(gid); free(leaders); free(sorted); return -1; }
    int root_g = b->col[(size_t)root * b->L + l];
    leaders[ng++] = root;
    for (int i = 0; i < k; i++) {
        int g = b->col[(size_t)members[i] * b->L + l], found = -1;
        if (g == root_g) { gid[i] = 0; continue; }
        for (int x = 1; x < ng && found < 0; x++)
            if (b->col[(size_t)leaders[x] * b->L + l] == g) found = x;
        if (found < 0) { found = ng; leaders[ng++] = members[i]; }
        gid[i] = found;
    }
    join(b, leaders, ng, shape_at(b, l), l, pass);
    for (int x = 0; x < ng && rc == 0; x++) {
        int c = 0;
        for (int i = 0; i < k; i++)
            if (gid[i] == x) sorted[c++] = members[i];
        rc = build(b, sorted, c, leaders[x], l + 1, pass);
    }
    free(gid); free(leaders); free(sorted);
    return rc;
}

void tc_tree_destroy(tc_tree *t)
{
    if (!t) return;
    free(t->parent); free(t->child_begin); free(t->child); free(t->edge_level);
    free(t->order); free(t->pos); free(t->size);
    free(t);
}

tc_status tc_tree_build(const char *algorithm, int n, int levels, const int *groups, int root,
                        const tc_tree_shape *shapes, int cluster_level, tc_tree **out)
{
    tc_status rc = TC_OK;
    int a = -1;
    for (int i = 0; algorithm && i < NUM_TREE_ALGORITHMS; i++)
        if (!strcmp(algorithm, tree_algorithms[i].name)) a = i;
    if (a < 0) {
        char list[256];
        tc_join_names(list, sizeof list, NUM_TREE_ALGORITHMS, tc_tree_algorithm_name);
        TC_FAIL(TC_ERR_ARG, "unknown collective algorithm '%s'; valid: %s", algorithm ? algorithm : "", list);
    }
    if (n < 1 || root < 0 || root >= n) TC_FAIL(TC_ERR_ARG, "tree: root %d for %d ranks", root, n);
    if (levels < 0 || (levels > 0 && !groups)) TC_FAIL(TC_ERR_ARG, "tree: %d levels without group vectors", levels);
    if (tree_algorithms[a].use == USE_ONE_LEVEL && (cluster_level < 0 || cluster_level >= levels))
        TC_FAIL(TC_ERR_ARG, "two-level: cluster level %d, but the group vectors have %d levels (0..%d)", cluster_level,
                levels, levels - 1);
    tc_tree *t = tc_xcalloc(1, sizeof *t);
    builder b = {t, 0, NULL, shapes, NULL};
    int *col = NULL, *members = NULL;
    if (!t) TC_FAIL(TC_ERR_NOMEM, "tree: out of memory");
    t->n = n;
    t->parent = tc_xmalloc(sizeof(int) * (size_t)n);
    t->child_begin = tc_xcalloc((size_t)n + 1, sizeof(int));
    t->child = tc_xmalloc(sizeof(int) * (size_t)n);
    t->edge_level = tc_xmalloc(sizeof(int) * (size_t)n);
    t->order = tc_xmalloc(sizeof(int) * (size_t)n);
    t->pos = tc_xmalloc(sizeof(int) * (size_t)n);
    t->size = tc_xmalloc(sizeof(int) * (size_t)n);
    b.nkids = tc_xcalloc((size_t)n, sizeof(int));
    members = tc_xmalloc(sizeof(int) * (size_t)n);
    if (!t->parent || !t->child_begin || !t->child || !t->edge_level || !t->order || !t->pos || !t->size || !b.nkids ||
        !members)
        TC_FAIL_GOTO(rc, fail, TC_ERR_NOMEM, "tree: out of memory for %d ranks", n);
    /* the columns looked at */
    if (tree_algorithms[a].use == USE_ALL_LEVELS) {
        b.L = levels;
        b.col = groups;
    } else if (tree_algorithms[a].use == USE_ONE_LEVEL) {
        /* a cluster is a group at cluster_level within its groups above: key by
         * the first rank with the same prefix */
        col = tc_xmalloc(sizeof(int) * (size_t)n);
        if (!col) TC_FAIL_GOTO(rc, fail, TC_ERR_NOMEM, "tree: out of memory");
        for (int r = 0; r < n; r++) {
            col[r] = r;
            for (int q = 0; q < r; q++) {
                int same = 1;
                for (int l = 0; l <= cluster_level && same; l++)
                    same = groups[(size_t)q * levels + l] == groups[(size_t)r * levels + l];
                if (same) { col[r] = col[q]; break; }
            }
        }
        b.L = 1;
        b.col = col;
    }
    t->levels = b.L;
    for (int r = 0; r < n; r++) { members[r] = r; t->parent[r] = -1; t->edge_level[r] = -1; }
    for (int pass = 0; pass < 2; pass++) {
        if (build(&b, members, n, root, 0, pass) != 0) TC_FAIL_GOTO(rc, fail, TC_ERR_NOMEM, "tree: out of memory");
        if (pass == 0) {
            for (int r = 0; r < n; r++) t->child_begin[r + 1] = t->child_begin[r] + b.nkids[r];
            memset(b.nkids, 0, sizeof(int) * (size_t)n);
        }
    }
    /* depth-first pre-order, children in send order: subtrees contiguous */
    int top = 0, at = 0;
    members[top++] = root;
    while (top) {
        int r = members[--top];
        t->pos[r] = at;
        t->order[at++] = r;
        for (int c = t->child_begin[r + 1] - 1; c >= t->child_begin[r]; c--) members[top++] = t->child[c];
    }
    for (int i = n - 1; i >= 0; i--) {
        int r = t->order[i];
        t->size[r] = 1;
        for (int c = t->child_begin[r]; c < t->child_begin[r + 1]; c++) t->size[r] += t->size[t->child[c]];
    }
    free(col);
    free(members);
    free(b.nkids);
    *out = t;
    return TC_OK;
fail:
    free(col);
    free(members);
    free(b.nkids);
    tc_tree_destroy(t);
    return rc;
}

int tc_groups_split_level(const int *groups, int levels, int a, int b)
{
    int l = 0;
    while (l < levels && groups[(size_t)a * levels + l] == groups[(size_t)b * levels + l]) l++;
    return l;
}

tc_status tc_groups_from_names(const char *const *names, int n, char sep, int *levels, int **groups)
{
    int L = 1;
    for (int r = 0; r < n; r++) {
        if (!names[r] || !*names[r]) TC_FAIL(TC_ERR_ARG, "groups: rank %d has no group names", r);
        int k = 1;
        for (const char *p = names[r]; *p; p++) k += *p == sep;
        if (k > L) L = k;
    }
    /* component l of rank r: its l-th name, or its last name repeated (padded,
     * so it matches no real component) */
    typedef struct { const char *s; size_t len; bool pad; } comp;
    comp *c = tc_xmalloc(sizeof(comp) * (size_t)n * (size_t)L + 1);
    int *g = tc_xmalloc(sizeof(int) * (size_t)n * (size_t)L + 1);
    if (!c || !g) { free(c); free(g); TC_FAIL(TC_ERR_NOMEM, "groups: out of memory"); }
    for (int r = 0; r < n; r++) {
        const char *p = names[r];
        for (int l = 0; l < L; l++) {
            size_t len = strcspn(p, (char[]){sep, 0});
            c[(size_t)r * L + l] = (comp){p, len, false};
            if (p[len] == sep) { p += len + 1; continue; }
            for (int x = l + 1; x < L; x++) c[(size_t)r * L + x] = (comp){p, len, true};
            break;
        }
    }
    /* id of a group = the first rank with the same components up to its level */
    for (int l = 0; l < L; l++)
        for (int r = 0; r < n; r++) {
            const comp *x = &c[(size_t)r * L + l];
            g[(size_t)r * L + l] = r;
            for (int q = 0; q < r; q++) {
                const comp *y = &c[(size_t)q * L + l];
                if ((l == 0 || g[(size_t)q * L + l - 1] == g[(size_t)r * L + l - 1]) && x->len == y->len &&
                    x->pad == y->pad && !strncmp(x->s, y->s, x->len)) {
                    g[(size_t)r * L + l] = g[(size_t)q * L + l];
                    break;
                }
            }
        }
    free(c);
    *levels = L;
    *groups = g;
    return TC_OK;
}

tc_tree_shape tc_tree_choose_shape(int k, double latency, double bandwidth, double bytes)
{
    if (k <= 2 || bandwidth <= 0) return TC_SHAPE_DEFAULT;
    double send = bytes * 8 / bandwidth, rounds = 0;
    for (int reach = 1; reach < k; reach *= 2) rounds++;
    double flat = latency + (k - 1) * send, binomial = rounds * (latency + send);
    return flat <= binomial ? TC_SHAPE_FLAT : TC_SHAPE_BINOMIAL;
}
