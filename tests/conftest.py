"""Shared fixtures: paths and the registry of algorithms (the test matrix)."""

from pathlib import Path

import pytest

from topocoll import algorithms

from . import mpi_util

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "topologies"

ALGORITHMS = [a["name"] for a in algorithms()]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "mpi: launches real MPI ranks or the emulated cluster, which take both cores (and the "
        "network namespaces); `make test` runs these one at a time after the rest, which run two at a time")


@pytest.fixture(autouse=True)
def _mpi_mark(request):
    mpi_util.running_marked = request.node.get_closest_marker("mpi") is not None
    yield
    mpi_util.running_marked = None


@pytest.fixture
def examples():
    return EXAMPLES
