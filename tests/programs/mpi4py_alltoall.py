"""An mpi4py program calling MPI_Alltoall (uppercase: buffers) on the world and on
halves split in reverse rank order; prints the elements found wrong."""

from array import array
from mpi4py import MPI
comm = MPI.COMM_WORLD
p, me = comm.Get_size(), comm.Get_rank()
n = 5000
send = array("i", [me * 100000 + d * 1000 + i % 1000 for d in range(p) for i in range(n)])
recv = array("i", [0]) * (p * n)
for _ in range(3):
    comm.Alltoall([send, MPI.INT], [recv, MPI.INT])
bad = sum(recv[s * n + i] != s * 100000 + me * 1000 + i % 1000 for s in range(p) for i in range(n))
sub = comm.Split(me % 2, -me)
s2 = array("i", [me] * (sub.Get_size() * 10)); r2 = array("i", [0]) * (sub.Get_size() * 10)
sub.Alltoall([s2, MPI.INT], [r2, MPI.INT])
ranks = sub.allgather(me)
bad += sum(r2[q * 10] != ranks[q] for q in range(sub.Get_size()))
total = comm.reduce(bad, root=0)
if me == 0:
    print(f"mpi4py alltoall: errors={total}")
