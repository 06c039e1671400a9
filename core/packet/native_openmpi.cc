/* Open MPI 4.1's MPI_Alltoall for the packet simulator (native_openmpi.h). */
#include "native_openmpi.h"

#include <cstring>
#include <vector>

#include "mpi.h"

int native_openmpi_choice(int p, long long block, const char **name)
{
    /* ompi/mca/coll/tuned/coll_tuned_decision_fixed.c (v4.1.x),
     * ompi_coll_tuned_alltoall_intra_dec_fixed: by communicator size, the
     * first block size (bytes) each algorithm holds below.  */
    struct rule { int below_size; std::vector<std::pair<long long, int>> by_bytes; int otherwise; };
    static const rule rules[] = {
        {3, {{2, 2}, {4, 5}, {16, 2}, {64, 5}, {256, 2}, {4096, 5}, {32768, 2}, {262144, 4}, {1048576, 5}}, 2},
        {8, {{8192, 4}, {16384, 1}, {65536, 4}, {524288, 1}, {1048576, 2}}, 1},
        {16, {{262144, 4}}, 1},
        {32, {{4, 4}, {512, 3}, {8192, 4}, {32768, 1}, {262144, 4}, {524288, 1}}, 4},
        {64, {{512, 3}, {524288, 1}}, 4},
        {128, {{1024, 3}, {2048, 1}, {4096, 4}, {262144, 1}}, 2},
        {256, {{1024, 3}, {2048, 4}, {262144, 1}}, 2},
        {512, {{1024, 3}, {8192, 4}, {32768, 1}}, 2},
        {1024, {{512, 3}, {8192, 4}, {16384, 1}, {131072, 4}, {262144, 1}}, 2},
        {2048, {{512, 3}, {1024, 4}, {2048, 1}, {16384, 4}, {262144, 1}}, 4},
        {4096, {{1024, 3}, {4096, 4}, {8192, 1}, {131072, 4}}, 1},
        {1 << 30, {{2048, 3}, {8192, 4}, {16384, 1}, {32768, 4}, {65536, 1}}, 4},
    };
    int alg = 2;
    for (const rule &r : rules)
        if (p < r.below_size) {
            alg = r.otherwise;
            for (auto &b : r.by_bytes)
                if (block < b.first) { alg = b.second; break; }
            break;
        }
    static const char *const names[] = {"", "linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"};
    *name = names[alg];
    return alg;
}

int native_openmpi_run(int alg, int me, int p, const char *sbuf, char *rbuf, long long block)
{
    const int n = (int)block;
    SIM_Sendrecv(sbuf + (size_t)me * block, n, MPI_BYTE, me, 0, rbuf + (size_t)me * block, n, MPI_BYTE, me, 0, 0,
                 MPI_STATUS_IGNORE);
    if (alg == OMPI_A2A_BRUCK) return -1;
    if (alg == OMPI_A2A_LINEAR || alg == OMPI_A2A_LINEAR_SYNC) {
        std::vector<MPI_Request> req(2 * (size_t)(p - 1));
        int k = 0;
        for (int i = (me + 1) % p; i != me; i = (i + 1) % p)
            SIM_Irecv(rbuf + (size_t)i * block, n, MPI_BYTE, i, 0, 0, &req[k++]);
        for (int i = (me + p - 1) % p; i != me; i = (i + p - 1) % p)
            SIM_Isend(sbuf + (size_t)i * block, n, MPI_BYTE, i, 0, 0, &req[k++]);
        SIM_Waitall(k, req.data(), MPI_STATUSES_IGNORE);
        return 0;
    }
    for (int step = 1; step < p; step++) {   /* pairwise, two_proc */
        int to = (me + step) % p, from = (me + p - step) % p;
        MPI_Request req[2];
        SIM_Irecv(rbuf + (size_t)from * block, n, MPI_BYTE, from, 0, 0, &req[0]);
        SIM_Isend(sbuf + (size_t)to * block, n, MPI_BYTE, to, 0, 0, &req[1]);
        SIM_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    return 0;
}

bool native_openmpi_allgather_pair(int a, int b, int p)
{
    const bool pow2 = (p & (p - 1)) == 0;
    const int d = pow2 ? a ^ b : ((b - a) % p + p) % p;
    for (int step = 1; step < p; step *= 2)
        if (d == step || (!pow2 && d == p - step)) return true;
    return false;
}
