"""The ctypes binding against the C header it mirrors: struct sizes and field
offsets, constants, and every prototype's arity.  A C program built against
the installed topocoll.h prints the C side; a change on one side only fails
here."""

from __future__ import annotations

import ctypes
import re
import subprocess

import pytest

from topocoll import _core
from topocoll._core import include_path

STRUCTS = {
    "tc_verify_report": _core._VerifyReport,
    "tc_load_options": _core._LoadOptions,
    "tc_plan_options": _core._PlanOptions,
    "tc_tree": _core._Tree,
    "tc_sync_stats": _core._SyncStats,
    "tc_sync_report": _core._SyncReport,
    "tc_traffic_bound": _core._TrafficBound,
}
CONSTANTS = {
    "TC_PROP_CONTENTION_FREE": _core.PROP_CONTENTION_FREE, "TC_PROP_OPTIMAL": _core.PROP_OPTIMAL,
    "TC_PROP_TOPOLOGY_AWARE": _core.PROP_TOPOLOGY_AWARE, "TC_PROP_SINGLE_PORT": _core.PROP_SINGLE_PORT,
    "TC_PROP_HOST_SINGLE_PORT": _core.PROP_HOST_SINGLE_PORT, "TC_PROP_BOTTLENECK_ONCE": _core.PROP_BOTTLENECK_ONCE,
    "TC_PARAM_SEGMENTS": _core.PARAM_SEGMENTS, "TC_PARAM_FANOUT": _core.PARAM_FANOUT,
    "TC_PARAM_CLUSTERS": _core.PARAM_CLUSTERS,
    "TC_FORMAT_AUTO": _core._format("auto"), "TC_FORMAT_SLURM": _core._format("slurm"),
    "TC_FORMAT_YAML": _core._format("yaml"), "TC_FORMAT_SLURM_YAML": _core._format("slurm-yaml"),
    "TC_FORMAT_MPICH": _core._format("mpich"), "TC_FORMAT_IBNET": _core._format("ibnetdiscover"),
    "TC_PROP_CAPACITATED": _core.PROP_CAPACITATED,
    "sizeof(tc_op) / sizeof(int32_t)": _core.OP_INTS,
    "TC_PLAN_WHOLE_MAX_RANKS": int(_core.default("plan_whole_max_ranks")),
    "TC_SHORT_PACKET_BYTES": int(_core.default("short_packet")),
    "TC_ETHERNET_FRAME": int(_core.default("ethernet_frame")),
    "TC_SHAPER_CLASS_FRAMES": int(_core.default("shaper_class_frames")),
    "TC_SHAPER_BURST_S * 1e6": round(_core.default("shaper_burst") * 1e6),
}


def test_shaper_bucket_is_a_millisecond_at_the_rate_and_at_least_two_frames():
    """The testbed's shapers and the packet simulator's --gso-clumps take
    their bucket from the core: 1 ms at 100 Mbit/s is 12,500 bytes; at
    1 Mbit/s the floor of two full frames."""
    assert _core.shaper_bucket(1e8) == 12500 and _core.shaper_bucket(1e10) == 1250000
    assert _core.shaper_bucket(1e6) == 2 * 1514 == _core.default("shaper_class_frames") * _core.default("ethernet_frame")


@pytest.fixture(scope="module")
def c_side(tmp_path_factory):
    """name -> value as the C compiler sees the header."""
    lines = []
    for name, cls in STRUCTS.items():
        lines.append(f'printf("sizeof {name} %zu\\n", sizeof({name}));')
        for field, _ in cls._fields_:
            lines.append(f'printf("offsetof {name}.{field} %zu\\n", offsetof({name}, {field}));')
    for expr in CONSTANTS:
        lines.append(f'printf("const {expr} %lld\\n", (long long)({expr}));')
    src = tmp_path_factory.mktemp("abi") / "abi.c"
    src.write_text("#include <stddef.h>\n#include <stdio.h>\n#include <topocoll/topocoll.h>\n"
                   "int main(void) {\n" + "\n".join(lines) + "\nreturn 0;\n}\n")
    exe = src.with_suffix("")
    subprocess.run(["cc", "-I", str(include_path()), str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in out.splitlines()}


@pytest.mark.parametrize("name", list(STRUCTS))
def test_struct_layouts_match(c_side, name):
    cls = STRUCTS[name]
    assert ctypes.sizeof(cls) == c_side[f"sizeof {name}"]
    for field, _ in cls._fields_:
        assert getattr(cls, field).offset == c_side[f"offsetof {name}.{field}"], field


@pytest.mark.parametrize("expr", list(CONSTANTS))
def test_constants_match(c_side, expr):
    assert CONSTANTS[expr] == c_side[f"const {expr}"]


def header_arities() -> dict[str, int]:
    """Parameters of every function the header declares."""
    text = (include_path() / "topocoll" / "topocoll.h").read_text()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    out = {}
    for m in re.finditer(r"\b(tc_\w+)\s*\(([^;{]*?)\)\s*;", text):
        params = m.group(2).strip()
        out[m.group(1)] = 0 if params in ("", "void") else params.count(",") + 1
    return out


@pytest.mark.parametrize("name", sorted(_core._PROTOS))
def test_every_prototype_matches_the_header(name):
    arities = header_arities()
    assert name in arities, f"{name} is bound but not declared in topocoll.h"
    assert len(_core._PROTOS[name][1]) == arities[name], name


def test_python_errors_use_the_cores_status_names():
    """One set of error kinds: every kind the Python side raises is one the
    core names (tc_status_name)."""
    from pathlib import Path
    names = {_core.lib().tc_status_name(i).decode() for i in range(1, 9)}
    raised = set()
    for f in Path(_core.__file__).parent.rglob("*.py"):
        raised |= set(re.findall(r'TopocollError\("([^"]+)"', f.read_text()))
    assert raised and raised <= names, raised - names
