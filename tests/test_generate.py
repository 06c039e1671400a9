"""The routine generator: golden output, -Wall -Wextra -Werror under both
MPIs, and the generated routine under the data-integrity program, for every
algorithm of the registry."""

import re
import subprocess
from pathlib import Path

import pytest

from topocoll import Topology, TopocollError
from topocoll.commands.generate import generate
from topocoll.cli import main

from .conftest import ALGORITHMS, EXAMPLES
from .mpi_util import MPIS, ROOT, run

GOLDEN = Path(__file__).parent / "golden" / "figure1_faraj_yuan.c"
MARK = "/* ---- the plan ---- */"
COMPILERS = {"openmpi": "mpicc.openmpi", "mpich": "mpicc.mpich"}


def test_golden_figure1():
    # the paper's phases (its Figure 1 example), not the default grouped ones
    text = generate(Topology.load(EXAMPLES / "figure1.yaml"), "faraj-yuan", "fig1_alltoall", phase_order="paper")
    # the executor is embedded verbatim; the plan and entry point match the golden file
    from topocoll.commands.generate import EXECUTOR_FILES
    for f in EXECUTOR_FILES:   # each of the executor's files, less its include of the header
        assert (ROOT / "core" / "mpi" / f).read_text().replace('#include "tc_exec.h"\n', "") in text, f
    plan = text[text.index(MARK):]
    assert plan == GOLDEN.read_text(), "regenerate tests/golden with tests/golden/update.py if intended"


def test_cli_phase_order(tmp_path, capsys):
    """--phase-order paper writes the golden plan; the default writes the
    grouped phases the PMPI library runs, and says so."""
    out = {}
    for order in ("paper", None):
        f = tmp_path / f"{order}.c"
        argv = ["generate", str(EXAMPLES / "figure1.yaml"), "-o", str(f), "--name", "fig1_alltoall"]
        assert main(argv + (["--phase-order", order] if order else [])) == 0
        out[order] = f.read_text()
    assert out["paper"][out["paper"].index(MARK):] == GOLDEN.read_text()
    assert out[None][out[None].index(MARK):] != GOLDEN.read_text()
    assert "(faraj-yuan, grouped phases)" in out[None]


def test_bad_name():
    with pytest.raises(TopocollError, match="not a C identifier"):
        generate(Topology.synthetic("3"), "faraj-yuan", "2fast")


@pytest.mark.parametrize("opt", ["-O2", "-O3"])
@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_generated_routine_compiles_optimised(tmp_path, mpi, algorithm, opt, capsys):
    """The README promises a clean compile: optimisers see more (gcc 12's
    -Warray-bounds once flagged a placeholder table at -O2); -O0 is the
    every-byte test's own build."""
    src = tmp_path / "gen.c"
    assert main(["generate", "chain:2,3", "-o", str(src), "--name", "gen_a2a", "--algorithm", algorithm,
                 "--segments", "3", "--fanout", "2"]) == 0
    cc = subprocess.run([COMPILERS[mpi], opt, "-Wall", "-Wextra", "-Werror", "-c", str(src), "-o",
                         str(tmp_path / "gen.o")], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr


@pytest.mark.mpi
@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_generated_routine_every_byte(tmp_path, mpi, algorithm, capsys):
    src = tmp_path / "gen.c"
    assert main(["generate", "chain:2,3", "-o", str(src), "--name", "gen_a2a", "--algorithm", algorithm,
                 "--segments", "3", "--fanout", "2"]) == 0
    exe = tmp_path / "check"
    cc = subprocess.run([COMPILERS[mpi], "-Wall", "-Wextra", "-Werror", "-DALLTOALL=gen_a2a",
                         str(ROOT / "core" / "tests" / "mpi" / "alltoall_check.c"), str(src), "-o", str(exe)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    env = {}
    if mpi == "mpich":
        env["ALLTOALL_CHECK_SKIP_INPLACE_STRUCT_ABOVE"] = "300"   # MPICH 4.0.2's own bug (test_mpi_alltoall)
    for np in (5, 3):
        proc = run(mpi, np, [exe], env)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
        calls, errors = map(int, re.search(r"calls=(\d+) errors=(\d+)", proc.stdout).groups())
        fallbacks = int(re.search(r"fallbacks=(\d+)", proc.stdout).group(1))
        assert errors == 0
        if np == 5:   # the halves of the parity split (sizes 3 and 2) are the only other sizes
            assert 0 < fallbacks < calls
        else:
            assert fallbacks == calls
