/*
 * plan_bench: what planning costs one rank of the PMPI library, without
 * MPI: the time and the memory of planning rank R's part
 * (tc_alltoall_plan_rank), or of the whole schedule as the library plans it
 * for execution (grouped phases where they apply, syncs).
 *
 * Usage: plan_bench TOPOLOGY RANK [--whole] [--ranks-per-machine N] [--algorithm A]
 * TOPOLOGY: a file or a synthetic spec.  Prints one JSON line:
 * {"ranks", "seconds", "peak_bytes", "process_peak_bytes", "messages",
 * "syncs"}; peak_bytes is the growth of the process's peak resident memory
 * while planning (the topology, loaded before, is not counted),
 * process_peak_bytes the whole program's peak (topology, plan, C runtime).  benchmarks/rank_planning.py
 * runs it in fresh processes.
 */
#include "topocoll/topocoll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* The process's peak resident memory: VmHWM (its own, where rusage's
 * ru_maxrss carries the parent's peak across fork and exec). */
static long long peak_rss(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = atoll(line + 6);
    if (f) fclose(f);
    if (kb < 0) {
        struct rusage u;
        getrusage(RUSAGE_SELF, &u);
        kb = u.ru_maxrss;
    }
    return kb * 1024;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *algorithm = "faraj-yuan";
    int whole = 0, per = 1;
    if (argc < 3) {
        fprintf(stderr, "usage: plan_bench TOPOLOGY RANK [--whole] [--ranks-per-machine N] [--algorithm A]\n");
        return 2;
    }
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--whole")) whole = 1;
        else if (!strcmp(argv[i], "--ranks-per-machine") && i + 1 < argc) per = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--algorithm") && i + 1 < argc) algorithm = argv[++i];
        else { fprintf(stderr, "plan_bench: unknown argument '%s'\n", argv[i]); return 2; }
    }
    tc_topology *t = NULL, *x = NULL;
    if ((strchr(argv[1], ':') || strspn(argv[1], "0123456789") == strlen(argv[1])) ?
            tc_topology_synthetic(argv[1], &t) : tc_topology_load(argv[1], TC_FORMAT_AUTO, &t)) {
        fprintf(stderr, "plan_bench: %s\n", tc_error_message());
        return 2;
    }
    if (per > 1) {
        int n = tc_topology_num_machines(t), *counts = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++) counts[i] = per;
        if (!counts || tc_topology_expand(t, counts, &x)) { fprintf(stderr, "plan_bench: %s\n", tc_error_message()); return 2; }
        free(counts);
        tc_topology_destroy(t);
        t = x;
    }
    int rank = atoi(argv[2]);
    long long before = peak_rss();
    double t0 = now();
    tc_schedule *s = NULL;
    tc_plan_options opt = {1, 0, NULL, 1, TC_PHASE_ORDER_GROUPED, 0};
    tc_status rc = whole ? tc_alltoall_plan_with_options(algorithm, t, &opt, 1, &s)
                         : tc_alltoall_plan_rank(algorithm, t, &opt, rank, &s);
    double seconds = now() - t0;
    if (rc) { fprintf(stderr, "plan_bench: %s\n", tc_error_message()); return 1; }
    printf("{\"ranks\": %d, \"seconds\": %.6f, \"peak_bytes\": %lld, \"process_peak_bytes\": %lld, "
           "\"messages\": %lld, \"syncs\": %lld}\n", tc_topology_num_machines(t), seconds, peak_rss() - before,
           peak_rss(), (long long)tc_schedule_num_ops(s), (long long)tc_schedule_num_syncs(s));
    tc_schedule_destroy(s);
    tc_topology_destroy(t);
    return 0;
}
