/*
 * mpi.h for the packet simulator: the part of MPI the executor
 * (core/mpi/tc_exec*.c) uses, implemented by sim_mpi.cc over ns-3 TCP.
 * sim_exec.c compiles the executor's files against it with TCX(fn) =
 * SIM_fn, so a simulated rank runs the very code a real one does.
 * Datatypes are bytes only (the simulator hands the executor contiguous
 * byte buffers); a communicator is the world of simulated ranks.
 */
#ifndef TOPOCOLL_SIM_MPI_H
#define TOPOCOLL_SIM_MPI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef long MPI_Aint;
typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef struct sim_request *MPI_Request;
typedef struct { int MPI_SOURCE, MPI_TAG, MPI_ERROR; } MPI_Status;

#define MPI_SUCCESS 0
#define MPI_ERR_COMM 5
#define MPI_ERR_TRUNCATE 15
#define MPI_ERR_NO_MEM 34
#define MPI_ERR_OTHER 16
#define MPI_COMM_NULL (-1)
#define MPI_BYTE 1
#define MPI_PACKED 2
#define MPI_ANY_SOURCE (-2)
#define MPI_ANY_TAG (-1)
#define MPI_IN_PLACE ((void *)1)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)
#define MPI_REQUEST_NULL ((MPI_Request)0)

int SIM_Comm_dup(MPI_Comm comm, MPI_Comm *out);
int SIM_Comm_free(MPI_Comm *comm);
int SIM_Comm_rank(MPI_Comm comm, int *rank);
int SIM_Comm_size(MPI_Comm comm, int *size);
int SIM_Isend(const void *buf, int count, MPI_Datatype t, int dst, int tag, MPI_Comm comm, MPI_Request *req);
int SIM_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Request *req);
int SIM_Waitall(int n, MPI_Request *req, MPI_Status *st);
int SIM_Testall(int n, MPI_Request *req, int *flag, MPI_Status *st);
int SIM_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st);
int SIM_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dst, int stag, void *rbuf, int rcount,
                 MPI_Datatype rtype, int src, int rtag, MPI_Comm comm, MPI_Status *st);
double SIM_Wtime(void);
int SIM_Type_size(MPI_Datatype t, int *size);
int SIM_Type_get_extent(MPI_Datatype t, MPI_Aint *lb, MPI_Aint *extent);
int SIM_Type_get_true_extent(MPI_Datatype t, MPI_Aint *lb, MPI_Aint *extent);
int SIM_Pack(const void *in, int count, MPI_Datatype t, void *out, int size, int *pos, MPI_Comm comm);
int SIM_Unpack(const void *in, int size, int *pos, void *out, int count, MPI_Datatype t, MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif
