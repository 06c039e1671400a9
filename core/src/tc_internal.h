/* Private to libtopocoll: structures behind the opaque handles, and the one
 * error convention (TC_FAIL records status, message, file and line). */
#ifndef TC_INTERNAL_H
#define TC_INTERNAL_H

#include "topocoll/topocoll.h"

#include <stdarg.h>
#include <stdbool.h>

#if defined(__GNUC__)
#define TC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TC_PRINTF(a, b)
#endif

tc_status tc_error_set(tc_status s, const char *file, int line, const char *fmt, ...)
    TC_PRINTF(4, 5);

/* Record an error and return its status from the current function. */
#define TC_FAIL(status, ...) return tc_error_set((status), __FILE__, __LINE__, __VA_ARGS__)
/* Record an error and jump to the function's single cleanup label. */
#define TC_FAIL_GOTO(rc, label, status, ...)                                    \
    do {                                                                        \
        (rc) = tc_error_set((status), __FILE__, __LINE__, __VA_ARGS__);         \
        goto label;                                                             \
    } while (0)
/* Propagate a failure already recorded by a callee. */
#define TC_TRY(rc, label, expr)                                                 \
    do {                                                                        \
        (rc) = (expr);                                                          \
        if ((rc) != TC_OK) goto label;                                          \
    } while (0)

void *tc_xmalloc(size_t n);            /* NULL only when n > 0 and memory ran out */
void *tc_xcalloc(size_t n, size_t size);
char *tc_strdup(const char *s);

/* ---- topology internals ---- */
typedef struct tc_node {
    char *name;
    tc_node_kind kind;
    int slots;             /* machines only */
    bool host;             /* a switch standing for a machine expanded into its
                              ranks (tc_topology_expand) */
    char *where;           /* where it was declared, for messages (may be NULL) */
} tc_node;

typedef struct tc_link_decl {
    int child, parent;
    double bandwidth, latency;
    char *where;
} tc_link_decl;

struct tc_topology {
    char *name;
    char *note;            /* how the file was read where it was approximated (tc_topology_note) */
    int num_nodes, cap_nodes;
    tc_node *nodes;
    int num_links, cap_links;
    tc_link_decl *links;
    /* name lookup: open addressing over node indices */
    int *hash;
    int hash_cap;
    /* machines in rank order */
    int num_machines, cap_machines;
    int *machines;
    int *rank_of_node;     /* -1 for switches (after finalize) */
    /* derived by finalize: the tree rooted at `top` (the first switch, or the
     * only machine); link l after finalize is the link from node link_child[l]
     * up to parent[link_child[l]] */
    bool finalized;
    int top;
    int *parent;           /* -1 at top */
    int *parent_link;      /* link index joining node to parent; -1 at top */
    int *depth;
    int *below;            /* machines in the subtree of node */
    int height;
};


/* Copy t's links whose two ends are kept (keep: a flag a node, NULL: all)
 * into r by name, then finalize r. */
tc_status tc_topology_copy_links_finalize(const tc_topology *t, const char *keep, tc_topology *r);
/* Mark switch `name` as an expanded machine (tc_topology_expand). */
/* 1 if link l joins a rank to the machine it was expanded from: shared
 * memory, not a network link that syncs keep apart (topo_ranks.c). */
int tc_topology_link_is_local(const tc_topology *t, int link);
tc_status tc_topology_mark_host(tc_topology *t, const char *name);

/* Writers' shared walk, computed once (O(V log V)): the switches in the
 * order that keeps rank order when read back (by their first machine's rank;
 * switches without machines last), and each node's children (machines in
 * rank order, then switches in that order): child[begin[v] .. begin[v+1]). */
typedef struct tc_walk { int ns; int *order, *begin, *child; } tc_walk;
tc_status tc_topology_walk(const tc_topology *t, tc_walk *w);
void tc_walk_free(tc_walk *w);
/* Names of switch s's machines and child switches, compressed to hostlist
 * expressions (NULL when none); caller frees both. */
tc_status tc_topology_children(const tc_topology *t, const tc_walk *w, int s, char **machines, char **switches);

/* Parsers (one per format). */
tc_status tc_slurm_parse(const char *text, size_t len, const char *filename, tc_topology **topo);
tc_status tc_slurm_write(const tc_topology *topo, FILE *out);
tc_status tc_yaml_parse(const char *text, size_t len, const char *filename, tc_topology **topo);
tc_status tc_yaml_write(const tc_topology *topo, FILE *out);
tc_status tc_topology_set_note(tc_topology *t, const char *note);
/* MPICH's coordinates file (topo_mpich.c) and an InfiniBand fabric as
 * ibnetdiscover prints it (topo_ibnet.c; node_name_map: a file of "GUID
 * name" lines, or NULL). */
tc_status tc_mpich_parse(const char *text, size_t len, const char *filename, tc_topology **topo);
tc_status tc_mpich_write(const tc_topology *topo, FILE *out);
tc_status tc_ibnet_parse(const char *text, size_t len, const char *filename, const char *node_name_map,
                         tc_topology **topo);
/* Slurm's topology.yaml (topo_slurm_yaml.c): the topology `name`, else the
 * cluster default, else the only one. */
tc_status tc_slurm_yaml_parse(const char *text, size_t len, const char *filename, const char *name, tc_topology **topo);
tc_status tc_slurm_yaml_write(const tc_topology *topo, FILE *out);
/* What neither Slurm file can say (topo_slurm.c): TC_ERR_UNSUPPORTED naming it. */
tc_status tc_slurm_writable(const tc_topology *t, const char *file);
/* Hang a hostlist's names below switch sw (topo_slurm.c; both Slurm formats). */
tc_status tc_slurm_attach(tc_topology *t, const char *list, const char *sw, double speed, const char *where,
                          bool machines);
/* A YAML text as a libyaml document, after the limits' first pass
 * (topo_yaml.c; both YAML formats). */
struct yaml_document_s;
/* A double-quoted YAML scalar, escaped (topo_yaml.c). */
void tc_yaml_put_scalar(FILE *f, const char *s);
tc_status tc_yaml_load_document(const char *text, size_t len, const char *file, struct yaml_document_s *doc);

/* The whole of a file, for the readers: *text malloc'd (NUL-terminated,
 * len bytes before it); refuses files over TC_MAX_FILE_BYTES.  what names
 * the kind of file in messages ("topology", "schedule"). */
tc_status tc_read_file(const char *path, const char *what, char **text, size_t *len);

/* ---- the strict JSON reader the file readers share (json_read.c) ---- */
typedef struct tc_json {
    const char *p, *end, *text, *file;
    int depth;
} tc_json;
const char *tc_json_where(const tc_json *r, char *buf, size_t len);   /* "file:line:column" */
#define TC_JSON_FAIL(r, status, fmt, ...)                                                        \
    do {                                                                                         \
        char w_[600];                                                                            \
        TC_FAIL((status), "%s: " fmt, tc_json_where((r), w_, sizeof w_), __VA_ARGS__);          \
    } while (0)
void tc_json_ws(tc_json *r);
const char *tc_json_what(const tc_json *r, char *buf, size_t len);    /* what stands here, for messages */
tc_status tc_json_expect(tc_json *r, char c);
int tc_json_take(tc_json *r, char c);                                 /* consumes c if it is next */
tc_status tc_json_nest(tc_json *r);
tc_status tc_json_string(tc_json *r, char **out);                     /* out NULL: skip it */
tc_status tc_json_skip(tc_json *r);                                   /* any value */
tc_status tc_json_list_open(tc_json *r, const char *what, int *empty);
tc_status tc_json_number(tc_json *r, double *v, double lo, double hi, const char *what);
tc_status tc_json_integer(tc_json *r, long long *v, long long lo, long long hi, const char *what);
int tc_json_line(const tc_json *r, const char *at);                   /* line number of a position */
tc_status tc_json_machines(tc_json *r, char ***names, int *n, int *cap);   /* "machines": [names] */

/* ---- schedule internals ---- */
struct tc_schedule {
    char algorithm[48];
    int num_ranks;
    int num_steps;
    /* a rank's part (tc_alltoall_plan_rank): the rank (-1: a whole
     * schedule), the whole schedule's phase count and each step's phase */
    int part_rank;
    int64_t num_phases;
    int64_t *step_phase;
    int64_t num_ops;
    int64_t *step_begin;   /* num_steps + 1 */
    tc_op *ops;
    int64_t num_block_ints;
    int32_t *blocks;       /* (origin, dest) pairs */
    int64_t num_syncs;
    tc_sync *syncs;
    /* bit/s of links the topology gives no rate, for their capacities (the
     * plan's; 0: TC_DEFAULT_BANDWIDTH); capacity_syncs: a link carries its
     * capacity of messages at once (capacitated plans), else one */
    double bandwidth;
    int capacity_syncs;
};

/* The schedule has at least this many steps, empty ones at the end too
 * (a schedule read from a file keeps its phase count). */
void tc_builder_set_min_steps(tc_schedule_builder *b, int32_t steps);

/* Shared by generators: the shift schedule under a given name (a2a_shift.c);
 * Tam & Wang's edge colouring of the complete graph on p vertices
 * (a2a_pairwise.c): tc_edge_colour_rounds(p) rounds (p-1 for p even, p for p
 * odd, 0 for p < 2), in round r vertex i meets tc_edge_colour(i, r, p), which
 * is i itself when it idles; a 1-factorisation for every p. */
tc_status tc_shift_plan(const tc_topology *topo, const char *name, tc_schedule **sched);
int tc_edge_colour_rounds(int p);
int tc_edge_colour(int i, int r, int p);

/* Reorder a direct phase schedule's steps (before its syncs are added) so
 * that links are handed between senders evenly (phase_order.c); forwarding
 * schedules and very large ones are left as they are. */
tc_status tc_schedule_order_steps(tc_schedule *s, const tc_topology *topo);

/* Move a direct phase schedule's messages between its phases (before its
 * syncs are added) so that busy links keep their senders for runs of phases
 * (sender_runs.c; capacitated schedules: lane_runs.c); same phases count,
 * still contention-free or within capacity; other schedules and very large
 * ones are left as they are. */
tc_status tc_schedule_group_senders(tc_schedule *s, const tc_topology *topo);

/* The lanes of a directed link (lanes.c): its users (op indices in step
 * order, m of them) dealt to `capacity` lanes, a sender keeping the lane it
 * used in an earlier step, the others taking the lane used longest ago;
 * before[k] is the position of the user before k in k's lane (-1: none).
 * sync.c orders each user after that one, verify_syncs.c checks it. */
typedef struct tc_lanes {
    int32_t size;           /* lanes allocated */
    int32_t *sender_lane;   /* per rank: the lane it used last on this link, -1 */
    int64_t *last;          /* per lane: its last user's position, -1 */
    int32_t *next, *prev;   /* lanes from the one used longest ago; sentinel = lane count */
} tc_lanes;
tc_status tc_lanes_init(tc_lanes *l, int ranks);
tc_status tc_lanes_assign(tc_lanes *l, const tc_schedule *s, const int64_t *users, int64_t m, const int32_t *step_of,
                          int capacity, int64_t *before);
/* The position `depth` users back in k's lane (-1: none). */
int64_t tc_lanes_back(const int64_t *before, int64_t k, int depth);
void tc_lanes_free(tc_lanes *l);

/* The same for a capacitated schedule whose links carry several messages at
 * once (lane_runs.c; tc_schedule_group_senders calls it there): each lane
 * of a link keeps its sender for runs of phases; no more phases, every link
 * still within its capacity. */
tc_status tc_schedule_group_lanes(tc_schedule *s, const tc_topology *topo);

/* The search that moves messages between phases so that senders keep their
 * links (sender_runs.c; its moves there and in lane_runs.c): threshold
 * accepting from a fixed seed, so that every rank plans the same schedule.
 * Each turn draws a message x and calls `move`, which makes a move of x and
 * returns its change of cost if that is at most `threshold` (falling
 * linearly from 3 to 0), else undoes it (or makes none) and returns
 * TC_RUNS_NONE.  phase[] is the live assignment of the ops messages, best[]
 * gets the best seen (the first when nothing beats it); returns its cost. */
#define TC_RUNS_NONE INT64_MIN
typedef int64_t (*tc_runs_move)(void *ctx, int32_t x, int64_t threshold, uint64_t *seed);
int64_t tc_runs_search(void *ctx, tc_runs_move move, int64_t ops, int64_t cost, const int32_t *phase, int32_t *best);

/* Move every op i to step step_of[i] (0 .. num_steps-1), keeping the ops of
 * a step in their old order. */
tc_status tc_schedule_set_steps(tc_schedule *s, const int32_t *step_of);
/* Every op's directed links: paths[plen[i] .. plen[i+1]) (both malloc'd). */
tc_status tc_schedule_op_paths(const tc_schedule *s, const tc_topology *topo, int64_t **plen, int32_t **paths);
/* p x p links between each two machines (1 from a machine to itself);
 * malloc'd, NULL when memory ran out. */
int32_t *tc_topology_hop_table(const tc_topology *topo);

/* First-fit steps for messages along paths (first_fit.c): links are
 * directed link indices 0 .. links-1 (2 l up, 2 l + 1 down), one message a
 * step each.  place puts a message on the earliest step >= from in which no
 * link of its path is taken. */
typedef struct tc_first_fit tc_first_fit;
tc_status tc_first_fit_create(int links, int64_t steps_hint, tc_first_fit **ff);
void tc_first_fit_destroy(tc_first_fit *ff);
tc_status tc_first_fit_place(tc_first_fit *ff, const int32_t *path, int n, int64_t from, int64_t *step);

/* The core's one pseudo-random stream (xorshift64): the same numbers on
 * every machine for a seed, so that every rank plans alike.  *x != 0. */
static inline uint64_t tc_random_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* "a, b, c": the names of a table (name_of(0..count-1)) for error messages. */
void tc_join_names(char *buf, size_t len, int count, const char *(*name_of)(int));

/* ---- per-rank planning (rank_plan.c) ---- */
/* A message and its phase. */
typedef struct tc_op_at { int32_t src, dst; int64_t phase; } tc_op_at;
/* A direct contention-free phase schedule told without building it whole:
 * what an algorithm with a per-rank form gives (tc_a2a_<id>_oracle). */
typedef struct tc_phase_oracle {
    const tc_topology *topo;
    int64_t phases;
    void *ctx;
    /* rank r's messages, sent and received, into out (2 (p - 1) entries) */
    tc_status (*rank_messages)(const void *ctx, int r, tc_op_at *out, int64_t *n);
    /* the message directed link e carries in phase p: 1 and *m, or 0 */
    int (*link_user)(const void *ctx, int32_t e, int64_t p, tc_op_at *m);
    /* the message on directed link e nearest phase p: the latest before it
     * (dir < 0) or the earliest after it; 1 and *m, or 0 */
    int (*near_user)(const void *ctx, int32_t e, int64_t p, int dir, tc_op_at *m);
    void (*destroy)(void *ctx);
} tc_phase_oracle;
/* Per directed edge (2 * link + direction): its capacity at a schedule's
 * bandwidth where the schedule keeps a link to its capacity (capacity_syncs),
 * else 1.  Free with free(); NULL when out of memory. */
int *tc_schedule_edge_capacities(const tc_schedule *s, const tc_topology *topo);
tc_status tc_a2a_faraj_yuan_oracle(const tc_topology *topo, tc_phase_oracle *out);
/* Algorithm i's oracle (registry); TC_ERR_UNSUPPORTED when it has none. */
tc_status tc_algorithm_oracle(int i, const tc_topology *topo, tc_phase_oracle *o);

/* Generators: one per algorithm file, registered in algorithms.def. */
#define TC_ALGORITHM(id, name, props, params, per_rank, summary) \
    tc_status tc_a2a_##id(const tc_topology *topo, const tc_plan_options *opt, tc_schedule **sched);
#include "algorithms.def"
#undef TC_ALGORITHM

#endif
