"""Thin ctypes binding to libtopocoll, the C core.

Everything that plans, parses or verifies lives in C; this module only moves
handles and arrays across.  The library is found, in order, at
``$TOPOCOLL_LIB``, ``<venv>/lib/libtopocoll.so`` (installed by ``make
build``) and ``build/libtopocoll.so`` of a source checkout.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from array import array
from pathlib import Path

__all__ = [
    "TopocollError",
    "Topology",
    "Schedule",
    "algorithms",
    "library_path",
    "include_path",
]


def formats() -> list[str]:
    """The topology formats' names, by number (tc_format_name)."""
    out = []
    while (name := lib().tc_format_name(len(out))) is not None:
        out.append(name.decode())
    return out


def _format(fmt: str) -> int:
    names = formats()
    if fmt not in names:
        raise TopocollError("invalid argument", f"topology format '{fmt}'; valid: {', '.join(names)}")
    return names.index(fmt)


class _LoadOptions(ctypes.Structure):
    _fields_ = [("topology_name", ctypes.c_char_p), ("node_name_map", ctypes.c_char_p)]


def _load_options(topology_name: str | None, node_name_map: str | None) -> "_LoadOptions":
    """The loader's options; unset ones from TOPOCOLL_TOPOLOGY_NAME and
    TOPOCOLL_NODE_NAME_MAP, as the PMPI library reads them."""
    name = topology_name or os.environ.get("TOPOCOLL_TOPOLOGY_NAME") or None
    nmap = node_name_map or os.environ.get("TOPOCOLL_NODE_NAME_MAP") or None
    return _LoadOptions(name.encode("utf-8", "surrogateescape") if name else None, os.fsencode(nmap) if nmap else None)


class TopocollError(Exception):
    """An error: ``status`` names the kind with the core's names
    (``tc_status_name``: "invalid argument", "i/o error", "parse error",
    "invalid topology", "unsupported", "verification failed", "limit
    exceeded", "out of memory"), the text names the culprit (and, for files,
    ``file:line``)."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


def _candidates() -> list[Path]:
    here = Path(__file__).resolve()
    out = []
    if os.environ.get("TOPOCOLL_LIB"):
        out.append(Path(os.environ["TOPOCOLL_LIB"]))
    out.append(Path(sys.prefix) / "lib" / "libtopocoll.so")
    for parent in here.parents:
        out.append(parent / "build" / "libtopocoll.so")
        if (parent / "CMakeLists.txt").exists():
            break
    return out


def library_path() -> Path:
    """Absolute path of the core library that this binding loads."""
    for c in _candidates():
        if c.is_file():
            return c.resolve()
    tried = ", ".join(str(c) for c in _candidates())
    raise TopocollError("i/o error", f"libtopocoll.so not found (tried {tried}); run 'make build'")


def include_path() -> Path:
    """Folder holding ``topocoll/topocoll.h`` for the library in use."""
    lib = library_path()
    for cand in (lib.parent.parent / "include", lib.parent.parent / "core" / "include"):
        if (cand / "topocoll" / "topocoll.h").is_file():
            return cand.resolve()
    raise TopocollError("i/o error", f"topocoll.h not found beside {lib}")


class _VerifyReport(ctypes.Structure):
    _fields_ = [
        ("complete", ctypes.c_int),
        ("contention_free", ctypes.c_int),
        ("optimal", ctypes.c_int),
        ("single_port", ctypes.c_int),
        ("host_single_port", ctypes.c_int),
        ("bottleneck_once", ctypes.c_int),
        ("max_parts", ctypes.c_int),
        ("num_steps", ctypes.c_int),
        ("load", ctypes.c_int64),
        ("num_ops", ctypes.c_int64),
        ("contended_steps", ctypes.c_int64),
        ("max_edge_use", ctypes.c_int64),
        ("within_capacity", ctypes.c_int),
        ("capacitated_optimal", ctypes.c_int),
        ("capacitated_load", ctypes.c_int64),
        ("over_capacity_steps", ctypes.c_int64),
        ("problem", ctypes.c_char * 512),
    ]


class _PlanOptions(ctypes.Structure):
    _fields_ = [("segments", ctypes.c_int), ("fanout", ctypes.c_int),
                ("clusters", ctypes.POINTER(ctypes.c_int)), ("sync_depth", ctypes.c_int),
                ("phase_order", ctypes.c_int), ("bandwidth", ctypes.c_double)]


class _Tree(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int), ("levels", ctypes.c_int)] + [
        (f, ctypes.POINTER(ctypes.c_int)) for f in ("parent", "child_begin", "child", "edge_level", "order", "pos",
                                                   "size")]


class _SyncReport(ctypes.Structure):
    _fields_ = [("ordered", ctypes.c_int), ("acyclic", ctypes.c_int), ("checked_pairs", ctypes.c_int64),
                ("unordered_pairs", ctypes.c_int64), ("problem", ctypes.c_char * 512)]


class _SyncStats(ctypes.Structure):
    _fields_ = [("sharing_pairs", ctypes.c_int64), ("candidates", ctypes.c_int64), ("kept", ctypes.c_int64)]


class _ModelNetwork(ctypes.Structure):
    _fields_ = [("alpha", ctypes.POINTER(ctypes.c_double)), ("num_classes", ctypes.c_int),
                ("overhead", ctypes.c_double), ("default_rate", ctypes.c_double),
                ("default_latency", ctypes.c_double)]


class _ModelSignature(ctypes.Structure):
    _fields_ = [("gamma", ctypes.c_double), ("delta", ctypes.c_double), ("threshold", ctypes.c_double)]


class _ModelFeatures(ctypes.Structure):
    _fields_ = [("startup", ctypes.c_double), ("byte_time", ctypes.c_double), ("messages", ctypes.c_double),
                ("steps", ctypes.c_int)]


class _TrafficBound(ctypes.Structure):
    _fields_ = [("total_bytes", ctypes.c_int64), ("link_seconds", ctypes.c_double), ("link", ctypes.c_int),
                ("link_up", ctypes.c_int), ("link_bytes", ctypes.c_int64), ("port_seconds", ctypes.c_double),
                ("port_rank", ctypes.c_int), ("port_sends", ctypes.c_int), ("port_bytes", ctypes.c_int64)]


class _AlltoallvOptions(ctypes.Structure):
    _fields_ = [("piece_bytes", ctypes.c_longlong), ("sync_depth", ctypes.c_int), ("phase_order", ctypes.c_int),
                ("net", ctypes.c_void_p)]


class _AlltoallvInfo(ctypes.Structure):
    _fields_ = [("uniform", ctypes.c_int), ("piece_bytes", ctypes.c_longlong), ("candidates", ctypes.c_int),
                ("predicted_seconds", ctypes.c_double)]


class _TrafficReport(ctypes.Structure):
    _fields_ = [("complete", ctypes.c_int), ("contention_free", ctypes.c_int), ("num_steps", ctypes.c_int),
                ("max_parts", ctypes.c_int), ("pieces", ctypes.c_int64), ("empty_messages", ctypes.c_int64),
                ("piece_load", ctypes.c_int64), ("contended_steps", ctypes.c_int64),
                ("predicted_seconds", ctypes.c_double), ("bound_seconds", ctypes.c_double),
                ("problem", ctypes.c_char * 512)]


class _TuningRule(ctypes.Structure):
    _fields_ = [("ranks", ctypes.c_int), ("min_block", ctypes.c_longlong), ("max_block", ctypes.c_longlong),
                ("algorithm", ctypes.c_int), ("segment_size", ctypes.c_longlong), ("fanout", ctypes.c_int),
                ("line", ctypes.c_int)]


_lib = None
_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_libc.open_memstream.restype = ctypes.c_void_p
_libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)]
_libc.fopen.restype = ctypes.c_void_p
_libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
_libc.fclose.argtypes = [ctypes.c_void_p]
_libc.fflush.argtypes = [ctypes.c_void_p]
_libc.free.argtypes = [ctypes.c_void_p]

P = ctypes.c_void_p
I, I32, I64, D, S = ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_double, ctypes.c_char_p
_PROTOS = {
    "tc_status_name": (S, [I]),
    "tc_error_message": (S, []),
    "tc_error_clear": (None, []),
    "tc_parse_rate": (I, [S, D, ctypes.POINTER(D)]),
    "tc_parse_time": (I, [S, D, ctypes.POINTER(D)]),
    "tc_limit": (D, [S]),
    "tc_default": (D, [S]),
    "tc_shaper_bucket": (D, [D]),
    "tc_parse_size": (I, [S, ctypes.POINTER(ctypes.c_longlong)]),
    "tc_format_rate": (None, [D, ctypes.c_char_p, ctypes.c_size_t]),
    "tc_format_time": (None, [D, ctypes.c_char_p, ctypes.c_size_t]),
    "tc_hostlist_expand": (I, [S, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]),
    "tc_hostlist_compress": (I, [ctypes.POINTER(S), ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]),
    "tc_topology_load": (I, [S, I, ctypes.POINTER(P)]),
    "tc_topology_load_with": (I, [S, I, P, ctypes.POINTER(P)]),
    "tc_topology_parse_with": (I, [S, ctypes.c_size_t, I, S, P, ctypes.POINTER(P)]),
    "tc_format_name": (S, [I]),
    "tc_topology_note": (S, [P]),
    "tc_topology_parse": (I, [S, ctypes.c_size_t, I, S, ctypes.POINTER(P)]),
    "tc_topology_synthetic": (I, [S, ctypes.POINTER(P)]),
    "tc_topology_destroy": (None, [P]),
    "tc_topology_write": (I, [P, I, P]),
    "tc_topology_equal": (I, [P, P]),
    "tc_topology_name": (S, [P]),
    "tc_topology_num_nodes": (I, [P]),
    "tc_topology_num_machines": (I, [P]),
    "tc_topology_num_switches": (I, [P]),
    "tc_topology_node_name": (S, [P, I]),
    "tc_topology_node_kind": (I, [P, I]),
    "tc_topology_node_find": (I, [P, S]),
    "tc_topology_machine_node": (I, [P, I]),
    "tc_topology_machine_slots": (I, [P, I]),
    "tc_topology_num_links": (I, [P]),
    "tc_topology_link": (None, [P, I, ctypes.POINTER(I), ctypes.POINTER(I), ctypes.POINTER(D), ctypes.POINTER(D)]),
    "tc_topology_link_machines_below": (I, [P, I]),
    "tc_topology_link_load": (I64, [P, I]),
    "tc_topology_alltoall_load": (I64, [P]),
    "tc_topology_peak_factor": (D, [P]),
    "tc_topology_peak_throughput": (D, [P, D]),
    "tc_topology_link_capacity": (I, [P, I, D]),
    "tc_topology_capacitated_load": (I64, [P, D, ctypes.POINTER(I), ctypes.POINTER(D)]),
    "tc_topology_aapc_root": (I, [P, ctypes.POINTER(I), ctypes.POINTER(I), ctypes.POINTER(I),
                                  ctypes.POINTER(I), ctypes.POINTER(I)]),
    "tc_algorithm_count": (I, []),
    "tc_algorithm_name": (S, [I]),
    "tc_phase_order_name": (S, [I]),
    "tc_algorithm_summary": (S, [I]),
    "tc_algorithm_properties": (ctypes.c_uint, [I]),
    "tc_algorithm_runs_with_syncs": (I, [I]),
    "tc_algorithm_params": (ctypes.c_uint, [I]),
    "tc_param_variable": (S, [ctypes.c_uint]),
    "tc_algorithm_broken_promises": (I, [I, ctypes.POINTER(_VerifyReport), ctypes.c_uint, ctypes.c_char_p,
                                         ctypes.c_size_t]),
    "tc_algorithm_find": (I, [S]),
    "tc_param_name": (S, [ctypes.c_uint]),
    "tc_alltoall_plan_with_options": (I, [S, P, ctypes.POINTER(_PlanOptions), I, ctypes.POINTER(P)]),
    "tc_algorithm_plans_per_rank": (I, [I]),
    "tc_alltoall_plan_rank": (I, [S, P, ctypes.POINTER(_PlanOptions), I, ctypes.POINTER(P)]),
    "tc_schedule_part_rank": (I, [P]),
    "tc_schedule_num_phases": (I64, [P]),
    "tc_schedule_step_phase": (I64, [P, I]),
    "tc_schedule_from_parts": (I, [P, I, ctypes.POINTER(P)]),
    "tc_topology_expand": (I, [P, P, ctypes.POINTER(P)]),
    "tc_topology_machine_host": (I, [P, I]),
    "tc_topology_clusters": (I, [P, D, P]),
    "tc_topology_levels": (I, [P, I, ctypes.c_char_p, ctypes.c_size_t]),
    "tc_tree_choose_shape": (I, [I, D, D, D]),
    "tc_groups_split_level": (I, [P, I, I, I]),
    "tc_tree_build": (I, [S, I, I, P, I, P, I, ctypes.POINTER(ctypes.POINTER(_Tree))]),
    "tc_tree_destroy": (None, [ctypes.POINTER(_Tree)]),
    "tc_tree_algorithm_count": (I, []),
    "tc_tree_algorithm_name": (S, [I]),
    "tc_groups_from_names": (I, [ctypes.POINTER(S), I, ctypes.c_char, ctypes.POINTER(I),
                                 ctypes.POINTER(ctypes.POINTER(I))]),
    "tc_alltoall_plan": (I, [S, P, ctypes.POINTER(P)]),
    "tc_schedule_destroy": (None, [P]),
    "tc_schedule_algorithm": (S, [P]),
    "tc_schedule_num_ranks": (I, [P]),
    "tc_schedule_num_steps": (I, [P]),
    "tc_schedule_num_ops": (I64, [P]),
    "tc_schedule_copy_ops": (None, [P, P]),
    "tc_schedule_step_begins": (ctypes.c_void_p, [P]),
    "tc_schedule_ops": (ctypes.c_void_p, [P]),
    "tc_schedule_blocks": (ctypes.c_void_p, [P]),
    "tc_alltoall_plan_for_execution": (I, [S, P, I, ctypes.POINTER(P)]),
    "tc_schedule_from_triples": (I, [S, I, I64, P, ctypes.POINTER(P)]),
    "tc_schedule_write_json": (I, [P, P, P]),
    "tc_schedule_load_json": (I, [S, P, ctypes.POINTER(P)]),
    "tc_schedule_verify": (I, [P, P, ctypes.POINTER(_VerifyReport)]),
    "tc_schedule_add_syncs": (I, [P, P, I, ctypes.POINTER(_SyncStats)]),
    "tc_schedule_num_syncs": (I64, [P]),
    "tc_schedule_syncs": (ctypes.POINTER(I64), [P]),
    "tc_schedule_set_syncs": (I, [P, P, I64]),
    "tc_schedule_verify_syncs": (I, [P, P, I, ctypes.POINTER(_SyncReport)]),
    "tc_model_default_network": (None, [ctypes.POINTER(_ModelNetwork), D, D]),
    "tc_model_default_signature": (None, [I, ctypes.POINTER(_ModelSignature)]),
    "tc_model_features_of": (I, [I, P, ctypes.POINTER(_PlanOptions), ctypes.POINTER(_ModelNetwork),
                                 ctypes.POINTER(_ModelFeatures)]),
    "tc_model_path_class": (I, [P, I, I]),
    "tc_model_schedule_features": (I, [P, P, ctypes.POINTER(_ModelNetwork), ctypes.POINTER(_ModelFeatures)]),
    "tc_model_auto_features": (I, [P, D, ctypes.POINTER(_PlanOptions), ctypes.POINTER(_ModelFeatures * 2)]),
    "tc_model_auto_choice": (I, [ctypes.POINTER(_ModelFeatures * 2), D, ctypes.POINTER(D * 2)]),
    "tc_topology_restrict": (I, [P, P, I, ctypes.POINTER(P)]),
    "tc_model_time": (D, [ctypes.POINTER(_ModelFeatures), ctypes.POINTER(_ModelSignature), D]),
    "tc_plan_segments": (I, [ctypes.c_longlong, ctypes.c_longlong, I]),
    "tc_tuning_load": (I, [S, ctypes.POINTER(P)]),
    "tc_traffic_load": (I, [S, ctypes.POINTER(P)]),
    "tc_traffic_read": (I, [S, ctypes.c_size_t, S, ctypes.POINTER(P)]),
    "tc_traffic_write": (I, [P, P]),
    "tc_traffic_from": (I, [I, P, ctypes.POINTER(P)]),
    "tc_traffic_pattern": (I, [S, I, I64, ctypes.c_uint64, ctypes.POINTER(P)]),
    "tc_traffic_destroy": (None, [P]),
    "tc_traffic_ranks": (I, [P]),
    "tc_traffic_bytes": (ctypes.POINTER(I64), [P]),
    "tc_traffic_bounds": (I, [P, P, D, ctypes.POINTER(_TrafficBound)]),
    "tc_traffic_uniform": (I, [P, ctypes.POINTER(I64)]),
    "tc_alltoallv_plan": (I, [P, P, ctypes.POINTER(_AlltoallvOptions), I, ctypes.POINTER(P),
                              ctypes.POINTER(_AlltoallvInfo)]),
    "tc_traffic_verify": (I, [P, P, P, P, ctypes.POINTER(_TrafficReport)]),
    "tc_model_traffic_time": (I, [P, P, P, P, ctypes.POINTER(D)]),
    "tc_tuning_destroy": (None, [P]),
    "tc_tuning_topology": (S, [P]),
    "tc_tuning_num_machines": (I, [P]),
    "tc_tuning_machine": (S, [P, I]),
    "tc_tuning_num_rules": (I, [P]),
    "tc_tuning_rule_at": (ctypes.POINTER(_TuningRule), [P, I]),
    "tc_tuning_select": (I, [P, I, ctypes.c_longlong, ctypes.POINTER(ctypes.POINTER(_TuningRule))]),
    "tc_tuning_check_topology": (I, [P, P]),
}

PROP_CONTENTION_FREE, PROP_OPTIMAL, PROP_TOPOLOGY_AWARE, PROP_SINGLE_PORT = 1, 2, 4, 8
PROP_HOST_SINGLE_PORT, PROP_BOTTLENECK_ONCE, PROP_CAPACITATED = 16, 32, 64
PARAM_SEGMENTS, PARAM_FANOUT, PARAM_CLUSTERS = 1, 2, 4


def parameters() -> dict[int, tuple[str, str]]:
    """The parameters an algorithm may read, by registry flag: option name
    and the PMPI library's environment variable (the core's table)."""
    L = lib()
    return {f: (L.tc_param_name(f).decode(), L.tc_param_variable(f).decode())
            for f in (PARAM_SEGMENTS, PARAM_FANOUT, PARAM_CLUSTERS)}
OP_INTS = 6   # src, dst, first_block, num_blocks, part, parts (tc_op)


def lib():
    """The loaded core library (loaded on first use)."""
    global _lib
    if _lib is None:
        handle = ctypes.CDLL(str(library_path()))
        for name, (res, args) in _PROTOS.items():
            fn = getattr(handle, name)
            fn.restype = res
            fn.argtypes = args
        _lib = handle
    return _lib


def _check(rc: int) -> None:
    if rc != 0:
        L = lib()
        raise TopocollError(L.tc_status_name(rc).decode("utf-8", "backslashreplace"), L.tc_error_message().decode("utf-8", "backslashreplace"))


def _capture(write) -> str:
    """Run write(FILE*) into memory and return the text."""
    buf, size = ctypes.c_char_p(), ctypes.c_size_t()
    f = _libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    try:
        rc = write(f)
    finally:
        _libc.fclose(f)
    try:
        text = ctypes.string_at(buf, size.value).decode("utf-8", "backslashreplace")
    finally:
        _libc.free(ctypes.cast(buf, ctypes.c_void_p))
    _check(rc)
    return text


def _to_file(path: str | os.PathLike, write) -> None:
    f = _libc.fopen(os.fsencode(path), b"wb")
    if not f:
        err = ctypes.get_errno()
        raise TopocollError("i/o error", f"cannot write '{path}': {os.strerror(err) if err else 'open failed'}")
    try:
        rc = write(f)
    finally:
        if _libc.fclose(f) != 0:
            raise TopocollError("i/o error", f"cannot write '{path}'")
    _check(rc)


def limit(name: str) -> float:
    """One of the core's documented limits (topocoll.h, "limits"), by name:
    ``machines``, ``switches``, ``levels``, ``name_len``, ``hostlist_names``,
    ``file_bytes``, ``nesting``, ``min_rate``, ``max_rate``, ``max_time``,
    ``bare_rate_unit``."""
    v = lib().tc_limit(name.encode("utf-8", "surrogateescape"))
    if v < 0:
        raise KeyError(name)
    return v


def default(name: str) -> float:
    """One of the core's defaults (topocoll.h): ``fanout``, ``bandwidth``
    (bit/s), ``latency`` (s), ``segment_size`` (bytes)."""
    v = lib().tc_default(name.encode())
    if v < 0:
        raise KeyError(name)
    return v


def shaper_bucket(rate_bps: float) -> int:
    """The emulated cluster's shapers' bucket for a link of rate_bps, in
    bytes (tc_shaper_bucket)."""
    return int(lib().tc_shaper_bucket(float(rate_bps)))


def parse_rate(text: str, bare_unit: float | None = None) -> float:
    """Bits per second of a rate such as ``100Mbit``; a bare number is read
    with the core's one rule (Mbit/s) unless ``bare_unit`` says otherwise."""
    if bare_unit is None:
        bare_unit = limit("bare_rate_unit")
    out = ctypes.c_double()
    _check(lib().tc_parse_rate(text.encode("utf-8", "surrogateescape"), bare_unit, ctypes.byref(out)))
    return out.value


def parse_time(text: str, bare_unit: float = 0) -> float:
    """Seconds of a time such as ``50us``."""
    out = ctypes.c_double()
    _check(lib().tc_parse_time(text.encode("utf-8", "surrogateescape"), bare_unit, ctypes.byref(out)))
    return out.value


def parse_size(text: str) -> int:
    """Bytes of a size such as ``64K`` (the core's one reader of sizes)."""
    out = ctypes.c_longlong()
    _check(lib().tc_parse_size(text.strip().encode("utf-8", "surrogateescape"), ctypes.byref(out)))
    return out.value


def format_rate(bps: float) -> str:
    buf = ctypes.create_string_buffer(32)
    lib().tc_format_rate(bps, buf, 32)
    return buf.value.decode("utf-8", "backslashreplace")


def format_time(seconds: float) -> str:
    buf = ctypes.create_string_buffer(32)
    lib().tc_format_time(seconds, buf, 32)
    return buf.value.decode("utf-8", "backslashreplace")


def hostlist_expand(expr: str) -> list[str]:
    """Names of a Slurm hostlist expression, in order."""
    ptr, n = ctypes.c_void_p(), ctypes.c_size_t()
    _check(lib().tc_hostlist_expand(expr.encode("utf-8", "surrogateescape"), ctypes.byref(ptr), ctypes.byref(n)))
    try:
        names, off = [], 0
        for _ in range(n.value):
            s = ctypes.string_at(ptr.value + off)
            names.append(s.decode("utf-8", "backslashreplace"))
            off += len(s) + 1
        return names
    finally:
        _libc.free(ptr)


def hostlist_compress(names: list[str]) -> str:
    """A hostlist expression that expands back to exactly ``names``."""
    arr = (ctypes.c_char_p * len(names))(*[n.encode("utf-8", "surrogateescape") for n in names])
    out = ctypes.c_void_p()
    _check(lib().tc_hostlist_compress(arr, len(names), ctypes.byref(out)))
    try:
        return ctypes.string_at(out.value).decode("utf-8", "backslashreplace")
    finally:
        _libc.free(out)


class Topology:
    """A validated switch tree (a handle on the C model)."""

    def __init__(self, handle: int):
        self._h = ctypes.c_void_p(handle)

    def __del__(self):
        if getattr(self, "_h", None) and _lib is not None:
            _lib.tc_topology_destroy(self._h)
            self._h = None

    @classmethod
    def load(cls, path: str | os.PathLike, fmt: str = "auto", topology_name: str | None = None,
             node_name_map: str | None = None) -> "Topology":
        """Read a topology file (one of formats(), told by extension or
        contents), or build a synthetic one from a spec such as
        ``chain:8,8,8,8`` when no such file exists.  topology_name: which
        topology of a Slurm topology.yaml; node_name_map: host names for an
        ibnetdiscover file (defaults: TOPOCOLL_TOPOLOGY_NAME,
        TOPOCOLL_NODE_NAME_MAP)."""
        h = ctypes.c_void_p()
        opt = _load_options(topology_name, node_name_map)
        _check(lib().tc_topology_load_with(os.fsencode(path), _format(fmt), ctypes.byref(opt), ctypes.byref(h)))
        return cls(h.value)

    @classmethod
    def parse(cls, text: str, fmt: str = "auto", filename: str = "<string>", topology_name: str | None = None,
              node_name_map: str | None = None) -> "Topology":
        h = ctypes.c_void_p()
        data = text.encode("utf-8", "surrogateescape")
        opt = _load_options(topology_name, node_name_map)
        _check(lib().tc_topology_parse_with(data, len(data), _format(fmt), filename.encode("utf-8", "surrogateescape"),
                                            ctypes.byref(opt), ctypes.byref(h)))
        return cls(h.value)

    @property
    def note(self) -> str:
        """How the file was read where it had to be approximated ("" if nowhere)."""
        return lib().tc_topology_note(self._h).decode("utf-8", "backslashreplace")

    @classmethod
    def synthetic(cls, spec: str) -> "Topology":
        h = ctypes.c_void_p()
        _check(lib().tc_topology_synthetic(spec.encode("utf-8", "surrogateescape"), ctypes.byref(h)))
        return cls(h.value)

    def write(self, fmt: str = "yaml") -> str:
        """The topology as text in ``fmt`` (one of formats(), but auto)."""
        return _capture(lambda f: lib().tc_topology_write(self._h, _format(fmt), f))

    def __eq__(self, other) -> bool:
        return isinstance(other, Topology) and bool(lib().tc_topology_equal(self._h, other._h))

    __hash__ = None

    @property
    def name(self) -> str:
        return lib().tc_topology_name(self._h).decode("utf-8", "backslashreplace")

    @property
    def num_machines(self) -> int:
        return lib().tc_topology_num_machines(self._h)

    @property
    def num_switches(self) -> int:
        return lib().tc_topology_num_switches(self._h)

    def node_name(self, node: int) -> str:
        return lib().tc_topology_node_name(self._h, node).decode("utf-8", "backslashreplace")

    def node_is_machine(self, node: int) -> bool:
        return lib().tc_topology_node_kind(self._h, node) == 0

    @property
    def machines(self) -> list[str]:
        """Machine names in rank order."""
        L = lib()
        return [L.tc_topology_node_name(self._h, L.tc_topology_machine_node(self._h, r)).decode("utf-8", "backslashreplace")
                for r in range(self.num_machines)]

    @property
    def switches(self) -> list[str]:
        L = lib()
        return [self.node_name(n) for n in range(L.tc_topology_num_nodes(self._h)) if not self.node_is_machine(n)]

    def slots(self, rank: int) -> int:
        return lib().tc_topology_machine_slots(self._h, rank)

    def links(self) -> list[dict]:
        """Each link: child, parent, bandwidth/latency (0 = not given), the
        machines below it and its all-to-all load."""
        L = lib()
        out = []
        c, p, bw, lat = ctypes.c_int(), ctypes.c_int(), ctypes.c_double(), ctypes.c_double()
        for l in range(L.tc_topology_num_links(self._h)):
            L.tc_topology_link(self._h, l, ctypes.byref(c), ctypes.byref(p), ctypes.byref(bw), ctypes.byref(lat))
            out.append({
                "child": self.node_name(c.value),
                "parent": self.node_name(p.value),
                "bandwidth": bw.value,
                "latency": lat.value,
                "machines_below": L.tc_topology_link_machines_below(self._h, l),
                "load": L.tc_topology_link_load(self._h, l),
            })
        return out

    @property
    def alltoall_load(self) -> int:
        """All-to-all load of the bottleneck link (messages each way)."""
        return lib().tc_topology_alltoall_load(self._h)

    def peak_throughput(self, default_bandwidth: float) -> float:
        """Peak aggregate all-to-all throughput in bit/s."""
        return lib().tc_topology_peak_throughput(self._h, default_bandwidth)

    def capacitated(self, default_bandwidth: float) -> dict:
        """Links of unequal rates: each link's capacity (messages at once:
        floor(rate / the slowest host link's), by link index), the
        capacitated phase bound (max over links of ceil(load / capacity)),
        its link, and the peak aggregate throughput it implies (bit/s)."""
        L, link, r = lib(), ctypes.c_int(), ctypes.c_double()
        bound = L.tc_topology_capacitated_load(self._h, default_bandwidth, ctypes.byref(link), ctypes.byref(r))
        links = self.links()
        m = self.num_machines
        return {"capacities": [L.tc_topology_link_capacity(self._h, i, default_bandwidth) for i in range(len(links))],
                "load": bound, "link": f"{links[link.value]['child']}-{links[link.value]['parent']}" if link.value >= 0 else None,
                "host_rate": r.value, "peak_bps": m * (m - 1) * r.value / bound if bound else 0.0}

    def path_class(self, a: int, b: int) -> int:
        """Network links crossed between machines a and b (the model's path
        class: 0 same machine, 2 same switch, 3 one more switch ...)."""
        return lib().tc_model_path_class(self._h, a, b)

    def restrict(self, ranks: list[int]) -> "Topology":
        """The tree of these machines only (in this order)."""
        arr = (ctypes.c_int * len(ranks))(*ranks)
        h = ctypes.c_void_p()
        _check(lib().tc_topology_restrict(self._h, arr, len(ranks), ctypes.byref(h)))
        return Topology(h.value)

    def expand(self, ranks_per_machine: list[int] | int) -> "Topology":
        """Several ranks a machine: each machine with more than one becomes a
        switch of its name holding machines ``NAME.0``, ``NAME.1``, ...
        (shared-memory links), ranks numbered machine by machine."""
        m = self.num_machines
        counts = [ranks_per_machine] * m if isinstance(ranks_per_machine, int) else list(ranks_per_machine)
        if len(counts) != m:
            raise TopocollError("invalid argument", f"{len(counts)} rank counts for {m} machines")
        arr = (ctypes.c_int * m)(*counts)
        h = ctypes.c_void_p()
        _check(lib().tc_topology_expand(self._h, arr, ctypes.byref(h)))
        return Topology(h.value)

    def hosts(self) -> list[str]:
        """The host (machine holding it) of each rank."""
        L = lib()
        return [self.node_name(L.tc_topology_machine_host(self._h, r)) for r in range(self.num_machines)]

    def levels(self, rank: int) -> str:
        """Machine rank's level names for the collectives, "site/machine"."""
        buf = ctypes.create_string_buffer(4096)
        if lib().tc_topology_levels(self._h, rank, buf, len(buf)) < 0:
            raise TopocollError("limit exceeded", "level names longer than 4096 bytes")
        return buf.value.decode("utf-8", "backslashreplace")

    def clusters(self, default_bandwidth: float | None = None) -> list[int]:
        """Cluster of each rank: the parts left when the bottleneck links are cut."""
        if default_bandwidth is None:
            default_bandwidth = default("bandwidth")
        m = self.num_machines
        out = (ctypes.c_int * m)()
        if lib().tc_topology_clusters(self._h, default_bandwidth, out) < 0:
            raise TopocollError("out of memory", "out of memory")
        return list(out)

    def aapc_root(self) -> dict:
        """The Faraj-Yuan root switch and its subtrees, largest first."""
        m = self.num_machines
        root, k = ctypes.c_int(), ctypes.c_int()
        sizes, sub_of, sub_node = (ctypes.c_int * m)(), (ctypes.c_int * m)(), (ctypes.c_int * m)()
        _check(lib().tc_topology_aapc_root(self._h, ctypes.byref(root), ctypes.byref(k), sizes, sub_of, sub_node))
        names = self.machines
        subtrees = [{"via": self.node_name(sub_node[i]), "machines": []} for i in range(k.value)]
        for r in range(m):
            subtrees[sub_of[r]]["machines"].append(names[r])
        return {"root": self.node_name(root.value), "subtrees": subtrees}


class Schedule:
    """A schedule in the IR (a handle on the C object)."""

    def __init__(self, handle: int):
        self._h = ctypes.c_void_p(handle)

    def __del__(self):
        if getattr(self, "_h", None) and _lib is not None:
            _lib.tc_schedule_destroy(self._h)
            self._h = None

    @classmethod
    def plan(cls, algorithm: str, topology: Topology) -> "Schedule":
        """Plan an all-to-all over the topology's machines."""
        h = ctypes.c_void_p()
        _check(lib().tc_alltoall_plan(algorithm.encode("utf-8", "surrogateescape"), topology._h, ctypes.byref(h)))
        return cls(h.value)

    @classmethod
    def plan_for_execution(cls, algorithm: str, topology: Topology, sync_depth: int = 1, **options) -> "Schedule":
        """Plan as the executor runs it: with the syncs of a contention-free
        algorithm attached (the PMPI library does the same)."""
        return cls.plan_with(algorithm, topology, execute=True, sync_depth=sync_depth, **options)

    @classmethod
    def plan_with(cls, algorithm: str, topology: Topology, execute: bool = False, segments: int = 1,
                  fanout: int = 0, clusters: list[int] | None = None, sync_depth: int = 1,
                  phase_order: str | None = None, bandwidth: float = 0.0) -> "Schedule":
        """Plan with the algorithm parameters of the registry (segments a
        block, group-shuffle fan-out, local-group clusters a rank); for
        execution, also the phase order (one of phase_orders(); None: the
        library's default, the first); bandwidth: bit/s of links the topology
        gives no rate, for link capacities (0: the library's default)."""
        orders = phase_orders()
        if phase_order is not None and phase_order not in orders:
            raise TopocollError("invalid argument", f"phase order '{phase_order}'; valid: {', '.join(orders)}")
        arr = None
        if clusters is not None:
            if len(clusters) != topology.num_machines:
                raise TopocollError("invalid argument", f"{len(clusters)} cluster labels for {topology.num_machines} ranks")
            arr = (ctypes.c_int * len(clusters))(*clusters)
        opt = _PlanOptions(segments, fanout, arr, sync_depth, orders.index(phase_order) if phase_order else 0,
                           float(bandwidth))
        h = ctypes.c_void_p()
        _check(lib().tc_alltoall_plan_with_options(algorithm.encode("utf-8", "surrogateescape"), topology._h, ctypes.byref(opt), int(execute),
                                                   ctypes.byref(h)))
        return cls(h.value)

    @classmethod
    def plan_rank(cls, algorithm: str, topology: Topology, rank: int, sync_depth: int = 1) -> "Schedule":
        """Rank `rank`'s part of the schedule the executor runs, planned
        without the whole (tc_alltoall_plan_rank): its messages and the syncs
        it waits for and signals."""
        opt = _PlanOptions(1, 0, None, sync_depth, phase_orders().index("paper"))
        h = ctypes.c_void_p()
        _check(lib().tc_alltoall_plan_rank(algorithm.encode("utf-8", "surrogateescape"), topology._h, ctypes.byref(opt),
                                           rank, ctypes.byref(h)))
        return cls(h.value)

    @classmethod
    def from_parts(cls, parts: "list[Schedule]") -> "Schedule":
        """The whole schedule joined from every rank's part (parts[r] is rank
        r's); the core checks that the parts agree."""
        arr = (ctypes.c_void_p * len(parts))(*[p._h.value for p in parts])
        h = ctypes.c_void_p()
        _check(lib().tc_schedule_from_parts(arr, len(parts), ctypes.byref(h)))
        return cls(h.value)

    @property
    def part_rank(self) -> int | None:
        """The rank whose part this is; None for a whole schedule."""
        r = lib().tc_schedule_part_rank(self._h)
        return None if r < 0 else r

    @property
    def num_phases(self) -> int:
        return lib().tc_schedule_num_phases(self._h)

    def messages(self) -> list[tuple[int, int, int]]:
        """(phase, src, dst) of every operation; a part's phases are the whole's."""
        L, t = lib(), self.triples()
        return [(L.tc_schedule_step_phase(self._h, t[i]), t[i + 1], t[i + 2]) for i in range(0, len(t), 3)]

    def tables(self) -> dict:
        """The IR's arrays as the executor reads them: step_begin (steps+1),
        ops (src, dst, first_block, num_blocks, part, parts each), blocks (origin, dest
        pairs) and syncs (after, before pairs), as array objects."""
        L = lib()
        nops, nsteps = self.num_ops, self.num_steps

        def grab(ptr, typecode, n):
            out = array(typecode, bytes(array(typecode).itemsize * n))
            if n:
                ctypes.memmove(out.buffer_info()[0], ptr, out.itemsize * n)
            return out

        step_begin = grab(L.tc_schedule_step_begins(self._h), "q", nsteps + 1)
        ops = grab(L.tc_schedule_ops(self._h), "i", OP_INTS * nops)
        nblock_ints = max((2 * (ops[OP_INTS * i + 2] + ops[OP_INTS * i + 3]) for i in range(nops)
                           if ops[OP_INTS * i + 2] >= 0), default=0)
        blocks = grab(L.tc_schedule_blocks(self._h), "i", nblock_ints)
        syncs = array("q", [x for pair in self.syncs() for x in pair])
        return {"step_begin": step_begin, "ops": ops, "blocks": blocks, "syncs": syncs}

    @classmethod
    def from_triples(cls, algorithm: str, num_ranks: int, triples: "array") -> "Schedule":
        """A direct schedule from a flat int32 array of (step, src, dst)."""
        if triples.typecode != "i" or triples.itemsize != 4:
            raise TypeError("triples must be array('i')")
        h = ctypes.c_void_p()
        n = len(triples) // 3
        addr = triples.buffer_info()[0] if n else None
        _check(lib().tc_schedule_from_triples(algorithm.encode("utf-8", "surrogateescape"), num_ranks, n, addr, ctypes.byref(h)))
        return cls(h.value)

    @classmethod
    def load_json(cls, path: str | os.PathLike, topology: "Topology | None" = None) -> "Schedule":
        """A schedule JSON file (``topocoll plan -o``), read by the core: its
        phases (empty ones too) and syncs, its machines checked against
        ``topology``'s when one is given."""
        h = ctypes.c_void_p()
        th = topology._h if topology is not None else None
        _check(lib().tc_schedule_load_json(os.fsencode(path), th, ctypes.byref(h)))
        return cls(h.value)

    @property
    def algorithm(self) -> str:
        return lib().tc_schedule_algorithm(self._h).decode("utf-8", "backslashreplace")

    @property
    def num_ranks(self) -> int:
        return lib().tc_schedule_num_ranks(self._h)

    @property
    def num_steps(self) -> int:
        return lib().tc_schedule_num_steps(self._h)

    @property
    def num_ops(self) -> int:
        return lib().tc_schedule_num_ops(self._h)

    def triples(self) -> "array":
        """All operations as a flat int32 array of (step, src, dst)."""
        out = array("i", bytes(12 * self.num_ops))
        if self.num_ops:
            lib().tc_schedule_copy_ops(self._h, out.buffer_info()[0])
        return out

    def phases(self) -> list[list[tuple[int, int]]]:
        """Operations grouped by step: phases[p] = [(src, dst), ...]."""
        t = self.triples()
        out: list[list[tuple[int, int]]] = [[] for _ in range(self.num_steps)]
        for i in range(0, len(t), 3):
            out[t[i]].append((t[i + 1], t[i + 2]))
        return out

    def verify(self, topology: Topology, waive: int = 0) -> dict:
        """The verifier's report: complete, contention_free, optimal, ...;
        ``broken``: the promises of the schedule's algorithm (registry
        PROP_* flags, less ``waive``) that it breaks, as the core judges."""
        L = lib()
        rep = _VerifyReport()
        _check(L.tc_schedule_verify(self._h, topology._h, ctypes.byref(rep)))
        why = ctypes.create_string_buffer(512)
        L.tc_algorithm_broken_promises(L.tc_algorithm_find(L.tc_schedule_algorithm(self._h)), ctypes.byref(rep),
                                       waive, why, 512)
        broken = why.value.decode("utf-8", "backslashreplace")
        return {
            "broken": broken.split("; ") if broken else [],
            "complete": bool(rep.complete),
            "contention_free": bool(rep.contention_free),
            "optimal": bool(rep.optimal),
            "single_port": bool(rep.single_port),
            "phases": rep.num_steps,
            "load": rep.load,
            "messages": rep.num_ops,
            "contended_phases": rep.contended_steps,
            "max_edge_use": rep.max_edge_use,
            "host_single_port": bool(rep.host_single_port),
            "bottleneck_once": bool(rep.bottleneck_once),
            "max_parts": rep.max_parts,
            "within_capacity": bool(rep.within_capacity),
            "capacitated_optimal": bool(rep.capacitated_optimal),
            "capacitated_load": rep.capacitated_load,
            "over_capacity_phases": rep.over_capacity_steps,
            "problem": rep.problem.decode("utf-8", "backslashreplace"),
        }

    def add_syncs(self, topology: Topology, depth: int = 1) -> dict:
        """Compute the pairwise synchronisations (paper section 5) and attach
        them; returns the counts before and after removing redundant ones.
        depth d lets a link carry d messages at once (1: the paper's)."""
        st = _SyncStats()
        _check(lib().tc_schedule_add_syncs(self._h, topology._h, depth, ctypes.byref(st)))
        return {"sharing_pairs": st.sharing_pairs, "candidates": st.candidates, "kept": st.kept}

    def syncs(self) -> list[tuple[int, int]]:
        """Attached syncs as (after, before) operation indices, where an
        operation index is its position in ``triples()``."""
        n = lib().tc_schedule_num_syncs(self._h)
        ptr = lib().tc_schedule_syncs(self._h)
        return [(ptr[2 * i], ptr[2 * i + 1]) for i in range(n)]

    def set_syncs(self, pairs: list[tuple[int, int]]) -> None:
        """Replace the syncs by (after, before) operation indices."""
        flat = array("q", [x for pair in pairs for x in pair])
        _check(lib().tc_schedule_set_syncs(self._h, flat.buffer_info()[0] if pairs else None, len(pairs)))

    def verify_syncs(self, topology: Topology, depth: int = 1) -> dict:
        """The core's sync verifier: every two messages that share a directed
        link (the second ``depth`` users after the first) are ordered by
        program order and syncs, and the syncs cannot deadlock."""
        rep = _SyncReport()
        _check(lib().tc_schedule_verify_syncs(self._h, topology._h, depth, ctypes.byref(rep)))
        return {"ordered": bool(rep.ordered), "acyclic": bool(rep.acyclic), "checked_pairs": rep.checked_pairs,
                "unordered_pairs": rep.unordered_pairs,
                "problem": rep.problem.decode("utf-8", "backslashreplace")}

    def write_json(self, path: str | os.PathLike | None, topology: Topology | None) -> str | None:
        """Write the schedule JSON to ``path`` (``None``: return it as text)."""
        th = topology._h if topology is not None else None
        if path is None:
            return _capture(lambda f: lib().tc_schedule_write_json(self._h, th, f))
        _to_file(path, lambda f: lib().tc_schedule_write_json(self._h, th, f))
        return None


def phase_orders() -> list[str]:
    """The names of TOPOCOLL_PHASE_ORDER (tc_phase_order_name); the first is
    the library's default."""
    L, out = lib(), []
    while (name := L.tc_phase_order_name(len(out))) is not None:
        out.append(name.decode("utf-8", "backslashreplace"))
    return out


def algorithms() -> list[dict]:
    """The registry: name, summary and promised properties of each algorithm."""
    L = lib()
    out = []
    for i in range(L.tc_algorithm_count()):
        props, params = L.tc_algorithm_properties(i), L.tc_algorithm_params(i)
        out.append({
            "name": L.tc_algorithm_name(i).decode("utf-8", "backslashreplace"),
            "summary": L.tc_algorithm_summary(i).decode("utf-8", "backslashreplace"),
            "contention_free": bool(props & PROP_CONTENTION_FREE),
            "optimal": bool(props & PROP_OPTIMAL),
            "topology_aware": bool(props & PROP_TOPOLOGY_AWARE),
            "single_port": bool(props & PROP_SINGLE_PORT),
            "host_single_port": bool(props & PROP_HOST_SINGLE_PORT),
            "bottleneck_once": bool(props & PROP_BOTTLENECK_ONCE),
            "capacitated": bool(props & PROP_CAPACITATED),
            "parameters": [name for f, (name, _) in parameters().items() if params & f],
            "runs_with_syncs": bool(L.tc_algorithm_runs_with_syncs(i)),
        })
    return out


def tree_algorithms() -> list[str]:
    """Names of the collective tree algorithms (binomial, two-level, multilevel)."""
    L = lib()
    return [L.tc_tree_algorithm_name(i).decode("utf-8", "backslashreplace") for i in range(L.tc_tree_algorithm_count())]


def group_vectors(names: list[str]) -> tuple[int, list[list[int]]]:
    """Levels and group ids per rank from "site/lan/machine" names."""
    n = len(names)
    arr = (ctypes.c_char_p * n)(*[x.encode("utf-8", "surrogateescape") for x in names])
    levels, ptr = ctypes.c_int(), ctypes.POINTER(ctypes.c_int)()
    _check(lib().tc_groups_from_names(arr, n, b"/", ctypes.byref(levels), ctypes.byref(ptr)))
    try:
        L = levels.value
        return L, [[ptr[r * L + l] for l in range(L)] for r in range(n)]
    finally:
        _libc.free(ctypes.cast(ptr, ctypes.c_void_p))


def collective_tree(algorithm: str, names: list[str], root: int, cluster_level: int = -1) -> dict:
    """The tree a collective uses (built as every rank builds it): parent and
    children (send order) of each rank, the level each message crosses
    (first differing level of the two ranks' group vectors; `levels` inside a
    bottom group), and the depth-first order.  cluster_level -1: the last."""
    L, vec = group_vectors(names)
    n = len(names)
    flat = (ctypes.c_int * max(1, n * L))(*[g for v in vec for g in v])
    t = ctypes.POINTER(_Tree)()
    at = L - 1 if cluster_level < 0 else cluster_level
    _check(lib().tc_tree_build(algorithm.encode("utf-8", "surrogateescape"), n, L, flat, root, None, at, ctypes.byref(t)))
    try:
        tr = t.contents
        parent = [tr.parent[r] for r in range(n)]
        children = [[tr.child[k] for k in range(tr.child_begin[r], tr.child_begin[r + 1])] for r in range(n)]
        order = [tr.order[i] for i in range(n)]
    finally:
        lib().tc_tree_destroy(t)

    split = lib().tc_groups_split_level
    return {"levels": L, "parent": parent, "children": children, "order": order,
            "message_level": [split(flat, L, parent[r], r) if parent[r] >= 0 else -1 for r in range(n)]}


def choose_shape(k: int, latency: float, bandwidth: float, nbytes: float) -> str:
    """The tree shape the model picks for k groups at a level: "flat",
    "binomial" or "default" (k <= 2: both are one message)."""
    return {0: "default", 1: "flat", 2: "binomial"}[lib().tc_tree_choose_shape(k, latency, bandwidth, nbytes)]


# ---- the performance model and tuning files (model.c, tuning.c) ----------------

NATIVE = -1   # TC_NATIVE: the MPI's own all-to-all


def algorithm_index(name: str) -> int:
    """Registry index of an algorithm, NATIVE for "native"."""
    if name == "native":
        return NATIVE
    i = lib().tc_algorithm_find(name.encode())
    if i < 0:
        valid = ", ".join(a["name"] for a in algorithms())
        raise TopocollError("invalid argument", f"unknown algorithm '{name}'; valid: {valid}, native")
    return i


def algorithm_name(index: int) -> str:
    return "native" if index == NATIVE else lib().tc_algorithm_name(index).decode()


class Network:
    """The point-to-point side of the model: alpha (s) by path class (network
    links crossed: 0 same machine, 2 same switch, 3 one more switch ...),
    and for the classes not measured the software overhead plus the path's
    link latencies; rates and latencies of links the topology gives none."""

    def __init__(self, alpha: dict[int, float] | None = None, overhead: float | None = None,
                 default_rate: float | None = None, default_latency: float | None = None):
        base = _ModelNetwork()
        lib().tc_model_default_network(ctypes.byref(base), default_rate or 0.0,
                                       default_latency if default_latency is not None else -1.0)
        self.alpha = dict(alpha or {})
        self.overhead = base.overhead if overhead is None else overhead
        self.default_rate, self.default_latency = base.default_rate, base.default_latency

    def _struct(self):
        n = max(self.alpha, default=-1) + 1
        arr = (ctypes.c_double * max(n, 1))(*[self.alpha.get(k, 0.0) for k in range(n)])
        net = _ModelNetwork(ctypes.cast(arr, ctypes.POINTER(ctypes.c_double)), n, self.overhead, self.default_rate,
                            self.default_latency)
        return net, arr


def default_signature(algorithm: str) -> dict:
    """The contention signature the model uses without a fit (topocoll.h)."""
    sig = _ModelSignature()
    lib().tc_model_default_signature(algorithm_index(algorithm), ctypes.byref(sig))
    return {"gamma": sig.gamma, "delta": sig.delta, "threshold": sig.threshold}


def plan_segments(block: int, segment_size: int, machines: int) -> int:
    """Segments the PMPI library cuts a block into (segmented algorithms)."""
    return lib().tc_plan_segments(block, segment_size, machines)


def schedule_features(schedule: "Schedule", topology: "Topology", network: Network) -> dict:
    """The model's features of a planned schedule (tc_model_schedule_features)."""
    net, keep = network._struct()
    f = _ModelFeatures()
    _check(lib().tc_model_schedule_features(schedule._h, topology._h, ctypes.byref(net), ctypes.byref(f)))
    del keep
    return {"startup": f.startup, "byte_time": f.byte_time, "messages": f.messages, "steps": f.steps}


def model_features(algorithm: str, topology: "Topology", network: Network, segments: int = 1,
                   fanout: int = 0, sync_depth: int = 1) -> dict:
    """The model's features of an algorithm ("native" too) on a topology, as
    the PMPI library plans it: startup (s), byte_time (s a block byte),
    messages (each paying delta), steps."""
    net, keep = network._struct()
    opt = _PlanOptions(segments, fanout, None, sync_depth, 0)
    f = _ModelFeatures()
    _check(lib().tc_model_features_of(algorithm_index(algorithm), topology._h, ctypes.byref(opt), ctypes.byref(net),
                                      ctypes.byref(f)))
    del keep
    return {"startup": f.startup, "byte_time": f.byte_time, "messages": f.messages, "steps": f.steps}


def model_time(features: dict, signature: dict, block: float) -> float:
    """T(m) = startup + gamma byte_time m + [m >= threshold] delta messages."""
    f = _ModelFeatures(features["startup"], features["byte_time"], features["messages"], features.get("steps", 0))
    sig = _ModelSignature(signature["gamma"], signature["delta"], signature["threshold"])
    return lib().tc_model_time(ctypes.byref(f), ctypes.byref(sig), float(block))


class _FileObject:
    """A core object read from a file (tc_<kind>_load) and freed by
    tc_<kind>_destroy; subclasses name the kind."""
    _kind = ""

    def __init__(self, handle):
        self._h = handle

    def __del__(self):
        if getattr(self, "_h", None) and _lib is not None:
            getattr(_lib, f"tc_{self._kind}_destroy")(self._h)
            self._h = None

    @classmethod
    def load(cls, path: str | os.PathLike):
        h = ctypes.c_void_p()
        _check(getattr(lib(), f"tc_{cls._kind}_load")(os.fsencode(path), ctypes.byref(h)))
        return cls(h)


class Traffic(_FileObject):
    """A traffic matrix (MPI_Alltoallv's bytes from each rank to each): read
    from its file, made from a pattern, or given; its bounds on a topology."""
    _kind = "traffic"

    @classmethod
    def pattern(cls, spec: str, ranks: int, mean_block: int, seed: int = 1) -> "Traffic":
        """uniform, zipf:S, hot:K, sparse:F or random (the core's definitions)."""
        h = ctypes.c_void_p()
        _check(lib().tc_traffic_pattern(spec.encode("utf-8", "surrogateescape"), ranks, mean_block,
                                        seed & (2**64 - 1), ctypes.byref(h)))
        return cls(h)

    @classmethod
    def from_rows(cls, rows: list[list[int]]) -> "Traffic":
        p = len(rows)
        if any(len(r) != p for r in rows):
            raise TopocollError("invalid argument", "a traffic matrix is square: one row of p blocks a rank")
        flat = (ctypes.c_int64 * (p * p))(*[x for r in rows for x in r])
        h = ctypes.c_void_p()
        _check(lib().tc_traffic_from(p, flat, ctypes.byref(h)))
        return cls(h)

    @property
    def ranks(self) -> int:
        return lib().tc_traffic_ranks(self._h)

    def rows(self) -> list[list[int]]:
        p, ptr = self.ranks, lib().tc_traffic_bytes(self._h)
        return [[ptr[i * p + j] for j in range(p)] for i in range(p)]

    def write(self, path: str | os.PathLike | None = None) -> str | None:
        if path is None:
            return _capture(lambda f: lib().tc_traffic_write(self._h, f))
        _to_file(path, lambda f: lib().tc_traffic_write(self._h, f))
        return None

    def bounds(self, topology: "Topology", default_rate: float | None = None) -> dict:
        """The link-load and single-port bounds (seconds) and where they are."""
        b = _TrafficBound()
        _check(lib().tc_traffic_bounds(self._h, topology._h, default_rate or default("bandwidth"), ctypes.byref(b)))
        out = {"total_bytes": b.total_bytes, "link_seconds": b.link_seconds, "port_seconds": b.port_seconds}
        if b.link >= 0:
            l = topology.links()[b.link]
            out["link"] = f"{l['child']}->{l['parent']}" if b.link_up else f"{l['parent']}->{l['child']}"
            out["link_bytes"] = b.link_bytes
        if b.port_rank >= 0:
            out.update(port_rank=b.port_rank, port_bytes=b.port_bytes, port_sends=bool(b.port_sends))
        return out

    @property
    def uniform(self) -> int | None:
        """The block size when every block off the diagonal has it (> 0), else None."""
        b = ctypes.c_int64()
        return b.value if lib().tc_traffic_uniform(self._h, ctypes.byref(b)) else None

    def plan(self, topology: "Topology", piece_bytes: int = 0, execute: bool = False, sync_depth: int = 1,
             network: "Network | None" = None, phase_order: str | None = None) -> tuple["Schedule", dict]:
        """The unequal-block planner (tc_alltoallv_plan): the schedule and
        what it chose (uniform, piece_bytes, candidates, predicted_seconds)."""
        orders = phase_orders()
        if phase_order is not None and phase_order not in orders:
            raise TopocollError("invalid argument", f"phase order '{phase_order}'; valid: {', '.join(orders)}")
        net, keep = network._struct() if network else (None, None)
        opt = _AlltoallvOptions(piece_bytes, sync_depth, orders.index(phase_order) if phase_order else 0,
                                ctypes.addressof(net) if net is not None else None)
        info, h = _AlltoallvInfo(), ctypes.c_void_p()
        _check(lib().tc_alltoallv_plan(topology._h, self._h, ctypes.byref(opt), int(execute), ctypes.byref(h),
                                       ctypes.byref(info)))
        del keep
        return Schedule(h.value), {"uniform": bool(info.uniform), "piece_bytes": info.piece_bytes,
                                   "candidates": info.candidates, "predicted_seconds": info.predicted_seconds}

    def verify(self, schedule: "Schedule", topology: "Topology", network: "Network | None" = None) -> dict:
        """The unequal-block verifier's report (tc_traffic_verify); with a
        network, the model's predicted time beside the link-load bound."""
        net, keep = network._struct() if network else (None, None)
        r = _TrafficReport()
        _check(lib().tc_traffic_verify(schedule._h, topology._h, self._h,
                                       ctypes.addressof(net) if net is not None else None, ctypes.byref(r)))
        del keep
        return {"complete": bool(r.complete), "contention_free": bool(r.contention_free), "steps": r.num_steps,
                "max_parts": r.max_parts, "messages": r.pieces, "empty_messages": r.empty_messages,
                "piece_load": r.piece_load, "contended_steps": r.contended_steps,
                "predicted_seconds": r.predicted_seconds if network else None, "bound_seconds": r.bound_seconds,
                "problem": r.problem.decode("utf-8", "backslashreplace")}

    def predict(self, schedule: "Schedule", topology: "Topology", network: "Network") -> float:
        """The model's time of a direct schedule over these blocks (tc_model_traffic_time)."""
        net, keep = network._struct()
        t = ctypes.c_double()
        _check(lib().tc_model_traffic_time(schedule._h, topology._h, self._h, ctypes.byref(net), ctypes.byref(t)))
        del keep
        return t.value


class Tuning(_FileObject):
    """A tuning file as the core reads it (the PMPI library's reader)."""
    _kind = "tuning"

    @property
    def topology(self) -> str:
        return lib().tc_tuning_topology(self._h).decode("utf-8", "backslashreplace")

    @property
    def machines(self) -> list[str]:
        L = lib()
        return [L.tc_tuning_machine(self._h, i).decode("utf-8", "backslashreplace")
                for i in range(L.tc_tuning_num_machines(self._h))]

    @staticmethod
    def _rule(r) -> dict:
        return {"ranks": r.ranks, "min_block": r.min_block, "max_block": None if r.max_block < 0 else r.max_block,
                "algorithm": algorithm_name(r.algorithm), "segment_size": r.segment_size or None,
                "fanout": r.fanout or None, "line": r.line}

    @property
    def rules(self) -> list[dict]:
        L = lib()
        return [self._rule(L.tc_tuning_rule_at(self._h, i).contents) for i in range(L.tc_tuning_num_rules(self._h))]

    def select(self, ranks: int, block: int) -> dict:
        out = ctypes.POINTER(_TuningRule)()
        _check(lib().tc_tuning_select(self._h, ranks, block, ctypes.byref(out)))
        return self._rule(out.contents)

    def check_topology(self, topology: "Topology") -> None:
        _check(lib().tc_tuning_check_topology(self._h, topology._h))


def untuned_auto(topology: "Topology", block: int, default_rate: float | None = None) -> tuple[str, dict]:
    """What the PMPI library's auto picks without a tuning file (the core's
    rule), and the two predictions it compared (seconds)."""
    f = (_ModelFeatures * 2)()
    _check(lib().tc_model_auto_features(topology._h, default_rate or default("bandwidth"), None, ctypes.byref(f)))
    t = (D * 2)()
    pick = lib().tc_model_auto_choice(ctypes.byref(f), float(block), ctypes.byref(t))
    return algorithm_name(pick), {"native": t[0], "faraj-yuan": t[1]}
