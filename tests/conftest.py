"""Shared fixtures: paths and the registry of algorithms (the test matrix)."""

from pathlib import Path

import pytest

from topocoll import algorithms

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "topologies"

ALGORITHMS = [a["name"] for a in algorithms()]


@pytest.fixture
def examples():
    return EXAMPLES
