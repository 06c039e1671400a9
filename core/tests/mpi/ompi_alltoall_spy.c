/*
 * Test helper (LD_PRELOAD with Open MPI): says which of Open MPI's own
 * alltoall algorithms ran.  Open MPI's coll/tuned component (its own shared
 * object) calls them in libmpi through the PLT, so a definition here comes
 * first; each prints "spy: NAME" once a process and calls the real one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

typedef int (*alg_fn)(const void *, int, void *, void *, int, void *, void *, void *, int);

static int forward(const char *name, int *said, const void *sb, int sc, void *st, void *rb, int rc, void *rt,
                   void *comm, void *module, int extra)
{
    alg_fn real = (alg_fn)dlsym(RTLD_NEXT, name);
    if (!*said) {
        fprintf(stderr, "spy: %s\n", name);
        *said = 1;
    }
    return real(sb, sc, st, rb, rc, rt, comm, module, extra);
}

#define SPY(name)                                                                                          \
    int name(const void *sb, int sc, void *st, void *rb, int rc, void *rt, void *comm, void *module, int x) \
    {                                                                                                      \
        static int said;                                                                                   \
        return forward(#name, &said, sb, sc, st, rb, rc, rt, comm, module, x);                             \
    }

SPY(ompi_coll_base_alltoall_intra_basic_linear)
SPY(ompi_coll_base_alltoall_intra_pairwise)
SPY(ompi_coll_base_alltoall_intra_bruck)
SPY(ompi_coll_base_alltoall_intra_linear_sync)
SPY(ompi_coll_base_alltoall_intra_two_procs)
