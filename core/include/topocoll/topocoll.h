/*
 * topocoll: topology-aware MPI collectives -- the MPI-free core.
 *
 * Conventions (stated once, hwloc style):
 *  - Handles are opaque: tc_topology, tc_schedule, tc_verify_report.
 *  - Every function that can fail returns tc_status; TC_OK is 0.  On failure a
 *    human-readable message naming the culprit (and, for parsers, "file:line")
 *    is kept per thread: tc_error_message().  tc_error_origin() tells the
 *    source file and line of libtopocoll that raised it (for bug reports).
 *  - Ownership: a function whose name ends in _create/_load/_parse/_plan/_read
 *    hands the caller a handle to release with the matching _destroy.  Strings
 *    returned by accessors belong to the handle and live as long as it does.
 *  - Ranks: rank i of a topology is its i-th machine in file order.
 */
#ifndef TOPOCOLL_H
#define TOPOCOLL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TOPOCOLL_VERSION "0.1.0"

/* ---- errors ------------------------------------------------------------ */
typedef enum tc_status {
    TC_OK = 0,
    TC_ERR_ARG,         /* caller passed something invalid                    */
    TC_ERR_NOMEM,       /* allocation failed                                  */
    TC_ERR_IO,          /* file could not be read or written                  */
    TC_ERR_PARSE,       /* malformed file or string                           */
    TC_ERR_TOPOLOGY,    /* well-formed input describing an invalid topology   */
    TC_ERR_UNSUPPORTED, /* algorithm restriction or format limit not met      */
    TC_ERR_VERIFY,      /* a schedule failed verification                     */
    TC_ERR_LIMIT        /* problem too large for a fixed limit                */
} tc_status;

const char *tc_status_name(tc_status s);
const char *tc_error_message(void);
const char *tc_error_origin(void);
void tc_error_clear(void);

/* ---- limits (docs/interfaces.md, "Limits") -------------------------------- */
/* Every input is refused past these at once, with TC_ERR_LIMIT (or
 * TC_ERR_PARSE for a number out of range) and a message naming the limit. */
#define TC_MAX_MACHINES 65536          /* machines (ranks, once expanded) a topology */
#define TC_MAX_SWITCHES 65536          /* switches a topology */
#define TC_MAX_LEVELS 64               /* switches on the way from a machine to the top */
#define TC_MAX_NAME_LEN 255            /* bytes of a machine or switch name */
#define TC_MAX_HOSTLIST_NAMES 1048576  /* names one hostlist expression expands to */
#define TC_MAX_FILE_BYTES (64L << 20)  /* a topology or schedule file */
#define TC_MAX_CAPACITATED_CELLS (1LL << 26) /* (link, phase) cells of the capacitated search:
                                                1 GiB at 16 bytes a cell */
#define TC_MAX_NESTING 32              /* nesting of a YAML or JSON document */
#define TC_MIN_RATE 1e3                /* bit/s: 1 kbit/s */
#define TC_MAX_RATE 1e15               /* bit/s: 1 Pbit/s */
#define TC_MAX_TIME 3600.0             /* seconds: a latency, a wait */
/* messages (ranks x (ranks - 1) x segments) of one whole planned schedule:
 * 8,192 ranks plan in 13 s and 3.4 GB, 16,384 would need ~14 GB */
#define TC_MAX_PLAN_MESSAGES (1LL << 27)
#define TC_MAX_TUNING_RULES 65536          /* rules of one tuning file */
#define TC_MAX_SIZE 1099511627776.0   /* bytes: a block, a segment (1 TiB) */
/* A bare number as a rate is Mbit/s everywhere (Slurm's LinkSpeed reading). */
#define TC_BARE_RATE_UNIT 1e6
/* The limits above by their names ("machines", "switches", "levels",
 * "name_len", "hostlist_names", "file_bytes", "nesting", "min_rate",
 * "max_rate", "max_time", "plan_messages", "max_size", "bare_rate_unit",
 * "capacitated_cells"); -1 for an
 * unknown name. */
double tc_limit(const char *name);

/* ---- rates and times --------------------------------------------------- */
/* Parse "100Mbit", "1Gbit/s", "12.5MB/s", "10G" into bit/s; "50us", "1ms",
 * "0.2s" into seconds.  Numbers are decimal (digits, a point, an exponent);
 * rates must lie in [TC_MIN_RATE, TC_MAX_RATE] and times in [0, TC_MAX_TIME].
 * A bare number is rejected unless bare_unit > 0, in which case it is
 * multiplied by bare_unit (TC_BARE_RATE_UNIT for rates). */
tc_status tc_parse_rate(const char *text, double bare_unit, double *bits_per_s);
tc_status tc_parse_time(const char *text, double bare_unit, double *seconds);
/* Sizes in bytes ("16384", "16K", "1.5M", "64KB"; K, M, G, T are powers of
 * 1024), whole bytes from 0 to TC_MAX_SIZE: the one reader of sizes for the
 * CLI and the PMPI library. */
tc_status tc_parse_size(const char *text, long long *bytes);
/* Canonical text ("100Mbit", "50us"); buf of at least 32 bytes. */
void tc_format_rate(double bits_per_s, char *buf, size_t len);
void tc_format_time(double seconds, char *buf, size_t len);

/* ---- hostlists ----------------------------------------------------------- */
/* Expand "n[0-7,9],tux[01-16]" into names; *names is one malloc'd block of
 * NUL-separated strings, *count the number of names.  Free with free(). */
tc_status tc_hostlist_expand(const char *expr, char **names, size_t *count);
/* Compress names (in order) into a hostlist expression, keeping the order:
 * only runs of consecutive numbers of equal width are folded.  Caller frees. */
tc_status tc_hostlist_compress(const char *const *names, size_t count, char **expr);

/* ---- topology ------------------------------------------------------------ */
typedef struct tc_topology tc_topology;

typedef enum tc_node_kind { TC_NODE_MACHINE = 0, TC_NODE_SWITCH = 1 } tc_node_kind;
typedef enum tc_format {
    TC_FORMAT_AUTO = 0,
    TC_FORMAT_SLURM,        /* topology.conf, or the text of scontrol show topology */
    TC_FORMAT_YAML,         /* topocoll's own YAML */
    TC_FORMAT_SLURM_YAML,   /* Slurm's topology.yaml */
    TC_FORMAT_MPICH,        /* MPICH's coordinates file (MPIR_CVAR_COORDINATES_FILE) */
    TC_FORMAT_IBNET         /* InfiniBand: the output of ibnetdiscover */
} tc_format;
/* The formats' names ("auto", "slurm", "yaml", "slurm-yaml", "mpich",
 * "ibnetdiscover"), by number; NULL past the last. */
const char *tc_format_name(int format);
/* Options of reading a file: the topology of a Slurm topology.yaml to take
 * (NULL: the cluster default, else the only one), and a node-name map for
 * ibnetdiscover ("GUID name" lines; NULL: host names from the adapters'
 * descriptions). */
typedef struct tc_load_options {
    const char *topology_name;
    const char *node_name_map;
} tc_load_options;

/* Building.  Names must be unique across machines and switches.  Links join a
 * child (machine or switch) to a parent switch; bandwidth/latency 0 mean "not
 * given" (consumers apply their defaults).  `where` ("file:line" or NULL) is
 * kept for error messages. */
tc_status tc_topology_create(tc_topology **topo);
void tc_topology_destroy(tc_topology *topo);
tc_status tc_topology_add_switch(tc_topology *topo, const char *name, const char *where);
tc_status tc_topology_add_machine(tc_topology *topo, const char *name, int slots,
                                  const char *where);
tc_status tc_topology_add_link(tc_topology *topo, const char *child, const char *parent,
                               double bandwidth, double latency, const char *where);
tc_status tc_topology_set_slots(tc_topology *topo, const char *machine, int slots,
                                const char *where);
tc_status tc_topology_set_name(tc_topology *topo, const char *name);
/* Validate (connected, acyclic, machines are leaves on switches, >= 1 machine)
 * and derive paths and loads.  Must succeed before any query below. */
tc_status tc_topology_finalize(tc_topology *topo);

/* Loading: from a file (format told by extension or contents), a string, or a
 * synthetic spec such as "chain:8,8,8,8" (see tc_topology_synthetic). */
tc_status tc_topology_load(const char *path, tc_format format, tc_topology **topo);
tc_status tc_topology_load_with(const char *path, tc_format format, const tc_load_options *options,
                                tc_topology **topo);
tc_status tc_topology_parse(const char *text, size_t len, tc_format format,
                            const char *filename, tc_topology **topo);
tc_status tc_topology_parse_with(const char *text, size_t len, tc_format format, const char *filename,
                                 const tc_load_options *options, tc_topology **topo);
/* Synthetic topologies for tests and examples:
 *   "N"              one switch with N machines
 *   "star:a,b,c"     switch s0 holds a machines and links switches s1.. with b, c..
 *   "chain:a,b,c"    switches s0-s1-s2.. in a chain, holding a, b, c.. machines
 *   "tree:f1,f2,..,m" a root switch with f1 child switches, each with f2 .., the
 *                    last level holding m machines each
 * Machines are n0, n1, ... in depth-first order; switches s0, s1, ... */
tc_status tc_topology_synthetic(const char *spec, tc_topology **topo);
tc_status tc_topology_write(const tc_topology *topo, tc_format format, FILE *out);
/* 1 if topologies are the same (names, rank order, links, values, slots). */
int tc_topology_equal(const tc_topology *a, const tc_topology *b);

/* The sub-topology of the given machines (ranks of topo), in that order: its
 * rank i is machine ranks[i] of topo.  All switches and their links stay
 * (branches left without machines are harmless to every algorithm).  A rank
 * listed twice or out of range fails with TC_ERR_ARG. */
tc_status tc_topology_restrict(const tc_topology *topo, const int *ranks, int n, tc_topology **out);

const char *tc_topology_name(const tc_topology *topo);
/* How the file was read where it had to be approximated (an InfiniBand
 * fabric's spines merged into one switch, ...); "" if nowhere. */
const char *tc_topology_note(const tc_topology *topo);
int tc_topology_num_nodes(const tc_topology *topo);
int tc_topology_num_machines(const tc_topology *topo);
int tc_topology_num_switches(const tc_topology *topo);
const char *tc_topology_node_name(const tc_topology *topo, int node);
tc_node_kind tc_topology_node_kind(const tc_topology *topo, int node);
int tc_topology_node_find(const tc_topology *topo, const char *name); /* -1 if none */
int tc_topology_node_parent(const tc_topology *topo, int node);       /* -1 at the top */
int tc_topology_machine_node(const tc_topology *topo, int rank);
int tc_topology_machine_rank(const tc_topology *topo, int node);      /* -1: a switch */
int tc_topology_machine_slots(const tc_topology *topo, int rank);
/* Links are numbered 0..num_nodes-2 after finalize; link l joins child and parent. */
int tc_topology_num_links(const tc_topology *topo);
void tc_topology_link(const tc_topology *topo, int link, int *child, int *parent,
                      double *bandwidth, double *latency);
/* Machines below the link's child end (the other side holds the rest). */
int tc_topology_link_machines_below(const tc_topology *topo, int link);
/* All-to-all load of the link in each direction: below * (M - below). */
int64_t tc_topology_link_load(const tc_topology *topo, int link);
int64_t tc_topology_alltoall_load(const tc_topology *topo);   /* max over links */
/* Peak aggregate all-to-all throughput at uniform bandwidth B, as a factor of
 * B: M(M-1)/(|Mu||Mv|) of the bottleneck; 0 when M < 2. */
double tc_topology_peak_factor(const tc_topology *topo);
/* Peak aggregate all-to-all throughput in bit/s with each link's own
 * bandwidth (default_bandwidth where the topology gives none): M(M-1) blocks
 * over the time the most loaded link needs, max over links of load/B.  With
 * one bandwidth B everywhere this is M(M-1)B/(|Mu||Mv|) (Faraj & Yuan, 3). */
double tc_topology_peak_throughput(const tc_topology *topo, double default_bandwidth);
/* The directed edges of path(src_rank -> dst_rank), each as 2*link (child to
 * parent, "up") or 2*link+1 (parent to child, "down").  Returns the count;
 * edges must hold tc_topology_height(topo)*2 entries. */
/* Links of unequal rates: a link carries floor(rate / r) messages at once
 * (at least 1, at most TC_MAX_CAPACITY), r the rate of the slowest link
 * joining a host to the network (default_bandwidth where the topology gives
 * none).  The capacitated phase bound: max over links of ceil(load /
 * capacity) (its link in *link, -1 when M < 2; r in *host_rate); with one
 * rate everywhere it is the all-to-all load.  M (M - 1) blocks in that many
 * phases of one block over r each: the peak throughput it implies is
 * M (M - 1) r / bound. */
#define TC_MAX_CAPACITY 4096
int tc_topology_link_capacity(const tc_topology *topo, int link, double default_bandwidth);
int64_t tc_topology_capacitated_load(const tc_topology *topo, double default_bandwidth, int *link,
                                     double *host_rate);
int tc_topology_height(const tc_topology *topo);
int tc_topology_path(const tc_topology *topo, int src_rank, int dst_rank, int32_t *edges);

/* Several ranks per machine: a copy of topo in which machine i with
 * ranks_per_machine[i] > 1 becomes a switch of that name holding machines
 * "NAME.0", "NAME.1", ... (its ranks, joined by shared-memory links of
 * 1 Tbit/s and 100 ns), so that every algorithm plans for ranks as it does for
 * machines (Faraj & Yuan: a machine as a small switch).  Ranks are numbered
 * machine by machine.  Counts < 1 fail with TC_ERR_ARG. */
tc_status tc_topology_expand(const tc_topology *topo, const int *ranks_per_machine, tc_topology **out);
/* The host of a rank: the node of the expanded machine holding it, else the
 * rank's own machine node.  Ranks on one host share its network link. */
int tc_topology_machine_host(const tc_topology *topo, int rank);
/* Clusters for two-level algorithms: the parts the tree falls into when every
 * bottleneck link (largest load / bandwidth; default_bandwidth where none is
 * given) is cut, so blocks between clusters are what the bottleneck carries.
 * cluster_of_rank[r] numbers them 0, 1, ... in rank order; returns their
 * count (-1: out of memory).  One switch: each machine is a cluster. */
int tc_topology_clusters(const tc_topology *topo, double default_bandwidth, int *cluster_of_rank);
/* The Faraj-Yuan root (section 4.1) and its subtrees, largest first.  Valid for
 * M >= 2.  subtree_of_rank[r] is the subtree index of rank r; sizes[i] is |Mi|.
 * Arrays are caller-provided: num_machines ints each. */
tc_status tc_topology_aapc_root(const tc_topology *topo, int *root_node, int *num_subtrees,
                                int *sizes, int *subtree_of_rank, int *subtree_node);

/* ---- schedule IR --------------------------------------------------------- */
/*
 * A schedule is a sequence of steps.  Step s holds operations (src -> dst);
 * all operations of a step may run concurrently, and each rank performs its
 * steps in order.  An operation moves one or more blocks; block (o, d) is the
 * piece of o's send buffer destined for d.  A "direct" operation moves exactly
 * block (src, dst); a forwarding operation lists the blocks it carries
 * (store-and-forward: Bruck, hierarchical, two-cluster algorithms).  Syncs
 * order operations across ranks: operation `before` may start only after
 * operation `after` has completed.  For phase schedules a step is a phase.
 */
typedef struct tc_schedule tc_schedule;
typedef struct tc_op {
    int32_t src, dst;
    int32_t first_block; /* -1: the direct block (src, dst); else index into blocks */
    int32_t num_blocks;  /* 1 for a direct operation */
    int32_t part, parts; /* the op carries bytes [part*B/parts, (part+1)*B/parts)
                            of its block of B bytes; 0 and 1 for a whole block.
                            Segmented (parts > 1) operations are direct. */
} tc_op;
typedef struct tc_sync { int64_t after, before; } tc_sync;   /* operation indices */

/* Build a schedule operation by operation, in any order; finish sorts the
 * operations by step (stable) and hands over the schedule. */
typedef struct tc_schedule_builder tc_schedule_builder;
tc_status tc_builder_create(const char *algorithm, int num_ranks, int64_t expected_ops,
                            tc_schedule_builder **b);
void tc_builder_destroy(tc_schedule_builder *b);
tc_status tc_builder_add(tc_schedule_builder *b, int32_t step, int32_t src, int32_t dst);
/* A forwarding op carrying num_blocks blocks given as (origin, dest) pairs. */
/* A direct op carrying piece `part` of `parts` of block (src, dst). */
tc_status tc_builder_add_part(tc_schedule_builder *b, int32_t step, int32_t src, int32_t dst, int32_t part,
                              int32_t parts);
tc_status tc_builder_add_blocks(tc_schedule_builder *b, int32_t step, int32_t src,
                                int32_t dst, const int32_t *pairs, int32_t num_blocks);
tc_status tc_builder_finish(tc_schedule_builder *b, tc_schedule **sched);

void tc_schedule_destroy(tc_schedule *s);
const char *tc_schedule_algorithm(const tc_schedule *s);
int tc_schedule_num_ranks(const tc_schedule *s);
int tc_schedule_num_steps(const tc_schedule *s);
int64_t tc_schedule_num_ops(const tc_schedule *s);
/* Operations of step s are ops[step_begin(s) .. step_begin(s+1)). */
int64_t tc_schedule_step_begin(const tc_schedule *s, int step);
const int64_t *tc_schedule_step_begins(const tc_schedule *s);  /* num_steps + 1 */
const tc_op *tc_schedule_ops(const tc_schedule *s);
const int32_t *tc_schedule_blocks(const tc_schedule *s);   /* (origin, dest) pairs */
int64_t tc_schedule_num_syncs(const tc_schedule *s);
const tc_sync *tc_schedule_syncs(const tc_schedule *s);
tc_status tc_schedule_set_syncs(tc_schedule *s, const tc_sync *syncs, int64_t n);
/* Copy out as (step, src, dst) triples; out holds 3*num_ops ints. */
void tc_schedule_copy_ops(const tc_schedule *s, int32_t *out);
/* Build a direct schedule from (step, src, dst) triples (e.g. read from JSON). */
tc_status tc_schedule_from_triples(const char *algorithm, int num_ranks, int64_t n,
                                   const int32_t *triples, tc_schedule **s);
/* Write the schedule JSON of docs/interfaces.md (direct operations only). */
tc_status tc_schedule_write_json(const tc_schedule *s, const tc_topology *topo, FILE *out);
/* Read it back (strict JSON in UTF-8, within the limits above): the phases
 * as steps of direct operations, empty phases too, and its syncs.  With a
 * topology, its machines must be the file's, in order; without, the file's
 * machine count is the rank count.  Errors name "file:line:column". */
tc_status tc_schedule_read_json(const char *text, size_t len, const char *filename, const tc_topology *topo,
                                tc_schedule **sched);
tc_status tc_schedule_load_json(const char *path, const tc_topology *topo, tc_schedule **sched);

/* ---- pairwise synchronisation (Faraj & Yuan, section 5) ------------------ */
/*
 * Execution contract the syncs rely on: a rank completes all its operations
 * of a step before it starts its next step and before it signals any sync
 * about that step.  A sync (after, before) is sent by after's sender to
 * before's sender.
 *
 * Messages x (phase p) and y (phase q > p) that share a directed link need
 * y to start after x completes.  Only consecutive users of each link are
 * candidates (the rest follow transitively).  With depth d > 1 the i-th user
 * of a link waits for the (i-d)-th instead: at most d messages share a link
 * at a time (one running in each residue class of i mod d), so the next
 * message's start-up overlaps the current one's transfer; d = 1 is the
 * paper's strict separation.  Then a candidate is dropped when
 * the sender of y already knows x completed: by its own program order, or
 * through syncs it waited for earlier, directly or through third ranks
 * (vector clocks).  Cost O(messages * height + kept * ranks) time.
 */
typedef struct tc_sync_stats {
    int64_t sharing_pairs;   /* pairs of messages that share a directed link in
                                different phases: the paper's dependence graph */
    int64_t candidates;      /* consecutive per link, other senders, distinct  */
    int64_t kept;            /* after removing the redundant ones              */
} tc_sync_stats;
/* Compute and attach the syncs of a direct schedule (replacing any). */
tc_status tc_schedule_add_syncs(tc_schedule *s, const tc_topology *topo, int depth, tc_sync_stats *stats);

/* ---- verifier ------------------------------------------------------------ */
/*
 * Proves a schedule against the all-to-all postcondition on a topology: every
 * block (o, d), o != d, arrives at d exactly once, and forwarding operations
 * only send blocks their sender holds; then re-derives every path and counts,
 * per step, the use of every directed edge.  It reports; it never prints.
 */
typedef struct tc_verify_report {
    int complete;            /* every block delivered exactly once           */
    int contention_free;     /* no directed edge used twice within a step    */
    int optimal;             /* contention-free and steps == all-to-all load */
    int single_port;         /* each rank sends <= 1 and receives <= 1 a step */
    int host_single_port;    /* each host sends <= 1 and receives <= 1 message
                                to or from other hosts a step (hosts: see
                                tc_topology_machine_host)                      */
    int bottleneck_once;     /* every bottleneck link carries each block whose
                                path crosses it once, and no other block      */
    int max_parts;           /* most pieces a block is cut into (1: whole)    */
    int num_steps;
    int64_t load;            /* all-to-all load of the bottleneck link       */
    int64_t num_ops;
    int64_t contended_steps; /* steps in which some edge is used twice       */
    int64_t max_edge_use;    /* most uses of one directed edge in one step   */
    int within_capacity;     /* no directed edge carries more messages in a
                                step than its capacity (tc_topology_link_capacity,
                                links without a rate at the schedule's bandwidth) */
    int capacitated_optimal; /* within capacity and steps == the capacitated bound */
    int64_t capacitated_load;/* the capacitated phase bound                 */
    int64_t over_capacity_steps;
    char problem[512];       /* the first problem found, "" if none          */
} tc_verify_report;

tc_status tc_schedule_verify(const tc_schedule *s, const tc_topology *topo,
                             tc_verify_report *report);

/* The sync verifier (verify_syncs.c): what the executor runs is safe.  Two
 * messages on one directed link, the second `depth` users after the first
 * in a later step, must be ordered by program order and syncs (the
 * execution contract above: a rank's steps in order, a sync leaves once its
 * message's step has completed); and programs plus syncs must have no cycle
 * (a cycle is a deadlock).  Direct schedules only.  It reports; it never
 * prints. */
typedef struct tc_sync_report {
    int ordered;             /* every such pair ordered                      */
    int acyclic;             /* no cycle: the syncs cannot deadlock          */
    int64_t checked_pairs;   /* pairs of consecutive (depth) users checked   */
    int64_t unordered_pairs;
    char problem[512];       /* the first problem found, "" if none          */
} tc_sync_report;
tc_status tc_schedule_verify_syncs(const tc_schedule *s, const tc_topology *topo, int depth,
                                   tc_sync_report *report);

/* ---- algorithms (one registry) ------------------------------------------- */
/* Properties an algorithm promises; the verifier checks them. */
enum {
    TC_PROP_CONTENTION_FREE = 1u << 0, /* each step is a contention-free phase */
    TC_PROP_OPTIMAL = 1u << 1,         /* steps == load of the bottleneck link  */
    TC_PROP_TOPOLOGY_AWARE = 1u << 2,  /* the plan depends on the tree          */
    TC_PROP_SINGLE_PORT = 1u << 3,     /* a rank sends to one and receives from
                                          one rank a step                        */
    TC_PROP_HOST_SINGLE_PORT = 1u << 4,/* a host's link carries one message a
                                          step each way (several ranks a host)  */
    TC_PROP_BOTTLENECK_ONCE = 1u << 5, /* forwarding never re-crosses the
                                          bottleneck links: they carry exactly
                                          their load                            */
    TC_PROP_CAPACITATED = 1u << 6      /* each step keeps every link within its
                                          capacity (tc_topology_link_capacity) */
};
/* Parameters an algorithm reads (restrictions and parameters are data). */
enum {
    TC_PARAM_SEGMENTS = 1u << 0,  /* tc_plan_options.segments  (TOPOCOLL_SEGMENT_SIZE) */
    TC_PARAM_FANOUT = 1u << 1,    /* tc_plan_options.fanout    (TOPOCOLL_FANOUT)       */
    TC_PARAM_CLUSTERS = 1u << 2   /* tc_plan_options.clusters  (TOPOCOLL_CLUSTERS)     */
};
/* What a verifier report breaks of algorithm `index`'s promises (its
 * TC_PROP_* flags, less those in `waive`): the count, and in buf (len bytes)
 * the broken promises as "incomplete; contention; ..." ("" when none).  An
 * index < 0 (a schedule of no registered algorithm) promises completeness
 * only. */
int tc_algorithm_broken_promises(int index, const tc_verify_report *report, unsigned waive, char *buf,
                                 size_t len);
/* The PMPI library's variable and the option name of a parameter flag
 * ("TOPOCOLL_SEGMENT_SIZE", "segment_size"); NULL for an unknown flag. */
const char *tc_param_variable(unsigned param);
const char *tc_param_name(unsigned param);
typedef struct tc_plan_options {
    int segments;           /* pieces each block is cut into; <= 1: whole blocks   */
    int fanout;             /* group-shuffle: partners a round (omega); 0: default */
    const int *clusters;    /* local-group: cluster id (>= 0) of each rank; NULL:
                               the topology's (tc_topology_clusters)               */
    int sync_depth;         /* for execution: see tc_schedule_add_syncs; 0: 1      */
    int phase_order;        /* for execution, a direct phase schedule's phases:
                               TC_PHASE_ORDER_* (0: grouped, the default)      */
    double bandwidth;       /* bit/s of links the topology gives none, for link
                               capacities (capacitated); <= 0: TC_DEFAULT_BANDWIDTH */
} tc_plan_options;
/* tc_plan_options.phase_order (TOPOCOLL_PHASE_ORDER); the numbers are the
 * positions of the names in TC_PHASE_ORDER_NAMES. */
enum {
    TC_PHASE_ORDER_GROUPED = 0,   /* messages moved between phases so that links
                                     keep their senders (sender_runs.c)        */
    TC_PHASE_ORDER_PAPER = 1,     /* the generator's phases, in its order        */
    TC_PHASE_ORDER_BALANCED = 2   /* the generator's phases, ordered so that
                                     links change senders evenly (phase_order.c) */
};
#define TC_PHASE_ORDER_NAMES {"grouped", "paper", "balanced", NULL}
const char *tc_phase_order_name(int order);   /* NULL past the last */
/* Defaults, one home (Python asks tc_default): */
#define TC_DEFAULT_FANOUT 4              /* group-shuffle's partners a round (Tam & Wang's omega) */
#define TC_DEFAULT_BANDWIDTH 1e8         /* bit/s of a link a topology gives none: the paper's cluster */
#define TC_DEFAULT_LATENCY 50e-6         /* seconds, likewise */
/* Sync-shuffle and group-shuffle segment size (bytes): the best of 4K..128K
 * for sync-shuffle on the emulated 8-machine switch at 64-256 KB blocks
 * (docs/results/2026-11-22-algorithms.md). */
#define TC_DEFAULT_SEGMENT_SIZE 16384
/* The executor's pace lead (TOPOCOLL_PACE_LEAD): how much earlier than its
 * link clock frees the link a paced step's syncs leave; and the lead of a
 * capacitated plan where links carry several messages at once: on the
 * emulated 3 x 4 leaf-spine cluster (uplinks 2 messages, 128 KB) 500 us
 * reached 72-76 % of the bound, 1-2 ms 76-88 %, 3 ms 86-91 %, 4-6 ms
 * 76-90 % (docs/results/2026-11-23-capacitated.md). */
#define TC_DEFAULT_PACE_LEAD 0.0005
#define TC_DEFAULT_CAPACITATED_PACE_LEAD 0.003
/* Where no lead is given, a step's lead is at most this share of the
 * step's link time.  A lead is there to cover the
 * sync's way and the next sender's waking; beyond that, each hand-off starts
 * the next message that much early, and on a link handed over in every
 * phase the overlaps add up faster than the link clock's slack drains them:
 * the defaults above, measured on the emulated cluster (ranks waking up to
 * milliseconds late on two busy cores), made faraj-yuan drop thousands of
 * packets and run at 5 % of its bound in the packet simulation at 1 Gbit/s
 * (a 64 KB message there takes 0.57 ms), and at 16 KB on 256 machines at
 * 100 Mbit/s; 8 % measured 86-94 % (napping, spinning ranks), 17 % dropped again
 * (docs/results/2026-11-25-packet-scale.md).  The emulated cluster sets no
 * cap (TOPOCOLL_PACE_LEAD_SHARE=0): its ranks do wake late. */
#define TC_DEFAULT_PACE_LEAD_SHARE 0.08
/* The share of a link's rate the executor's link clock counts as MPI data
 * over TCP on Ethernet: 1448 payload bytes a 1514-byte frame less the other
 * way's ACKs is 0.936 of a frame-counted rate, 0.915 on a wire; 0.92
 * measured best (docs/pacing.md): a clock a little slower than the data
 * leaves a late message room instead of an overlap with the next. */
#define TC_TCP_GOODPUT 0.92
/* The share on a path whose narrowest links are only its two machines' own,
 * the switch-to-switch links between them faster (a leaf-spine's uplinks):
 * no equally loaded hop in between slows a message below its frame-counted
 * rate, and 0.935 measured best there (12 machines, 3 x 4 leaf-spine,
 * 100 Mbit/s hosts, 200 Mbit/s uplinks, 128 KB: faraj-yuan 1.6 % and the
 * capacitated plan 0.3-1.2 % faster than at 0.92; on equal links 0.92 stays
 * ahead, docs/results/2026-11-25-capacitated-goodput.md). */
#define TC_TCP_GOODPUT_FAST_CORE 0.935
/* A machine's egress queue counts a packet as short, to go ahead of bulk
 * data (pure ACKs, MPI's zero-byte syncs), below this IPv4 total length in
 * bytes: the emulated cluster's short-first htb filter and the packet
 * simulator's sparse-first queue. */
#define TC_SHORT_PACKET_BYTES 128
/* The emulated cluster's shapers (htb at a machine's egress, tbf at a switch
 * port, each over a veth that takes a packet at once): a bucket of
 * TC_SHAPER_BURST_S at the rate, at least TC_SHAPER_CLASS_FRAMES full
 * Ethernet frames of TC_ETHERNET_FRAME bytes (a tbf queue counts a frame's
 * bytes); a machine's class for one peer bursts TC_SHAPER_CLASS_FRAMES
 * frames.  The packet simulator's --gso-clumps shapes as they do. */
#define TC_ETHERNET_FRAME 1514
#define TC_SHAPER_BURST_S 0.001
#define TC_SHAPER_CLASS_FRAMES 2
#define TC_SHAPER_CLASS_BURST (TC_SHAPER_CLASS_FRAMES * TC_ETHERNET_FRAME)   /* bytes */
/* Pacing rates from machine me to every machine of t (rate[p], bit/s; 0 for
 * me and where a path's rate is unknown): the path's narrowest link
 * (bandwidth where the topology gives none; 0: unknown) times
 * TC_TCP_GOODPUT_FAST_CORE on a path that crosses switch-to-switch links
 * all faster than that, else TC_TCP_GOODPUT.  Returns how many are known. */
int tc_pace_rates(const tc_topology *t, int me, double bandwidth, double *rate);
/* The pace lead a plan of algorithm (registry index) on t runs with when the
 * user gives none: TC_DEFAULT_CAPACITATED_PACE_LEAD for a capacitated plan
 * on a tree where some link carries several messages at once, else
 * TC_DEFAULT_PACE_LEAD. */
double tc_pace_lead(int algorithm, const tc_topology *t, double bandwidth);
/* "fanout", "bandwidth", "latency", "segment_size", "plan_whole_max_ranks"
 * (TC_PLAN_WHOLE_MAX_RANKS), "pace_lead", "capacitated_pace_lead", "pace_lead_share",
 * "short_packet" (TC_SHORT_PACKET_BYTES), "ethernet_frame", "shaper_burst"
 * (seconds), "shaper_class_frames", "shaper_class_burst" (bytes); -1 for an
 * unknown name. */
double tc_default(const char *name);
/* The emulated cluster's shapers' bucket for a link of rate_bps, in bytes:
 * TC_SHAPER_BURST_S at the rate, at least TC_SHAPER_CLASS_FRAMES frames. */
double tc_shaper_bucket(double rate_bps);
unsigned tc_algorithm_params(int index);
int tc_algorithm_count(void);
const char *tc_algorithm_name(int index);
const char *tc_algorithm_summary(int index);
unsigned tc_algorithm_properties(int index);
/* 1 if the executor runs the algorithm's schedules with pairwise syncs (and
 * paces them where link rates are known). */
int tc_algorithm_runs_with_syncs(int index);
int tc_algorithm_find(const char *name);   /* -1: unknown */
/* Plan an all-to-all over the topology's machines (rank i = machine i).
 * An unknown name fails with TC_ERR_ARG listing the valid names. */
tc_status tc_alltoall_plan(const char *algorithm, const tc_topology *topo,
                           tc_schedule **sched);

/* Plan as the executor runs it: the schedule, plus the pairwise syncs that
 * keep the phases of a contention-free algorithm apart (see
 * tc_schedule_add_syncs for sync_depth).  What the PMPI library and
 * `topocoll generate` both execute. */
tc_status tc_alltoall_plan_for_execution(const char *algorithm, const tc_topology *topo, int sync_depth,
                                         tc_schedule **sched);
/* Both with options (NULL: defaults); plan_with_options(..., execute = 1)
 * is plan_for_execution.  Options an algorithm does not read are ignored. */
tc_status tc_alltoall_plan_with_options(const char *algorithm, const tc_topology *topo,
                                        const tc_plan_options *options, int execute, tc_schedule **sched);

/* ---- per-rank planning ---------------------------------------------------- */
/*
 * One rank's part of the schedule the executor runs, planned without the
 * whole: its messages (sent and received) with their phases, and the syncs
 * it waits for and signals, with the other rank's message of each.  The
 * part is a schedule of the IR over the same ranks whose steps are the
 * phases it uses (tc_schedule_step_phase gives each step's phase in the
 * whole, tc_schedule_num_phases the whole's phase count); the executor runs
 * it as it runs the whole.  Algorithms with a per-rank form
 * (tc_algorithm_plans_per_rank): faraj-yuan, in the generator's phase
 * order (the grouped order moves messages over the whole schedule).
 *
 * Syncs (depth 1): x and y, consecutive users of a directed network link
 * with different senders, are synced when that link is the highest of the
 * links the two messages share (nearest the root; up before down, then by
 * link index); a lower shared link follows from the chain of syncs on the
 * highest one, which orders every consecutive pair on it by induction from
 * the top.  Both senders decide each sync from x and y alone, so the parts
 * agree without communication.  Depth d > 1 keeps every candidate.  Cost for
 * one rank: O(p (log k + h) g h), g the longest run of phases a link used by
 * the rank's messages stays idle (about the largest subtree's size on
 * balanced trees).  tc_schedule_from_parts joins every rank's part into the
 * whole, checking that they agree, for the verifiers.
 */
int tc_algorithm_plans_per_rank(int index);
/* Above this many ranks the PMPI library plans per rank (TOPOCOLL_PLAN=auto)
 * and the model estimates a per-rank algorithm's features without its whole
 * schedule: the whole schedule's grouped phase order, measured faster on the
 * emulated cluster, is applied up to about this size only. */
#define TC_PLAN_WHOLE_MAX_RANKS 256
tc_status tc_alltoall_plan_rank(const char *algorithm, const tc_topology *topo, const tc_plan_options *options,
                                int rank, tc_schedule **part);
int tc_schedule_part_rank(const tc_schedule *s);          /* -1: a whole schedule */
int64_t tc_schedule_num_phases(const tc_schedule *s);
int64_t tc_schedule_step_phase(const tc_schedule *s, int step);
/* The whole schedule from all ranks' parts (parts[r] is rank r's): each
 * message as its sender has it, each sync as both its ranks have it; fails
 * (TC_ERR_VERIFY) naming the first disagreement. */
tc_status tc_schedule_from_parts(const tc_schedule *const *parts, int n, tc_schedule **whole);

/* ---- unequal blocks (MPI_Alltoallv): the traffic matrix and its bounds ---- */
/*
 * D[i][j] is the bytes rank i sends rank j.  The file: one line a sending
 * rank, its blocks' bytes (whole numbers, no units) in receiver order,
 * separated by spaces, tabs or commas; '#' starts a comment; the matrix is
 * square.  Patterns (the benchmark's, all blocks off the diagonal, totalling
 * mean x p (p-1) bytes exactly, the same for every seed on every machine):
 *   uniform     every block the mean;
 *   zipf:S      the pairs in a random order, the k-th block ~ k^-S (S in (0, 10]);
 *   hot:K       K receivers spread over the ranks (rank h p / K) take half
 *               of all bytes (1 <= K < p);
 *   sparse:F    each block present with probability F (0 < F <= 1), present
 *               blocks equal;
 *   random      blocks uniform in [0, 2 mean).
 * Bounds: link-load, max over directed links of the bytes crossing it over
 * its rate; single-port, max over ranks of its sent or received bytes over
 * its own (first network) link's rate.  Cost O(p^2 h).
 */
#define TC_MAX_TRAFFIC_BYTES (1LL << 50)   /* bytes of a traffic matrix, all blocks together */
typedef struct tc_traffic tc_traffic;
tc_status tc_traffic_read(const char *text, size_t len, const char *filename, tc_traffic **out);
tc_status tc_traffic_load(const char *path, tc_traffic **out);
tc_status tc_traffic_write(const tc_traffic *d, FILE *out);
tc_status tc_traffic_from(int ranks, const int64_t *bytes, tc_traffic **out);
tc_status tc_traffic_pattern(const char *spec, int ranks, int64_t mean_block, uint64_t seed, tc_traffic **out);
void tc_traffic_destroy(tc_traffic *d);
int tc_traffic_ranks(const tc_traffic *d);
const int64_t *tc_traffic_bytes(const tc_traffic *d);   /* ranks x ranks, row major */
typedef struct tc_traffic_bound {
    int64_t total_bytes;
    double link_seconds;     /* the link-load bound                                  */
    int link, link_up;       /* its link (index) and direction (1: child to parent)  */
    int64_t link_bytes;
    double port_seconds;     /* the single-port bound                                */
    int port_rank, port_sends;   /* its rank; 1: what it sends, 0: what it receives  */
    int64_t port_bytes;
} tc_traffic_bound;
tc_status tc_traffic_bounds(const tc_traffic *d, const tc_topology *topo, double default_rate, tc_traffic_bound *out);
/* 1 (and *block) when every block off the diagonal has the same bytes, > 0. */
int tc_traffic_uniform(const tc_traffic *d, int64_t *block);

/* ---- recorded starts ---------------------------------------------------
 * When each rank began each timed call (`topocoll bench --backend testbed
 * --record-starts`; the packet simulator's --starts replays them): a line
 * a call, "ALGORITHM BLOCK REPETITION" then one offset in seconds, in [0,
 * TC_MAX_START_OFFSET], a machine; '#' comments and blank lines skipped.
 * Every line is checked; *offsets gets the lines of `algorithm` at `block`
 * bytes in file order (*calls x machines, row major; free() it).  No such
 * line: TC_ERR_ARG naming the algorithm and size. */
#define TC_MAX_STARTS_LINES 100000
#define TC_MAX_STARTS_LINE 65535     /* bytes of a line */
#define TC_MAX_START_OFFSET 10.0     /* seconds */
tc_status tc_starts_read(const char *text, size_t len, const char *filename, const char *algorithm, int64_t block,
                         int machines, double **offsets, int *calls);
tc_status tc_starts_load(const char *path, const char *algorithm, int64_t block, int machines, double **offsets,
                         int *calls);

/* The unequal-block planner (alltoallv_plan.c says how and what it costs):
 * D into a direct schedule named "planned" whose steps are contention-free
 * (a directed link carries at most one piece a step), blocks cut into pieces
 * of at most piece_bytes (the IR's part/parts of each block's own bytes).
 * A uniform D is planned as faraj-yuan's phases.  With execute, the syncs
 * that keep a link's pieces apart are attached (sync_depth). */
typedef struct tc_model_network tc_model_network;
/* Up to this many non-empty blocks the planner tries six piece sizes. */
#define TC_ALLTOALLV_SEARCH_BLOCKS 4096
typedef struct tc_alltoallv_options {
    long long piece_bytes;          /* 0: the model's fastest of a few sizes */
    int sync_depth;                 /* as tc_plan_options; 0: 1 */
    int phase_order;                /* a uniform D's faraj-yuan phase order */
    const tc_model_network *net;    /* the prediction's network; NULL: the defaults */
} tc_alltoallv_options;
typedef struct tc_alltoallv_info {
    int uniform;                    /* planned as faraj-yuan's phases */
    long long piece_bytes;          /* the piece size planned with (0: whole blocks) */
    int candidates;                 /* piece sizes tried */
    double predicted_seconds;       /* tc_model_traffic_time of the plan */
} tc_alltoallv_info;
tc_status tc_alltoallv_plan(const tc_topology *topo, const tc_traffic *d, const tc_alltoallv_options *options,
                            int execute, tc_schedule **sched, tc_alltoallv_info *info);
/* The verifier for unequal blocks (verify_traffic.c): every byte of D
 * delivered exactly once, steps against link use, the prediction (with net;
 * NULL: none) against the link-load bound. */
typedef struct tc_traffic_report {
    int complete;                   /* every non-empty block as pieces 0..c-1 of one c, each once, none empty */
    int contention_free;            /* no directed link carries two pieces in a step */
    int num_steps, max_parts;
    int64_t pieces;                 /* messages */
    int64_t empty_messages;         /* zero-byte messages of empty blocks */
    int64_t piece_load;             /* most messages one directed link carries: no
                                       contention-free schedule of them has fewer steps */
    int64_t contended_steps;
    double predicted_seconds, bound_seconds;
    char problem[512];              /* the first problem, "" if none */
} tc_traffic_report;
tc_status tc_traffic_verify(const tc_schedule *s, const tc_topology *topo, const tc_traffic *d,
                            const tc_model_network *net, tc_traffic_report *report);

/* ---- multilevel collective trees (Karonis et al., MPICH-G2) -------------- */
/*
 * Processes are placed in a hierarchy by group vectors: groups[r * levels + l]
 * is rank r's group at level l, level 0 the top (e.g. site, local network,
 * machine).  Ids only need to be equal for ranks in one group; groups at a
 * level are taken within the groups above (a prefix).  Every rank computes the
 * same tree from the vectors and the root, without communication.
 *
 *  "binomial"   MPICH's topology-unaware binomial tree over all ranks;
 *  "two-level"  MagPIe style: clusters = the groups at level cluster_level,
 *               one message to each cluster, binomial trees inside;
 *  "multilevel" one message into each group at every level, then the same
 *               inside it, down to the ranks of one machine.
 * Shapes per level (shapes[l] for l < levels, shapes[levels] among the ranks
 * of one bottom group; NULL: flat at level 0, binomial below, as the paper).
 * A rank's children are listed in send order: the slowest level first.
 */
typedef enum tc_tree_shape { TC_SHAPE_DEFAULT = 0, TC_SHAPE_FLAT = 1, TC_SHAPE_BINOMIAL = 2 } tc_tree_shape;
typedef struct tc_tree {
    int n, levels;
    int *parent;       /* n: -1 at the root                                     */
    int *child_begin;  /* n + 1: children of r are child[child_begin[r] ..]      */
    int *child;        /* n - 1                                                  */
    int *edge_level;   /* n: level the message parent[r] -> r crosses (the top-
                          most level at which their groups differ; `levels`
                          when both are in one bottom group); -1 at the root   */
    int *order;        /* n: ranks in depth-first pre-order (children in send
                          order): the subtree of r is order[pos[r] ..
                          pos[r] + size[r])                                     */
    int *pos, *size;   /* n each                                                 */
} tc_tree;
/* Build; release with tc_tree_destroy.  An unknown algorithm fails with
 * TC_ERR_ARG listing the valid ones (tc_tree_algorithm_name). */
tc_status tc_tree_build(const char *algorithm, int n, int levels, const int *groups, int root,
                        const tc_tree_shape *shapes, int cluster_level, tc_tree **tree);
void tc_tree_destroy(tc_tree *tree);
/* The shape for a broadcast among k groups joined by links of the given
 * latency (s) and bandwidth (bit/s), for messages of `bytes` (Bar-Noy and
 * Kipnis' argument, as the paper cites it): flat costs latency + (k-1)
 * bytes/bandwidth (the sender's link sends k-1 copies), binomial
 * ceil(log2 k) (latency + bytes/bandwidth); the cheaper, TC_SHAPE_DEFAULT
 * when k <= 2 (both are one message). */
tc_tree_shape tc_tree_choose_shape(int k, double latency, double bandwidth, double bytes);
/* Latency (sum) and bandwidth (the narrowest) of the path between machines
 * a and b, with the defaults where the topology gives none. */
void tc_topology_path_cost(const tc_topology *topo, int a, int b, double default_bandwidth,
                           double default_latency, double *latency, double *bandwidth);
int tc_tree_algorithm_count(void);
const char *tc_tree_algorithm_name(int index);
/* The count as a constant, for callers' tables (coll_tree.c checks it). */
enum { TC_NUM_TREE_ALGORITHMS = 3 };
/* Group vectors from names "site/lan/machine" (one string per rank, levels
 * separated by sep): *levels = the most components any rank has (shorter
 * vectors repeat their last name, so such a rank is a group of its own
 * below); groups holds n * levels ints, caller frees.  An empty name fails. */
/* The level names of machine `rank` in a topology: the switches below the
 * top switch down to it, then the machine, separated by '/' ("site/machine");
 * a machine on the top switch has one level.  Returns the number of levels,
 * -1 when buf (len bytes) is too small. */
int tc_topology_levels(const tc_topology *topo, int rank, char *buf, size_t len);
/* The level at which ranks a and b part: the first level where their group
 * ids differ, `levels` when they share every group (one bottom group). */
int tc_groups_split_level(const int *groups, int levels, int a, int b);
tc_status tc_groups_from_names(const char *const *names, int n, char sep, int *levels, int **groups);

/* ---- performance model and tuning (model.c, tuning.c) ------------------- */
/*
 * The contention-signature model of Steffenel, Martinasso & Trystram (eqs.
 * 4-5) for every algorithm of the registry and for the MPI's own (TC_NATIVE):
 * T(m) = startup + gamma byte_time m + [m >= threshold] delta messages
 * (model.c says how the features are read from a schedule).
 */
#define TC_NATIVE (-1)                 /* the MPI's own MPI_Alltoall, in model and tuning calls */
#define TC_MODEL_MAX_CLASSES (2 * TC_MAX_LEVELS + 2)   /* path classes: network links crossed */
#define TC_MAX_SEGMENTS 256            /* pieces a block is cut into at most */
/* Without measurements: a message's start-up is this overhead (its whole
 * start-up through one switch: the emulated cluster's ping-pong, 49-71 us)
 * plus the latencies the topology gives its path's links ... */
#define TC_DEFAULT_MODEL_OVERHEAD 60e-6
/* ... and the contention signatures the emulated cluster's fit found: the
 * MPI's own all-to-all on the bottleneck link, and a contention-free one. */
#define TC_DEFAULT_NATIVE_GAMMA 1.25
#define TC_DEFAULT_SCHEDULE_GAMMA 1.0
struct tc_model_network {
    const double *alpha;     /* alpha[k]: start-up (s) of a message over k network links; */
    int num_classes;         /* classes past the table or with alpha <= 0: overhead + latencies */
    double overhead;         /* s */
    double default_rate;     /* bit/s of links the topology gives none */
    double default_latency;  /* s, likewise */
};
typedef struct tc_model_signature { double gamma, delta, threshold; } tc_model_signature;
typedef struct tc_model_features {
    double startup;          /* s on the critical path */
    double byte_time;        /* s a byte of a block costs on the busiest links */
    double messages;         /* messages on the critical path (each pays delta) */
    int steps;
} tc_model_features;
void tc_model_default_network(tc_model_network *net, double default_rate, double default_latency);
void tc_model_default_signature(int algorithm, tc_model_signature *sig);
/* The features of an algorithm (a registry index or TC_NATIVE) planned with
 * options on the topology, of a schedule, or of the MPI's own all-to-all. */
tc_status tc_model_features_of(int algorithm, const tc_topology *topo, const tc_plan_options *options,
                               const tc_model_network *net, tc_model_features *out);
tc_status tc_model_schedule_features(const tc_schedule *s, const tc_topology *topo, const tc_model_network *net,
                                     tc_model_features *out);
tc_status tc_model_native_features(const tc_topology *topo, const tc_model_network *net, tc_model_features *out);
/* The class of the path between machines a and b: network links crossed. */
int tc_model_path_class(const tc_topology *topo, int a, int b);
/* The time a direct schedule takes over unequal blocks D as the executor
 * runs it (model.c says how): each message its path's alpha plus its bytes
 * over the path's narrowest rate, after its sender's earlier steps and the
 * last user of each of its links. */
tc_status tc_model_traffic_time(const tc_schedule *s, const tc_topology *topo, const tc_traffic *d,
                                const tc_model_network *net, double *seconds);
double tc_model_time(const tc_model_features *f, const tc_model_signature *sig, double block_bytes);
/* Untuned auto: out[0] the MPI's own features, out[1] faraj-yuan's (planned
 * with opt's sync depth and phase order), with the default network at
 * default_rate (bit/s, links the topology gives none); then the choice for a
 * block size: faraj-yuan's registry index where the model predicts it faster
 * than the MPI's own, else TC_NATIVE; seconds (if not NULL) gets both
 * predictions. */
tc_status tc_model_auto_features(const tc_topology *topo, double default_rate, const tc_plan_options *opt,
                                 tc_model_features out[2]);
int tc_model_auto_choice(const tc_model_features f[2], double block_bytes, double seconds[2]);
/* Segments of a block for the segmented algorithms, as the PMPI library cuts
 * them: ceil(block / segment_size), at most TC_MAX_SEGMENTS and within the
 * planner's message limit for this many machines. */
int tc_plan_segments(long long block_bytes, long long segment_size, int machines);

/*
 * A tuning file (docs/interfaces.md, "Tuning file"): which algorithm runs
 * for a communicator of `ranks` ranks and blocks in [min_block, max_block].
 * The reader refuses rules that overlap or leave a block size uncovered.
 */
typedef struct tc_tuning tc_tuning;
typedef struct tc_tuning_rule {
    int ranks;
    long long min_block, max_block;   /* max_block -1: no upper end */
    int algorithm;                    /* registry index or TC_NATIVE */
    long long segment_size;           /* 0: the default */
    int fanout;                       /* 0: the default */
    int line;                         /* in the file */
} tc_tuning_rule;
tc_status tc_tuning_read(const char *text, size_t len, const char *filename, tc_tuning **out);
tc_status tc_tuning_load(const char *path, tc_tuning **out);
void tc_tuning_destroy(tc_tuning *t);
const char *tc_tuning_file(const tc_tuning *t);
const char *tc_tuning_topology(const tc_tuning *t);
int tc_tuning_num_machines(const tc_tuning *t);
const char *tc_tuning_machine(const tc_tuning *t, int i);
int tc_tuning_num_rules(const tc_tuning *t);
const tc_tuning_rule *tc_tuning_rule_at(const tc_tuning *t, int i);
/* The rule for a call; TC_ERR_ARG (naming the file and the process counts
 * it was tuned for) when the file has none for this many ranks. */
tc_status tc_tuning_select(const tc_tuning *t, int ranks, long long block_bytes, const tc_tuning_rule **rule);
/* TC_ERR_ARG unless the topology's machines are the file's (same names, any
 * order): a file tuned on another topology is refused. */
tc_status tc_tuning_check_topology(const tc_tuning *t, const tc_topology *topo);

#ifdef __cplusplus
}
#endif
#endif
