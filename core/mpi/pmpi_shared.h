/* What the PMPI library's files share: the configuration read once from the
 * environment (pmpi_config.c, one table of variables), the rank-to-machine
 * mapping (pmpi_ranks.c), and the finalizers the entry points call
 * (pmpi.c: MPI_Init, MPI_Finalize; pmpi_alltoall.c; pmpi_coll.c). */
#ifndef TC_PMPI_SHARED_H
#define TC_PMPI_SHARED_H

#include <mpi.h>
#include <stddef.h>

#include "topocoll/topocoll.h"

#define PMPI_NAME_LEN 256     /* a machine name as the ranks exchange it */
#define PMPI_MAX_LEVELS 16    /* levels of the collectives' trees (tc_coll.h checks it) */

/* The rooted collectives, in the order of their variables. */
enum { PMPI_BCAST, PMPI_REDUCE, PMPI_ALLREDUCE, PMPI_BARRIER, PMPI_GATHER, PMPI_SCATTER, PMPI_COLL_OPS };
extern const char *const pmpi_coll_op_name[PMPI_COLL_OPS];   /* "bcast", ... */
#define PMPI_NATIVE_TREE TC_NUM_TREE_ALGORITHMS               /* coll_alg: the MPI's own */

/* TOPOCOLL_PLAN: a rank plans the whole schedule or only its part
 * (tc_alltoall_plan_rank); auto: its part above TC_PLAN_WHOLE_MAX_RANKS. */
enum { PMPI_PLAN_AUTO = 0, PMPI_PLAN_WHOLE = 1, PMPI_PLAN_RANK = 2 };
#define PMPI_PLAN_WORDS {"auto", "whole", "rank", NULL}

/* MPI_Alltoallv (pmpi_alltoallv.c): auto plans a matrix whose mean
 * non-empty block has at least this many bytes (TOPOCOLL_ALLTOALLV_MIN_BYTES;
 * below it the MPI's own runs: docs/mpi.md says why), and plans at all up to
 * this many ranks (every rank keeps the p x p counts). */
#define PMPI_ALLTOALLV_MIN_BYTES 16384
#define PMPI_ALLTOALLV_MAX_RANKS 4096

/* Read-only after pmpi_config_load().  A bad value stopped the job there,
 * naming the variable. */
typedef struct pmpi_config {
    int enabled;                  /* TOPOCOLL_TOPOLOGY set: the all-to-all is topocoll's */
    tc_topology *topo;            /* TOPOCOLL_TOPOLOGY */
    char algorithm[64];           /* TOPOCOLL_ALLTOALL: a registry name, "native" or "auto" */
    char alltoallv[64];           /* TOPOCOLL_ALLTOALLV: "auto", "planned", "native" or a registry name */
    long long v_min_bytes;        /* TOPOCOLL_ALLTOALLV_MIN_BYTES: auto plans from this mean block on */
    long long v_piece_size;       /* TOPOCOLL_ALLTOALLV_PIECE_SIZE: 0, the planner's choice */
    long long min_bytes;          /* TOPOCOLL_ALLTOALL_MIN_BYTES */
    long long segment_size;       /* the segments parameter's variable */
    int fanout;                   /* the fan-out parameter's variable */
    char *clusters;               /* the clusters parameter's variable: NUL-separated, one a world rank */
    char *rank_map;               /* TOPOCOLL_RANK_MAP: NUL-separated names, one a world rank */
    int sync_depth;               /* TOPOCOLL_SYNC_DEPTH */
    int phase_order;              /* TOPOCOLL_PHASE_ORDER: TC_PHASE_ORDER_* */
    int plan;                     /* TOPOCOLL_PLAN: PMPI_PLAN_* */
    int pace;                     /* TOPOCOLL_PACE: 0 off, 1 auto, 2 on */
    double bandwidth;             /* TOPOCOLL_BANDWIDTH, bit/s (0: unknown) */
    double pace_lead, nap;        /* TOPOCOLL_PACE_LEAD, TOPOCOLL_NAP, seconds */
    int pace_lead_given;          /* TOPOCOLL_PACE_LEAD set: no default of our own, no cap */
    int pace_lead_share;          /* TOPOCOLL_PACE_LEAD_SHARE, percent (tcx_pacing's lead_share) */
    long long piece_size;         /* TOPOCOLL_PIECE_SIZE */
    int verbose, stats, check;    /* TOPOCOLL_VERBOSE, _STATS, _CHECK = 1 */
    const char *trace;            /* TOPOCOLL_TRACE: a path prefix, or NULL */
    const char *groups;           /* TOPOCOLL_GROUPS, or NULL */
    const char *tuning_file;      /* TOPOCOLL_TUNING, or NULL */
    tc_tuning *tuning;            /* its rules (auto reads them) */
    int coll_alg[PMPI_COLL_OPS];  /* TOPOCOLL_<OP>: tree index, -1 auto, PMPI_NATIVE_TREE */
    int auto_tree;                /* what auto means for them: multilevel */
    tc_tree_shape shapes[PMPI_MAX_LEVELS];   /* TOPOCOLL_TREE_SHAPES, top level first */
    int nshapes;
    int two_level_at;             /* TOPOCOLL_TWO_LEVEL_AT; -1: the last level */
} pmpi_config;

extern pmpi_config pmpi_cfg;
void pmpi_config_load(void);      /* once; every entry point calls it */
void pmpi_config_free(void);

int pmpi_world_rank(void);
/* Print "topocoll: error: " fmt (with a, b) on world rank 0 and abort the job. */
void pmpi_fatal(const char *fmt, const char *a, const char *b);

/* This process's machine: TOPOCOLL_RANK_MAP, else its processor name. */
void pmpi_my_machine(char *name);
/* The machine rank of a name in the topology (exact, else up to the first
 * dot; -1: not there or no topology). */
int pmpi_machine_rank(const char *name);
/* Collective over comm: the machine rank of each of its ranks, and each
 * one's world rank (both malloc'd, the caller frees them); returns 1 when
 * some machine holds several of them, 0 when none does, -1 (why filled)
 * when some rank's machine is not in the topology. */
int pmpi_comm_machines(MPI_Comm comm, int **ranks, int **world, char *why, size_t len);
/* The clusters parameter of a communicator's ranks (world[r] the world rank
 * of rank r), numbered by first appearance; malloc'd. */
int *pmpi_comm_clusters(int size, const int *world);
/* The communicator's ranks as the machines of a tree (rank r on machine
 * mach[r]): restricted, machines with several ranks expanded.  NULL, with
 * why filled, when it cannot be. */
tc_topology *pmpi_ranks_topology(const int *mach, int size, char *why, size_t len);
/* What keyval caches on comm (NULL: nothing yet), the keyval made on first
 * use with destroy as its delete function; the caller sets the attribute. */
void *pmpi_cached(MPI_Comm comm, int *keyval, MPI_Comm_delete_attr_function *destroy);
/* Delete what keyval caches on MPI_COMM_WORLD and MPI_COMM_SELF. */
void pmpi_delete_cached(int keyval);

/* Pacing rates from rank me of a communicator to each rank (the path's
 * narrowest link, TOPOCOLL_BANDWIDTH where the topology gives none, times
 * TCP's goodput); NULL when no rate is known.  Malloc'd. */
double *pmpi_pace_rates(const tc_topology *t, int size, int me);
void pmpi_nap(double seconds);
/* The executor's run options from the configuration: pacing at rate_to
 * (NULL: off), its lead and pieces, napping (tcx_state in tc_exec.h). */
struct tcx_state;
void pmpi_state_options(struct tcx_state *st, const double *rate_to);
/* The executor's tables of a schedule of the IR (tcx_schedule in tc_exec.h). */
struct tcx_schedule;
void pmpi_tables(const tc_schedule *s, struct tcx_schedule *out);
/* The tree a schedule of `algorithm` is planned on for a communicator of
 * size ranks: its machines (topo), or, for topology-oblivious algorithms
 * (the plan depends on the size only), size ranks on one switch, made once
 * into *synthetic; NULL when the algorithm needs the machines and topo is. */
const tc_topology *pmpi_tree_for(tc_topology *topo, tc_topology **synthetic, int size, int algorithm);

/* Called by MPI_Finalize before the MPI goes (collective over MPI_COMM_WORLD):
 * the stats, the trace, the caches. */
void pmpi_alltoall_finalize(void);
void pmpi_alltoallv_finalize(void);
void pmpi_coll_finalize(void);

#endif
