"""Real-MPI data-integrity tests: every algorithm of the registry and the
MPI's own, under Open MPI and MPICH, on communicators of 1 to 9 ranks,
counts 0, 1, 1000 and 65536, contiguous and derived datatypes, in place,
and duplicated and split communicators; every element of every block is
checked by core/tests/mpi/alltoall_check.c, and TOPOCOLL_STATS shows which
algorithm really ran."""

import re

import pytest

from .conftest import ALGORITHMS
from .mpi_util import MPIS, available, pmpi_lib, program, run

TOPOLOGY = "chain:3,3,3"          # 9 machines n0..n8 on three switches


def env_for(algorithm: str, np: int, **extra) -> dict:
    env = {
        "LD_PRELOAD": "",
        "TOPOCOLL_TOPOLOGY": TOPOLOGY,
        "TOPOCOLL_RANK_MAP": ",".join(f"n{i}" for i in range(np)),
        "TOPOCOLL_ALLTOALL": algorithm,
        "TOPOCOLL_STATS": "1",
    }
    env.update(extra)
    return env


def calls_and_stats(proc):
    m = re.search(r"alltoall_check: calls=(\d+) errors=(\d+)", proc.stdout)
    assert m, proc.stdout + proc.stderr
    stats = dict(re.findall(r"topocoll: alltoall (\S+) calls=(\d+)", proc.stderr))
    return int(m.group(1)), int(m.group(2)), {k: int(v) for k, v in stats.items()}


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("algorithm", ALGORITHMS + ["native"])
@pytest.mark.parametrize("np", range(1, 10))
def test_every_byte(mpi, algorithm, np):
    if not available(mpi):
        pytest.fail(f"{mpi} is not installed (make deps installs it)")
    env = env_for(algorithm, np, LD_PRELOAD=str(pmpi_lib(mpi)))
    if mpi == "mpich" and algorithm == "native":
        # MPICH 4.0.2's own in-place MPI_Alltoall truncates a resized struct
        # type at count 1000 ("Message truncated" in its pairwise
        # sendrecv_replace), with or without topocoll: not ours to test
        env["ALLTOALL_CHECK_SKIP_INPLACE_STRUCT_ABOVE"] = "300"
    proc = run(mpi, np, [program("alltoall_check", mpi)], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0
    assert stats == {algorithm: calls}, proc.stderr[-2000:]


@pytest.mark.parametrize("mpi", MPIS)
def test_shared_machine_falls_back_and_says_so(mpi):
    env = env_for("faraj-yuan", 4, LD_PRELOAD=str(pmpi_lib(mpi)), TOPOCOLL_VERBOSE="1",
                  TOPOCOLL_RANK_MAP="n0,n1,n1,n2")
    if mpi == "mpich":
        env["ALLTOALL_CHECK_SKIP_INPLACE_STRUCT_ABOVE"] = "300"   # MPICH's own bug, see test_every_byte
    proc = run(mpi, 4, [program("alltoall_check", mpi), "1", "1000"], env)
    assert proc.returncode == 0, proc.stderr
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0
    assert "share machine 'n1'" in proc.stderr and "native" in proc.stderr
    # the world and its dup share n1; the parity halves map one rank per machine
    assert stats.get("native", 0) > 0 and stats.get("faraj-yuan", 0) > 0
    assert sum(stats.values()) == calls


def test_min_bytes_sends_small_blocks_native():
    env = env_for("faraj-yuan", 4, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_VERBOSE="1",
                  TOPOCOLL_ALLTOALL_MIN_BYTES="4000")
    proc = run("openmpi", 4, [program("alltoall_check", "openmpi"), "1", "1000"], env)
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0 and proc.returncode == 0
    # count 1 blocks (4 to 16 bytes) go native, count 1000 ones (4000+) topocoll
    assert stats["native"] > 0 and stats["faraj-yuan"] > 0
    assert "TOPOCOLL_ALLTOALL_MIN_BYTES=4000" in proc.stderr


def test_unknown_algorithm_stops_with_the_list():
    env = env_for("fastest", 2, LD_PRELOAD=str(pmpi_lib("openmpi")))
    proc = run("openmpi", 2, [program("alltoall_check", "openmpi"), "1"], env)
    assert proc.returncode != 0
    assert "TOPOCOLL_ALLTOALL=fastest is not an algorithm; valid: faraj-yuan" in proc.stderr


def test_bad_topology_stops_with_the_place(tmp_path):
    bad = tmp_path / "bad.conf"
    bad.write_text("SwitchName=s0 Nodes=n[0-3]\nSwitchName=s1 Nodes=n3\n")
    env = env_for("auto", 2, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_TOPOLOGY=str(bad))
    proc = run("openmpi", 2, [program("alltoall_check", "openmpi"), "1"], env)
    assert proc.returncode != 0
    assert "bad.conf:2" in proc.stderr and "not a leaf" in proc.stderr


def test_without_topology_every_call_goes_to_the_mpi():
    env = env_for("faraj-yuan", 3, LD_PRELOAD=str(pmpi_lib("openmpi")))
    del env["TOPOCOLL_TOPOLOGY"]
    env["TOPOCOLL_TOPOLOGY"] = ""
    proc = run("openmpi", 3, [program("alltoall_check", "openmpi"), "1"], env)
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0 and stats == {"native": calls}


def test_processor_names_map_ranks(tmp_path):
    """Without TOPOCOLL_RANK_MAP ranks map by processor name: every rank of
    this machine has the same name, so a topology naming it maps them all to
    one machine and faraj-yuan falls back."""
    import socket
    host = socket.gethostname().split(".")[0]
    topo = tmp_path / "here.conf"
    topo.write_text(f"SwitchName=s0 Nodes={host},other\n")
    env = env_for("faraj-yuan", 2, LD_PRELOAD=str(pmpi_lib("openmpi")), TOPOCOLL_TOPOLOGY=str(topo),
                  TOPOCOLL_VERBOSE="1")
    del env["TOPOCOLL_RANK_MAP"]
    proc = run("openmpi", 2, [program("alltoall_check", "openmpi"), "1"], env)
    calls, errors, stats = calls_and_stats(proc)
    assert errors == 0
    assert f"share machine '{host}" in proc.stderr
    # one rank alone (the parity split) is one rank on one machine
    assert stats.get("faraj-yuan", 0) > 0 and stats.get("native", 0) > 0


def test_mpi4py_program():
    """Debian's mpi4py (built for Open MPI, on the system Python) runs through
    the preloaded library unchanged."""
    import shutil
    from pathlib import Path
    python = "/usr/bin/python3"
    probe = run("openmpi", 1, [python, "-c", "import mpi4py"], {})
    if probe.returncode != 0 or not shutil.which(python):
        pytest.fail("Debian's python3-mpi4py is missing (make deps installs it)")
    script = Path(__file__).parent / "programs" / "mpi4py_alltoall.py"
    env = env_for("faraj-yuan", 6, LD_PRELOAD=str(pmpi_lib("openmpi")))
    proc = run("openmpi", 6, [python, script], env)
    assert proc.returncode == 0, proc.stderr
    assert "mpi4py alltoall: errors=0" in proc.stdout
    # three calls on the world, one on each half (counted at its rank 0)
    assert "topocoll: alltoall faraj-yuan calls=5" in proc.stderr
