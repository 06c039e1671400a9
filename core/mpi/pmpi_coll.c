/*
 * libtopocoll_pmpi, part two: MPI_Bcast, MPI_Reduce, MPI_Allreduce,
 * MPI_Barrier, MPI_Gather and MPI_Scatter along multilevel topology-aware
 * trees (Karonis et al.; tc_coll.c runs them, coll_tree.c builds them).
 *
 * Levels: TOPOCOLL_GROUPS (per process, its group names from the top level
 * down, "site/lan/machine"), else the topology file: the switches above the
 * process's machine from below the top switch down, then the machine (so
 * ranks on one machine form the bottom group).  On a communicator's first
 * collective the ranks gather their level names once (cached on it); on
 * every call each rank builds the same tree from them and the root.
 *
 * Per operation, TOPOCOLL_<OP> = multilevel | two-level | binomial | native |
 * auto (the default: multilevel when levels are known); two-level clusters at
 * TOPOCOLL_TWO_LEVEL_AT (a level number, 0 = top; default the last: machines).
 * Shapes per level: TOPOCOLL_TREE_SHAPES (flat, binomial or auto per level,
 * top first); auto: when the levels come from a topology that gives the links,
 * the cheaper of flat and binomial for the call's message size
 * (tc_tree_choose_shape), else the paper's (flat at the top, binomial below).
 * Non-commutative reductions go to the MPI: the tree does not keep rank order.
 */
#include "tc_coll.h"
#include "pmpi_shared.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_BCAST = PMPI_BCAST, OP_REDUCE = PMPI_REDUCE, OP_ALLREDUCE = PMPI_ALLREDUCE, OP_BARRIER = PMPI_BARRIER,
       OP_GATHER = PMPI_GATHER, OP_SCATTER = PMPI_SCATTER, NUM_OPS = PMPI_COLL_OPS };
#define op_name pmpi_coll_op_name
#define GROUPS_LEN 1024
#define MAX_TREES TC_NUM_TREE_ALGORITHMS
#define NATIVE_ALG PMPI_NATIVE_TREE /* index of "native" in the call counters */
_Static_assert(TCC_MAX_LEVELS == PMPI_MAX_LEVELS, "tc_coll.h and pmpi_shared.h agree on the levels");

static struct {
    int keyval;
    long long calls[NUM_OPS][MAX_TREES + 1];
    long long sent[NUM_OPS][MAX_TREES][TCC_MAX_LEVELS];
} c = {.keyval = MPI_KEYVAL_INVALID};

/* A topology or TOPOCOLL_GROUPS says where the ranks are. */
static int enabled(void) { return pmpi_cfg.groups || pmpi_cfg.topo; }

typedef struct coll_plan {
    int ok, n, levels;
    int *groups;               /* n * levels */
    MPI_Comm comm;             /* private duplicate */
    tc_tree **trees;           /* MAX_TREES * n, by algorithm and root */
    int *tree_shapes;          /* the shapes each cached tree was built with (a code) */
    /* per level, when the topology gives the links: the path between two
     * groups of the level, and the most groups under one group above */
    int modelled;
    double lat[TCC_MAX_LEVELS], bw[TCC_MAX_LEVELS];
    int kmax[TCC_MAX_LEVELS];
} coll_plan;

/* TOPOCOLL_VERBOSE: why an operation goes to the MPI, once a process. */
static void say_once(int op, MPI_Comm comm, const char *why)
{
    static int said[NUM_OPS];
    int me = 0;
    if (!pmpi_cfg.verbose || said[op]) return;
    said[op] = 1;
    PMPI_Comm_rank(comm, &me);
    if (me == 0) fprintf(stderr, "topocoll: %s: native: %s\n", op_name[op], why);
}


/* This process's level names, "a/b/machine"; "" when unknown. */
static void my_levels(char *out)
{
    out[0] = '\0';
    if (pmpi_cfg.groups) { snprintf(out, GROUPS_LEN, "%s", pmpi_cfg.groups); return; }
    const tc_topology *t = pmpi_cfg.topo;
    char name[PMPI_NAME_LEN];
    pmpi_my_machine(name);
    int rank = pmpi_machine_rank(name);
    if (!t) return;
    /* '?' (no name holds one) marks a machine missing from the topology */
    if (rank < 0 || tc_topology_levels(t, rank, out, GROUPS_LEN) < 0) snprintf(out, GROUPS_LEN, "?%s", name);
}

static int delete_plan(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    coll_plan *p = (coll_plan *)attr;
    if (p->trees)
        for (int i = 0; i < MAX_TREES * p->n; i++) tc_tree_destroy(p->trees[i]);
    if (p->comm != MPI_COMM_NULL) PMPI_Comm_free(&p->comm);
    free(p->trees);
    free(p->tree_shapes);
    free(p->groups);
    free(p);
    return MPI_SUCCESS;
}

/* Per level, from the topology: the path between two ranks whose groups
 * first differ there (their machines are the last level names), and the
 * most groups of the level under one group above. */
static void model_levels(coll_plan *p, const char *const *names)
{
    const tc_topology *t = pmpi_cfg.topo;
    int L = p->levels;
    p->modelled = t != NULL;
    for (int l = 0; l < L && p->modelled; l++) {
        int a = -1, b = -1;
        for (int r = 0; r < p->n && a < 0; r++)
            for (int q = r + 1; q < p->n && a < 0; q++)
                if (tc_groups_split_level(p->groups, L, r, q) == l) { a = r; b = q; }
        p->kmax[l] = 0;
        for (int r = 0; r < p->n; r++) {   /* groups at l under r's group above (r: a group's first rank) */
            int k = 0;
            for (int q = 0; q < p->n; q++)
                if (tc_groups_split_level(p->groups, L, r, q) >= l && p->groups[(size_t)q * L + l] == q) k++;
            if (k > p->kmax[l]) p->kmax[l] = k;
        }
        if (a < 0) { p->lat[l] = 0; p->bw[l] = 0; continue; }   /* one group: nothing to send */
        const char *ma = strrchr(names[a], '/'), *mb = strrchr(names[b], '/');
        int ra = pmpi_machine_rank(ma ? ma + 1 : names[a]), rb = pmpi_machine_rank(mb ? mb + 1 : names[b]);
        if (ra < 0 || rb < 0) { p->modelled = 0; break; }
        tc_topology_path_cost(t, ra, rb, TC_DEFAULT_BANDWIDTH, TC_DEFAULT_LATENCY, &p->lat[l], &p->bw[l]);
    }
}

/* The shapes for a call moving `bytes` (< 0: no size, the defaults): each
 * level's from TOPOCOLL_TREE_SHAPES, else from the model when the topology
 * gives the links, else the paper's.  Returns them as a code for caching. */
static int shapes_for(const coll_plan *p, double bytes, tc_tree_shape *shapes)
{
    int code = 0;
    for (int l = 0; l <= p->levels; l++) {
        shapes[l] = l < pmpi_cfg.nshapes ? pmpi_cfg.shapes[l] : TC_SHAPE_DEFAULT;
        if (shapes[l] == TC_SHAPE_DEFAULT && p->modelled && bytes >= 0 && l < p->levels)
            shapes[l] = tc_tree_choose_shape(p->kmax[l], p->lat[l], p->bw[l], bytes);
        code |= (int)shapes[l] << (2 * l);
    }
    return code;
}

static coll_plan *plan_of(MPI_Comm comm)
{
    coll_plan *p = (coll_plan *)pmpi_cached(comm, &c.keyval, delete_plan);
    if (p) return p;
    p = (coll_plan *)calloc(1, sizeof *p);
    if (!p) pmpi_fatal("out of memory%s%s", "", "");
    p->comm = MPI_COMM_NULL;
    PMPI_Comm_size(comm, &p->n);
    char mine[GROUPS_LEN];
    my_levels(mine);
    char *all = (char *)malloc((size_t)p->n * GROUPS_LEN);
    const char **names = (const char **)malloc(sizeof(char *) * (size_t)p->n);
    if (!all || !names) pmpi_fatal("out of memory gathering %s levels%s", "the ranks'", "");
    PMPI_Allgather(mine, GROUPS_LEN, MPI_CHAR, all, GROUPS_LEN, MPI_CHAR, comm);
    int unknown = -1;
    for (int r = 0; r < p->n; r++) {
        names[r] = all + (size_t)r * GROUPS_LEN;
        if (unknown < 0 && (!names[r][0] || names[r][0] == '?')) unknown = r;
    }
    int known = unknown < 0;
    if (known && tc_groups_from_names(names, p->n, '/', &p->levels, &p->groups) == TC_OK) {
        p->trees = (tc_tree **)calloc((size_t)MAX_TREES * p->n, sizeof(tc_tree *));
        p->tree_shapes = (int *)calloc((size_t)MAX_TREES * p->n, sizeof(int));
        p->ok = p->trees && p->tree_shapes && p->levels < TCC_MAX_LEVELS &&
                PMPI_Comm_dup(comm, &p->comm) == MPI_SUCCESS;
        if (p->ok && !pmpi_cfg.groups) model_levels(p, names);
    }
    int me;
    PMPI_Comm_rank(comm, &me);
    if (p->ok && pmpi_cfg.two_level_at >= p->levels) {
        char a[64], b[32];
        snprintf(a, sizeof a, "TOPOCOLL_TWO_LEVEL_AT=%d", pmpi_cfg.two_level_at);
        snprintf(b, sizeof b, "%d", p->levels - 1);
        pmpi_fatal("%s: the communicator's levels are 0 (the top) to %s", a, b);
    }
    if (pmpi_cfg.verbose && me == 0) {
        fprintf(stderr, "topocoll: collectives on a communicator of %d ranks: ", p->n);
        if (p->ok)
            fprintf(stderr, "topology-aware trees (%d levels; rank 0: %s)\n", p->levels, names[0]);
        else if (unknown >= 0 && names[unknown][0] == '?')
            fprintf(stderr, "native: rank %d's machine '%s' is not in the topology\n", unknown, names[unknown] + 1);
        else if (unknown >= 0)
            fprintf(stderr, "native: rank %d has no levels (TOPOCOLL_GROUPS unset and no topology)\n", unknown);
        else
            fprintf(stderr, "native: more than %d levels\n", TCC_MAX_LEVELS - 1);
    }
    free(all);
    free(names);
    PMPI_Comm_set_attr(comm, c.keyval, p);
    return p;
}

/* The context of this call (tree, rank, private communicator, counters),
 * or 0 for the MPI; *alg is what runs. */
static int tree_for(int op, MPI_Comm comm, int root, double bytes, int *alg, tcc_ctx *x)
{
    int inter = 0;
    *alg = NATIVE_ALG;
    pmpi_config_load();
    if (!enabled() || comm == MPI_COMM_NULL || pmpi_cfg.coll_alg[op] == NATIVE_ALG) return 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) {
        say_once(op, comm, "an intercommunicator");
        return 0;
    }
    coll_plan *p = plan_of(comm);
    if (!p->ok) return 0;
    int a = pmpi_cfg.coll_alg[op] >= 0 ? pmpi_cfg.coll_alg[op] : pmpi_cfg.auto_tree;
    tc_tree **slot = &p->trees[(size_t)a * p->n + root];
    tc_tree_shape shapes[TCC_MAX_LEVELS + 1];
    int code = shapes_for(p, bytes, shapes);
    if (*slot && p->tree_shapes[(size_t)a * p->n + root] != code) {
        tc_tree_destroy(*slot);
        *slot = NULL;
    }
    if (!*slot) {
        int at = pmpi_cfg.two_level_at < 0 || pmpi_cfg.two_level_at >= p->levels ? p->levels - 1 : pmpi_cfg.two_level_at;
        if (tc_tree_build(tc_tree_algorithm_name(a), p->n, p->levels, p->groups, root, shapes, at, slot) != TC_OK)
            pmpi_fatal("%s tree: %s", tc_tree_algorithm_name(a), tc_error_message());
        p->tree_shapes[(size_t)a * p->n + root] = code;
    }
    *alg = a;
    *x = (tcc_ctx){*slot, 0, p->comm, p->groups, p->levels, c.sent[op][a]};
    PMPI_Comm_rank(comm, &x->me);
    return 1;
}

static void counted(int op, int alg, MPI_Comm comm)
{
    int r = 0;
    if (comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &r);
    if (r == 0) c.calls[op][alg]++;
}

static double bytes_of(int count, MPI_Datatype type)
{
    int size = 0;
    PMPI_Type_size(type, &size);
    return (double)size * count;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    int alg;
    tcc_ctx x;
    int ours = tree_for(OP_BCAST, comm, root, bytes_of(count, type), &alg, &x);
    counted(OP_BCAST, alg, comm);
    return ours ? tcc_bcast(&x, buf, count, type) : PMPI_Bcast(buf, count, type, root, comm);
}

/* Whether the trees may reduce with op: they combine in tree order, not
 * rank order, so a non-commutative operation goes to the MPI. */
static int commutative(int coll, MPI_Op op, MPI_Comm comm)
{
    int yes = 0;
    PMPI_Op_commutative(op, &yes);
    if (!yes) say_once(coll, comm, "a non-commutative operation (the trees do not keep rank order)");
    return yes;
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    int alg = NATIVE_ALG;
    tcc_ctx x;
    int ours = commutative(OP_REDUCE, op, comm) && tree_for(OP_REDUCE, comm, root, bytes_of(count, type), &alg, &x);
    counted(OP_REDUCE, alg, comm);
    return ours ? tcc_reduce(&x, sendbuf, recvbuf, count, type, op)
                : PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    int alg = NATIVE_ALG;
    tcc_ctx x;
    int ours = commutative(OP_ALLREDUCE, op, comm) && tree_for(OP_ALLREDUCE, comm, 0, bytes_of(count, type), &alg, &x);
    counted(OP_ALLREDUCE, alg, comm);
    if (!ours) return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    int rc = tcc_reduce(&x, sendbuf, recvbuf, count, type, op);
    return rc == MPI_SUCCESS ? tcc_bcast(&x, recvbuf, count, type) : rc;
}

int MPI_Barrier(MPI_Comm comm)
{
    int alg;
    tcc_ctx x;
    int ours = tree_for(OP_BARRIER, comm, 0, 0, &alg, &x);
    counted(OP_BARRIER, alg, comm);
    return ours ? tcc_barrier(&x) : PMPI_Barrier(comm);
}

/* Gather and scatter: the same arguments, the same decision. */
static int rooted_blocks(int op, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount,
                         MPI_Datatype rtype, int root, MPI_Comm comm)
{
    int alg;
    tcc_ctx x;
    int ours = tree_for(op, comm, root, -1, &alg, &x);
    counted(op, alg, comm);
    if (op == OP_GATHER)
        return ours ? tcc_gather(&x, sendbuf, scount, stype, recvbuf, rcount, rtype)
                    : PMPI_Gather(sendbuf, scount, stype, recvbuf, rcount, rtype, root, comm);
    return ours ? tcc_scatter(&x, sendbuf, scount, stype, recvbuf, rcount, rtype)
                : PMPI_Scatter(sendbuf, scount, stype, recvbuf, rcount, rtype, root, comm);
}

int MPI_Gather(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount, MPI_Datatype rtype,
               int root, MPI_Comm comm)
{
    return rooted_blocks(OP_GATHER, sendbuf, scount, stype, recvbuf, rcount, rtype, root, comm);
}

int MPI_Scatter(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount, MPI_Datatype rtype,
                int root, MPI_Comm comm)
{
    return rooted_blocks(OP_SCATTER, sendbuf, scount, stype, recvbuf, rcount, rtype, root, comm);
}

void pmpi_coll_finalize(void)
{
    pmpi_delete_cached(c.keyval);
    if (c.keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&c.keyval);
    if (!pmpi_cfg.stats || !enabled()) return;
    /* calls: counted by each communicator's rank 0, summed here like the messages */
    long long sent[NUM_OPS][MAX_TREES][TCC_MAX_LEVELS], calls[NUM_OPS][MAX_TREES + 1];
    PMPI_Reduce(c.sent, sent, NUM_OPS * MAX_TREES * TCC_MAX_LEVELS, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(c.calls, calls, NUM_OPS * (MAX_TREES + 1), MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (pmpi_world_rank() != 0) return;
    for (int op = 0; op < NUM_OPS; op++)
        for (int a = 0; a <= MAX_TREES; a++) {
            if (!calls[op][a]) continue;
            const char *name = a == NATIVE_ALG ? "native" : tc_tree_algorithm_name(a);
            fprintf(stderr, "topocoll: %s %s calls=%lld\n", op_name[op], name, calls[op][a]);
            if (a == NATIVE_ALG) continue;
            int top = TCC_MAX_LEVELS - 1;
            while (top > 0 && !sent[op][a][top]) top--;
            fprintf(stderr, "topocoll: %s %s messages", op_name[op], name);
            for (int l = 0; l <= top; l++) fprintf(stderr, " level%d=%lld", l, sent[op][a][l]);
            fputc('\n', stderr);
        }
}
