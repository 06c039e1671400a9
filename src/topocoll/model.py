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
