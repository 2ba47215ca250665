"""The Platonic Representation Hypothesis' metrics (repdist.measures.prh): small cases worked by
hand, the dense formulas of their definitions, and properties (identical inputs, invariances)."""

from __future__ import annotations

import numpy as np
import pytest

from repdist.measures.prh import (
    clamp_outliers,
    cknna,
    cycle_knn_from_indices,
    edit_distance_knn_from_indices,
    hsic_unbiased_linear,
    knn_metrics,
    lcs_knn_from_indices,
    prh_prepare,
    unbiased_cka,
    unit_rows,
)

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels


def test_cycle_knn_by_hand():
    # i = 0: its Y-neighbour 2 has X-neighbour 0: back at 0. i = 1: 2 -> 0, not 1. i = 2: 0 -> 1.
    nn_x, nn_y = np.array([[1], [0], [0]]), np.array([[2], [2], [0]])
    assert cycle_knn_from_indices(nn_x, nn_y) == pytest.approx(1 / 3)
    # with itself: 0 -> 1 -> 0 and 1 -> 0 -> 1 come home, 2 -> 0 -> 1 does not
    assert cycle_knn_from_indices(nn_x, nn_x) == pytest.approx(2 / 3)


def test_cycle_knn_of_a_symmetric_graph_is_one():
    nn = np.array([[1], [0], [3], [2]])
    assert cycle_knn_from_indices(nn, nn) == 1.0


def test_lcs_and_edit_distance_by_hand():
    a = np.array([[1, 2, 3], [1, 2, 3]])
    b = np.array([[2, 3, 1], [3, 2, 1]])
    assert lcs_knn_from_indices(a, b) == pytest.approx((2 + 1) / 2)  # "2 3", then one element
    # [1 2 3] -> [2 3 1]: delete 1, append 1 (2); [1 2 3] -> [3 2 1]: two substitutions (2)
    assert edit_distance_knn_from_indices(a, b) == pytest.approx(1 - 2 / 3)
    assert lcs_knn_from_indices(a, a) == 3 and edit_distance_knn_from_indices(a, a) == 1.0


def _lcs(x, y):
    if not x or not y:
        return 0
    if x[-1] == y[-1]:
        return _lcs(x[:-1], y[:-1]) + 1
    return max(_lcs(x[:-1], y), _lcs(x, y[:-1]))


def _lev(x, y):
    if not x or not y:
        return len(x) + len(y)
    return min(_lev(x[:-1], y) + 1, _lev(x, y[:-1]) + 1, _lev(x[:-1], y[:-1]) + (x[-1] != y[-1]))


def test_sequence_distances_equal_the_textbook_recursions():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 6, (40, 5)), rng.integers(0, 6, (40, 5))
    want_lcs = np.mean([_lcs(tuple(r), tuple(s)) for r, s in zip(a, b)])
    want_lev = np.mean([_lev(tuple(r), tuple(s)) for r, s in zip(a, b)])
    assert lcs_knn_from_indices(a, b) == pytest.approx(want_lcs)
    assert edit_distance_knn_from_indices(a, b) == pytest.approx(1 - want_lev / 5)


def _hsic_dense(k, l):
    """Song et al. (2012) eq. 5, from the kernel matrices, as PRH writes it."""
    m = len(k)
    kt, lt = k.copy(), l.copy()
    np.fill_diagonal(kt, 0)
    np.fill_diagonal(lt, 0)
    value = (np.sum(kt * lt.T) + kt.sum() * lt.sum() / ((m - 1) * (m - 2))
             - 2 * np.sum(kt @ lt) / (m - 2))
    return value / (m * (m - 3))


def test_unbiased_hsic_from_features_equals_the_kernel_formula():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(30, 4)), rng.normal(size=(30, 3))
    assert hsic_unbiased_linear(x, y) == pytest.approx(_hsic_dense(x @ x.T, y @ y.T), rel=1e-12)


def test_unbiased_cka_properties():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 5))
    q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    assert unbiased_cka(x, x) == pytest.approx(1, abs=1e-5)  # 1 up to their 1e-6
    # invariant to rotations and scaling, up to that 1e-6 in the denominator
    assert unbiased_cka(x, 3.0 * x @ q) == pytest.approx(unbiased_cka(x, x), rel=1e-6)
    assert unbiased_cka(x, x @ q) == pytest.approx(unbiased_cka(x, x), rel=1e-12)
    assert abs(unbiased_cka(x, rng.normal(size=(200, 5)))) < 0.1  # independent: near 0
    assert unbiased_cka(x.astype(np.float32), x) == pytest.approx(unbiased_cka(x, x), rel=1e-6)


def _cknna_dense(x, y, k):
    n = len(x)

    def mask(g):
        g = g.copy()
        np.fill_diagonal(g, -np.inf)
        top = np.argsort(-g, axis=1)[:, :k]
        m = np.zeros((n, n))
        m[np.arange(n)[:, None], top] = 1
        return m

    kx, ly = x @ x.T, y @ y.T
    mx, my = mask(kx), mask(ly)

    def sim(ma, mb, a, b):
        both = ma * mb
        return _hsic_dense(both * a, both * b)

    return sim(mx, my, kx, ly) / (np.sqrt(sim(mx, mx, kx, kx) * sim(my, my, ly, ly)) + 1e-6)


def test_cknna_equals_its_dense_definition_and_is_one_on_identical_inputs():
    rng = np.random.default_rng(3)
    x = unit_rows(rng.normal(size=(60, 3)))
    y = unit_rows(x + 0.3 * rng.normal(size=(60, 3)))
    assert cknna(x, y, 5) == pytest.approx(_cknna_dense(x, y, 5), rel=1e-10)
    assert cknna(x, x, 5) == pytest.approx(1, abs=1e-4)  # 1 up to their 1e-6 on small HSICs
    with pytest.raises(ValueError, match="2 <= k"):
        cknna(x, y, 1)


def test_clamp_outliers_by_hand():
    x = np.arange(1.0, 21.0).reshape(2, 10)
    # per-row 0.5-quantiles 5.5 and 15.5 (linear interpolation), mean 10.5
    assert clamp_outliers(x, 0.5).max() == 10.5
    # exact: the sorted |values|' element at floor(0.5 * 20) = 10 is 11
    assert clamp_outliers(x, 0.5, exact=True).max() == 11.0
    assert clamp_outliers(-x, 0.5, exact=True).min() == -11.0
    assert np.array_equal(clamp_outliers(x, 1), x)  # exact: q = 1 returns x


def test_prh_prepare_gives_unit_rows_and_knn_metrics_of_identical_inputs():
    rng = np.random.default_rng(4)
    x = prh_prepare(rng.normal(size=(100, 6)))
    assert np.allclose(np.linalg.norm(x, axis=1), 1)
    same = knn_metrics(x, x, k=5)
    assert same == {"cycle_knn": 1.0, "lcs_knn": 5.0, "edit_distance_knn": 1.0}
    other = knn_metrics(x, rng.normal(size=(100, 6)), k=5)
    assert 0 <= other["cycle_knn"] < 1 and 0 <= other["edit_distance_knn"] < 1
    assert 0 <= other["lcs_knn"] < 5
    # rotating a representation changes no neighbour
    q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    assert knn_metrics(x, x @ q, k=5) == same


def test_svcca_zscored_properties():
    from repdist.measures.prh import svcca_zscored

    rng = np.random.default_rng(5)
    x = rng.normal(size=(300, 12))
    # an invertible map of the columns keeps the span, and z-scoring rescales columns only
    assert svcca_zscored(x, x * rng.uniform(0.5, 3, 12), k=10) == pytest.approx(1, abs=1e-9)
    assert svcca_zscored(x, rng.normal(size=(300, 12)), k=10) < 0.3
    assert np.isnan(svcca_zscored(x[:, :2], x[:, :2], k=10))  # fewer columns than components
    assert svcca_zscored(x.astype(np.float32), x, k=4) == pytest.approx(1, abs=1e-9)


def test_public_helpers_compute_in_float64():
    from repdist.measures.extra import d_logit, svcca

    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(500, 4)), rng.normal(size=(500, 4))
    # float32 input, float64 arithmetic: the value of the input rounded to float32, no more
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    assert svcca(x32, y32) == svcca(x32.astype(np.float64), y32.astype(np.float64))
    assert d_logit(x32, y32) == d_logit(x32.astype(np.float64), y32.astype(np.float64))


@pytest.mark.parametrize("m", [2, 5, 8])  # the k-d tree (M + 1 <= 6 dimensions), the scan
def test_inner_product_neighbours_equal_the_dense_ranking(m, monkeypatch):
    from repdist.measures import extra
    from repdist.measures.extra import ip_knn_indices

    monkeypatch.setattr(extra, "IP_BLOCK_ELEMENTS", 7 * 400)  # the scan in blocks of 7 rows
    rng = np.random.default_rng(7)
    # norms from 0.01 to 3, and a zero row: a row's own product need not be its largest
    x = rng.normal(size=(400, m)) * rng.uniform(0.01, 3, size=(400, 1))
    x[5] = 0
    sim = x @ x.T
    np.fill_diagonal(sim, -np.inf)
    dense = np.argsort(-sim, axis=1, kind="stable")[:, :10]
    got = ip_knn_indices(x, 10)
    nonzero = np.arange(400) != 5  # row 5: every product is 0, any 10 others are right
    assert np.array_equal(got[nonzero], dense[nonzero])  # exact: integers
    assert 5 not in got[5] and len(set(got[5])) == 10
