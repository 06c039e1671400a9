"""Cost models of the papers' all-to-all algorithms, as plain functions.

Tam & Wang (complete exchange on a switched cluster, eqs. 1-5) count packets
of ``b`` bytes: a block of ``k`` packets costs ``k g + T_w`` alone, where
``T_w = O_s + L - g + O_r + U_r`` is the start-up a round pays.  Steffenel,
Martinasso & Trystram fit a contention ratio ``gamma`` (and ``delta`` above a
message size ``M``) to measured all-to-alls (eqs. 4-5) and compose it with a
wide-area term for their two-cluster Local Group algorithm (eqs. 6-7).

Every function is O(1).  Times are in the unit of the parameters (the
papers' tables are in microseconds).

>>> hku = TAM_WANG_HKU_326
>>> round(shift_time(hku, p=16, k=1) / sync_shuffle_time(hku, p=16, k=1), 2)   # one-packet blocks
1.52
>>> round(lg_time(t_c1=1.0, t_c2=2.0, n1=3, n2=7, m=1000, alpha_w=0.5, beta_w=0.001), 3)
12.5
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

__all__ = [
    "TamWangParams", "TAM_WANG_HKU_326", "TAM_WANG_HKU_416", "t_w", "ptp_time", "optimal_time", "shift_time",
    "pairwise_time", "sync_shuffle_time", "group_shuffle_time", "contention_time", "two_cluster_naive_time",
    "lg_time", "ContentionSignature", "STEFFENEL_GIGE",
]


@dataclass(frozen=True)
class TamWangParams:
    """Tam & Wang's cluster parameters (their section 2): software overheads
    ``o_s`` (send), ``o_r`` (kernel receive), ``u_r`` (user receive), gaps
    ``g_s``/``g_r`` between packets, and the latency ``L = latency_per_node * p
    + latency_base`` of one packet through the switch."""

    o_s: float
    g_s: float
    g_r: float
    o_r: float
    u_r: float
    latency_per_node: float
    latency_base: float

    @property
    def g(self) -> float:
        """g = max(g_s, g_r): the packet gap of a homogeneous cluster."""
        return max(self.g_s, self.g_r)

    def latency(self, p: int) -> float:
        return self.latency_per_node * p + self.latency_base


#: Their Table 1 (microseconds, 1492-byte packets, Fast Ethernet, DP
#: messaging): the input-buffered IBM 8275-326 switch ...
TAM_WANG_HKU_326 = TamWangParams(12.5, 122.0, 123.0, 20.0, 7.0, 0.3387, 149.0)
#: ... and the shared-buffered 8275-416.
TAM_WANG_HKU_416 = TamWangParams(12.5, 122.0, 123.0, 20.0, 7.0, 0.3413, 264.0)


def t_w(c: TamWangParams, p: int) -> float:
    """T_w = O_s + L - g + O_r + U_r: the start-up of one exchange round."""
    return c.o_s + c.latency(p) - c.g + c.o_r + c.u_r


def ptp_time(c: TamWangParams, p: int, k: int) -> float:
    """Eq. 1: one k-packet message with no conflict, k g + T_w."""
    return k * c.g + t_w(c, p)


def optimal_time(c: TamWangParams, p: int, k: int) -> float:
    """Eq. 2: the lower bound k (p-1) g + T_w (every node sends and receives
    k(p-1) packets, one a gap)."""
    return k * (p - 1) * c.g + t_w(c, p)


def shift_time(c: TamWangParams, p: int, k: int) -> float:
    """Eq. 3: shift exchange, (p-1)(k g + T_w): a start-up every round."""
    return (p - 1) * (k * c.g + t_w(c, p))


def pairwise_time(c: TamWangParams, p: int, k: int) -> float:
    """Pairwise exchange: as shift (their section 3.2), with p rounds when p
    is odd (the edge colouring idles each node once)."""
    rounds = p if p % 2 else p - 1
    return rounds * (k * c.g + t_w(c, p))


def sync_shuffle_time(c: TamWangParams, p: int, k: int) -> float:
    """Eq. 4: synchronous shuffle, k (p-1) g + T_w: the optimum of eq. 2."""
    return k * (p - 1) * c.g + t_w(c, p)


def group_shuffle_time(c: TamWangParams, p: int, k: int, omega: int) -> float:
    """Eq. 5: group shuffle with fan-out omega, k g (p-1) + ceil((p-1)/omega) T_w
    (the paper assumes omega divides p-1; the ceiling covers the rest)."""
    return k * c.g * (p - 1) + math.ceil((p - 1) / omega) * t_w(c, p)


# ---- Steffenel, Martinasso & Trystram ------------------------------------------------

@dataclass(frozen=True)
class ContentionSignature:
    """A network's contention signature (their section IV): ``gamma`` scales
    the bandwidth term, ``delta`` is added per message from size ``m_threshold``
    on; ``alpha`` (s) and ``beta`` (s/byte) are the point-to-point terms."""

    alpha: float
    beta: float
    gamma: float
    delta: float = 0.0
    m_threshold: float = math.inf


#: Their Grid'5000 fit (section VI.E): gamma = 2.6887 and delta = 5.039 ms
#: for messages of 1 KB and more, with a Gigabit Ethernet alpha/beta
#: (50 us, 8 ns/byte) as an example.
STEFFENEL_GIGE = ContentionSignature(alpha=50e-6, beta=8e-9, gamma=2.6887, delta=0.005039, m_threshold=1024)


def contention_time(sig: ContentionSignature, n: int, m: float) -> float:
    """Eqs. 4-5: an n-process all-to-all of m-byte messages,
    (n-1)(alpha + m beta gamma) [+ (n-1) delta when m >= M]."""
    extra = sig.delta if m >= sig.m_threshold else 0.0
    return (n - 1) * (sig.alpha + m * sig.beta * sig.gamma + extra)


def two_cluster_naive_time(t_c1: float, t_c2: float, n1: int, n2: int, m: float, alpha_w: float,
                           beta_w: float) -> float:
    """Eq. 6: a cluster-unaware all-to-all over two clusters, local cost plus
    max(n1, n2) wide-area messages: max(T_C1, T_C2) + max(n1, n2)(alpha_w + beta_w m)."""
    return max(t_c1, t_c2) + max(n1, n2) * (alpha_w + beta_w * m)


def lg_time(t_c1: float, t_c2: float, n1: int, n2: int, m: float, alpha_w: float, beta_w: float) -> float:
    """Eq. 7: the Local Group algorithm, max(T_C1, T_C2) + ceil(n2/n1)(alpha_w +
    beta_w m n1) with n1 <= n2 (swapped here if given the other way round);
    T_Cn is the local all-to-all, e.g. contention_time for the cluster."""
    n1, n2 = min(n1, n2), max(n1, n2)
    return max(t_c1, t_c2) + math.ceil(n2 / n1) * (alpha_w + beta_w * m * n1)


# ---- the contention signature on a switch tree, fitted and used ----------------------
#
# The formula and the features live in the core (model.c: the PMPI library's
# untuned `auto` uses the same); here are the files, the fit and the
# predictions for the command line.

MODEL_FORMAT = "topocoll-model/1"
PINGPONG_FORMAT = "topocoll-pingpong/1"
MIN_FIT_SIZES = 4   # the paper's "at least four measurement points"


def pingpong_classes(topology, results: list[tuple[int, int, float]], rank_machine: list[int]) -> list[dict]:
    """Group rank 0's ping-pongs by path class and fit alpha and beta to each
    (t = alpha + m beta, half round trips).  rank_machine: each rank's
    machine in the topology."""
    by_class: dict[int, dict] = {}
    for peer, size, seconds in results:
        cls = topology.path_class(rank_machine[0], rank_machine[peer])
        c = by_class.setdefault(cls, {"links": cls, "peers": set(), "samples": {}})
        c["peers"].add(peer)
        c["samples"].setdefault(size, []).append(seconds)
    out = []
    for cls in sorted(by_class):
        c = by_class[cls]
        points = [(m, statistics.median(ts)) for m, ts in sorted(c["samples"].items())]
        # beta from the two largest messages (the bandwidth term), alpha what
        # the smallest costs beyond it: a line through all of them lets TCP's
        # slow start on mid sizes push alpha below zero
        (m0, t0), (m1, t1) = (points[-2], points[-1]) if len(points) > 1 else ((0, 0.0), points[0])
        beta = (t1 - t0) / (m1 - m0) if len(points) > 1 and m1 > m0 else 0.0
        alpha = points[0][1] - points[0][0] * max(beta, 0.0)
        out.append({"links": cls, "alpha": max(alpha, 0.0), "beta": max(beta, 0.0), "peers": sorted(c["peers"]),
                    "points": [[m, t] for m, t in points]})
    return out


class ModelFileError(ValueError):
    pass


def _number(d: dict, key: str, where: str, lo: float = 0.0, hi: float = 3600.0, none_ok: bool = False):
    v = d.get(key)
    if v is None and none_ok:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (lo <= v <= hi):
        raise ModelFileError(f"{where}: \"{key}\" must be a number from {lo:g} to {hi:g}, not {v!r}")
    return float(v)


class Model:
    """A model file: the network (alpha by path class, rates) and a
    contention signature per algorithm; algorithms it has none for use the
    core's default signature (topocoll.h) and say so."""

    def __init__(self, network, signatures: dict | None = None, machines: list[str] | None = None,
                 fitted: dict | None = None, path: str | None = None):
        self.network, self.signatures = network, dict(signatures or {})
        self.machines, self.fitted, self.path = machines, fitted or {}, path
        self._features: dict = {}

    @classmethod
    def default(cls, default_rate: float | None = None) -> "Model":
        from ._core import Network
        return cls(Network(default_rate=default_rate))

    @classmethod
    def load(cls, path: str) -> "Model":
        from ._core import Network, TopocollError, algorithm_index
        from .common import read_json
        doc = read_json(path, "model")
        try:
            if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
                raise ModelFileError(f"not a model file: \"format\" must be \"{MODEL_FORMAT}\"")
            net = doc.get("network")
            if not isinstance(net, dict):
                raise ModelFileError("\"network\" must be an object")
            alpha = net.get("alpha", {})
            if not isinstance(alpha, dict) or not all(isinstance(k, str) and k.isdigit() and int(k) < 130
                                                      for k in alpha):
                raise ModelFileError("network: \"alpha\" must map path classes (\"2\", \"3\", ...) to seconds")
            alphas = {int(k): _number(alpha, k, "network: alpha") for k in alpha}
            network = Network(alphas, _number(net, "overhead", "network"),
                              _number(net, "default_rate", "network", 1e3, 1e15),
                              _number(net, "default_latency", "network"))
            sigs = {}
            algs = doc.get("algorithms")
            if not isinstance(algs, dict) or not algs:
                raise ModelFileError("\"algorithms\" must map algorithm names to signatures")
            for name, sig in algs.items():
                try:
                    algorithm_index(name)
                except TopocollError as e:
                    raise ModelFileError(f"algorithms: {e}") from None
                if not isinstance(sig, dict):
                    raise ModelFileError(f"algorithms: \"{name}\" must be an object")
                where = f"algorithms: {name}"
                threshold = _number(sig, "threshold", where, 0, 1 << 40, none_ok=True)
                sigs[name] = {"gamma": _number(sig, "gamma", where, 1e-3, 1e3),
                              "delta": _number(sig, "delta", where, 0, 3600),
                              "threshold": math.inf if threshold is None else threshold}
            machines = doc.get("machines")
            if not isinstance(machines, list) or not machines or not all(isinstance(m, str) for m in machines):
                raise ModelFileError("\"machines\" must list the machines the model was fitted on")
        except ModelFileError as e:
            raise TopocollError("parse error", f"{path}: {e}") from None
        return cls(network, sigs, machines, doc.get("fitted"), path)

    def check_topology(self, topology) -> None:
        """A model predicts on the network it was fitted on: any subset of
        its machines (other process counts), not another cluster's."""
        from ._core import TopocollError
        if self.machines is None:
            return
        known = set(self.machines)
        missing = [m for m in topology.machines if m not in known]
        if missing:
            raise TopocollError("invalid argument", f"{self.path}: fitted on {self.fitted.get('topology', '?')}, "
                                                    f"which has no machine '{missing[0]}' of {topology.name}")

    def signature(self, algorithm: str) -> tuple[dict, bool]:
        from ._core import default_signature
        if algorithm in self.signatures:
            return self.signatures[algorithm], True
        return default_signature(algorithm), False

    def features(self, algorithm: str, topology, block: int, segment_size: int | None = None, fanout: int = 0) -> dict:
        from ._core import PARAM_SEGMENTS, algorithm_index, default, model_features, lib, plan_segments
        segments = 1
        if algorithm != "native" and lib().tc_algorithm_params(algorithm_index(algorithm)) & PARAM_SEGMENTS:
            segments = plan_segments(block, segment_size or int(default("segment_size")), topology.num_machines)
        key = (algorithm, id(topology), segments, fanout)
        if key not in self._features:
            self._features[key] = (topology, model_features(algorithm, topology, self.network, segments, fanout))
        return self._features[key][1]

    def predict(self, algorithm: str, topology, block: int, **kw) -> float:
        from ._core import model_time
        return model_time(self.features(algorithm, topology, block, **kw), self.signature(algorithm)[0], block)

    def to_json(self) -> dict:
        net = self.network
        return {"format": MODEL_FORMAT, "machines": self.machines, "fitted": self.fitted,
                "network": {"alpha": {str(k): v for k, v in sorted(net.alpha.items())}, "overhead": net.overhead,
                            "default_rate": net.default_rate, "default_latency": net.default_latency},
                "algorithms": {a: {"gamma": s["gamma"], "delta": s["delta"],
                                   "threshold": None if math.isinf(s["threshold"]) else s["threshold"],
                                   **({"points": s["points"]} if "points" in s else {})}
                               for a, s in self.signatures.items()}}


def fit_signature(points: list[tuple[int, float]], features_of) -> dict:
    """gamma, delta and M of eq. 5 for one algorithm, by generalised least
    squares (errors relative to the time: the spread of all-to-all timings
    grows with them) over the medians (m, seconds); every measured size and
    no threshold at all are tried for M, the smallest residual wins; gamma
    > 0 and delta >= 0.  Returns the signature with its points and
    residuals."""
    import numpy as np
    rows = [(m, t, features_of(m)) for m, t in sorted(points) if t > 0]
    if len({m for m, _, _ in rows}) < MIN_FIT_SIZES:
        raise ValueError(f"{len(rows)} sizes; the fit needs at least {MIN_FIT_SIZES}")
    best = None
    for M in sorted({m for m, _, _ in rows}) + [math.inf]:
        cols = [[f["byte_time"] * m / t for m, t, f in rows]]
        if not math.isinf(M):
            cols.append([(f["messages"] if m >= M else 0.0) / t for m, t, f in rows])
        A = np.array(cols).T
        y = np.array([(t - f["startup"]) / t for m, t, f in rows])
        coef, *_ = np.linalg.lstsq(A, y, rcond=None)
        gamma, delta = float(coef[0]), float(coef[1]) if len(coef) > 1 else 0.0
        if gamma <= 0 or delta < 0:
            continue
        ssr = float(np.sum((A @ coef - y) ** 2))
        if best is None or ssr < best[0] * (1 - 1e-9):
            best = (ssr, gamma, delta, M)
    if best is None:
        raise ValueError("no fit with gamma > 0 and delta >= 0 (the times fall with the size?)")
    _, gamma, delta, M = best
    sig = {"gamma": gamma, "delta": delta, "threshold": M}
    from ._core import model_time
    sig["points"] = [{"msize": m, "measured": t, "predicted": model_time(f, sig, m),
                      "error": model_time(f, sig, m) / t - 1} for m, t, f in rows]
    return sig
