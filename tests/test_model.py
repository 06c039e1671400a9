"""The papers' cost models (topocoll.model): the identities the papers state."""

import doctest
import math

import pytest

from topocoll import model
from topocoll.model import (STEFFENEL_GIGE, TAM_WANG_HKU_326, TAM_WANG_HKU_416, contention_time, group_shuffle_time,
                            lg_time, optimal_time, pairwise_time, shift_time, sync_shuffle_time, t_w,
                            two_cluster_naive_time)


def test_doctests():
    assert doctest.testmod(model).failed == 0


@pytest.mark.parametrize("c", [TAM_WANG_HKU_326, TAM_WANG_HKU_416])
@pytest.mark.parametrize("p, k", [(16, 1), (16, 100), (8, 768), (24, 4)])
def test_tam_wang_identities(c, p, k):
    # eq. 4 meets the optimum of eq. 2; eq. 3 pays T_w every round
    assert sync_shuffle_time(c, p, k) == pytest.approx(optimal_time(c, p, k))
    assert shift_time(c, p, k) - sync_shuffle_time(c, p, k) == pytest.approx((p - 2) * t_w(c, p))
    # group shuffle: omega = p-1 is the synchronous shuffle, omega = 1 is shift
    assert group_shuffle_time(c, p, k, p - 1) == pytest.approx(sync_shuffle_time(c, p, k))
    assert group_shuffle_time(c, p, k, 1) == pytest.approx(shift_time(c, p, k))
    assert sync_shuffle_time(c, p, k) <= group_shuffle_time(c, p, k, 5) <= shift_time(c, p, k)


def test_pairwise_odd_takes_a_round_more():
    c = TAM_WANG_HKU_326
    assert pairwise_time(c, 16, 4) == pytest.approx(shift_time(c, 16, 4))
    assert pairwise_time(c, 15, 4) == pytest.approx(shift_time(c, 15, 4) * 15 / 14)


def test_table1_latency():
    assert TAM_WANG_HKU_326.latency(16) == pytest.approx(0.3387 * 16 + 149)
    assert TAM_WANG_HKU_326.g == 123.0


def test_steffenel_models():
    small, large = contention_time(STEFFENEL_GIGE, 24, 512), contention_time(STEFFENEL_GIGE, 24, 4096)
    assert small == pytest.approx(23 * (50e-6 + 512 * 8e-9 * 2.6887))
    assert large == pytest.approx(23 * (50e-6 + 4096 * 8e-9 * 2.6887 + 0.005039))
    # eq. 7 against eq. 6: LG sends ceil(n2/n1) aggregated messages instead of max(n1, n2)
    args = dict(t_c1=0.01, t_c2=0.02, m=65536, alpha_w=0.01, beta_w=1e-8)
    assert lg_time(n1=30, n2=30, **args) < two_cluster_naive_time(n1=30, n2=30, **args)
    assert lg_time(n1=3, n2=7, **args) == pytest.approx(0.02 + math.ceil(7 / 3) * (0.01 + 1e-8 * 65536 * 3))
    assert lg_time(n1=7, n2=3, **args) == lg_time(n1=3, n2=7, **args)
