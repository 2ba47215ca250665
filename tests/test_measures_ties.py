"""Decisions that do not depend on rounding: ties, zero variances and thresholds in the measures
are taken against tolerances relative to the data's scale (docs/measures.md, "Ties, zeros and
thresholds"), so that values equal to rounding get the answer that exactly equal values get, on
the numpy path and the torch path, under any CPU's kernels (`make test-kernels` runs this
module under OpenBLAS', numpy's and torch's kernels for other processors)."""

from __future__ import annotations

import numpy as np
import pytest

from repdist.measures import compare, extra, prepare
from repdist.measures import low_rank as lr
from repdist.measures.cca import constant_columns
from repdist.measures.extra import (
    components_for_variance,
    ip_knn_indices,
    knn_edge_keys,
    knn_indices,
    knn_indices_blockwise,
    linear_cka,
    unit_rows,
)
from repdist.measures.llv import NEAR_ZERO_FACTOR, ZERO_VARIANCE_RTOL, near_tied_labels
from repdist.measures.null import null_stats
from repdist.measures.prepared import AlignmentView

from test_measures_low_rank import pair

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels

TIE = (3, 9, 11)  # three labels sharing model 1's unembedding row


def tied_rows(g: np.ndarray, labels: tuple[int, ...], noise: float, seed: int = 7) -> np.ndarray:
    """g with the rows `labels` set to the first one's, each then moved by `noise` relative to
    its norm (0: exactly tied; 1e-12: tied to rounding)."""
    g = g.copy()
    rng = np.random.default_rng(seed)
    for label in labels[1:]:
        g[label] = g[labels[0]] * (1.0 + noise * rng.normal(size=g.shape[1]))
    return g


def pivot_minima(g_noise: float, dist_type: str, device: str | None) -> np.ndarray:
    f1, g1, f2, g2 = pair(1, n=800, k=300, m=4)
    g1 = tied_rows(g1, TIE, g_noise)
    a, b = prepare(f1, g1, method="low_rank"), prepare(f2, g2, method="low_rank")
    rows = lr.PivotRows(a.loglik_factors, b.loglik_factors)
    search = (lr.PivotSearch(rows, 300, dist_type) if device is None
              else lr.DevicePivotSearch(rows, 300, dist_type, device))
    search.evaluate(np.arange(300))
    return search.lowest


@pytest.mark.parametrize("dist_type", ["max", "mean"])
def test_rows_tied_to_rounding_get_the_exact_ties_pivot_rows_on_both_paths(dist_type):
    """Every pivot's row minimum with three labels tied exactly, and tied to 1e-12: the NaN
    rule (a row through two tied labels has no usable left-out label: inf) fires on the same
    rows, numpy and torch alike, and the other rows agree."""
    exact = pivot_minima(0.0, dist_type, None)
    assert np.isinf(exact[list(TIE)]).all() and np.isfinite(np.delete(exact, TIE)).all()
    for noise, device in ((0.0, "cpu"), (1e-12, None), (1e-12, "cpu")):
        got = pivot_minima(noise, dist_type, device)
        np.testing.assert_array_equal(np.isinf(got), np.isinf(exact))  # exact: booleans
        np.testing.assert_allclose(got[np.isfinite(got)], exact[np.isfinite(exact)], rtol=1e-9)


def tied_pair(noise: float, k: int = 16):
    f1, g1, f2, g2 = pair(3, n=600, k=k, m=3)
    return f1, tied_rows(g1, TIE, noise), f2, g2


@pytest.mark.parametrize("method", ["exact", "low_rank"])
def test_a_compare_with_labels_tied_to_rounding_is_the_exactly_tied_one(method):
    """compare() of a pair whose model 1 has three tied labels: the same pivot, left-out label
    and d_LLV when they are tied to 1e-12 as when exactly, on both paths; at a pivot through
    the tie the NaN rule fires in both."""
    common = dict(method=method, max_pivots=10_000, measures="d_llv,t1,t3,y_pivot,y_leave_out")
    exact = compare(*tied_pair(0.0), **common)
    near = compare(*tied_pair(1e-12), **common)
    assert (near["y_pivot"], near["y_leave_out"]) == (exact["y_pivot"], exact["y_leave_out"])
    assert np.isfinite(exact["d_llv"]) and near["d_llv"] == pytest.approx(exact["d_llv"],
                                                                          rel=1e-9)
    with pytest.warns(UserWarning, match="d_LLV undefined"):
        through = compare(*tied_pair(1e-12), y_pivot=3, y_leave_out=9, **common)
    assert np.isnan(through["t1"]) and np.isnan(through["d_llv"])


def test_the_exact_and_low_rank_paths_choose_alike_between_labels_tied_to_rounding():
    exact = compare(*tied_pair(1e-12), method="exact", measures="d_llv,y_pivot,y_leave_out")
    low = compare(*tied_pair(1e-12), method="low_rank", max_pivots=10_000,
                  measures="d_llv,y_pivot,y_leave_out")
    assert (low["y_pivot"], low["y_leave_out"]) == (exact["y_pivot"], exact["y_leave_out"])
    assert low["d_llv"] == pytest.approx(exact["d_llv"], rel=1e-7)


def near_tolerance_pair(ratio: float):
    """A pair whose model 1 has labels 5 and 7 `ratio` x the columns' variances apart
    (near_tied_labels' ratio): g7 = g5 + a step, scaled to it (the ratio goes as its square)."""
    f1, g1, f2, g2 = pair(4, n=600, k=16, m=3)
    step = np.random.default_rng(0).normal(size=3) * 1e-3 * np.linalg.norm(g1[5]) / np.sqrt(3)

    def moved(scale: float) -> np.ndarray:
        g = g1.copy()
        g[7] = g[5] + scale * step
        return g

    loglik = prepare(f1, moved(1.0)).loglik
    centred = loglik - loglik.mean(axis=0)
    first = centred[:, 7] - centred[:, 5]
    r0 = first.var(ddof=1) / (centred[:, 7].var(ddof=1) + centred[:, 5].var(ddof=1))
    return f1, moved(np.sqrt(ratio / r0)), f2, g2


@pytest.mark.parametrize("method", ["exact", "low_rank"])
def test_a_decision_on_the_knife_edge_says_so_in_the_warning_column(method):
    """Labels 5 and 7 whose log-odds variance sits within NEAR_ZERO_FACTOR of the tolerance
    (3x above it): the result says that d_LLV's NaN rule for them could go either way; well
    away from it (1e-4), nothing is said."""
    f1, g1, f2, g2 = near_tolerance_pair(3 * ZERO_VARIANCE_RTOL)
    near = near_tied_labels(np.cov(prepare(f1, g1).loglik.T))
    ratio = [r for a, y, r in near if (a, y) == (5, 7)]
    assert ratio and ZERO_VARIANCE_RTOL < ratio[0] < NEAR_ZERO_FACTOR * ZERO_VARIANCE_RTOL
    common = dict(method=method, max_pivots=10_000, measures="d_llv")
    with pytest.warns(UserWarning, match="labels 5 and 7"):
        r = compare(f1, g1, f2, g2, y_pivot=5, y_leave_out=0, **common)
    assert "nearly tied" in r["warning"] and "model 1" in r["warning"]
    assert compare(*near_tolerance_pair(1e-4), y_pivot=5, y_leave_out=0, **common)["warning"] == ""


@pytest.mark.parametrize("method", ["exact", "low_rank"])
def test_inputs_mapped_alike_to_rounding_are_the_exactly_alike_ones(method):
    """The input side: a diversity set holding two inputs whose embeddings are equal (tau = 0:
    no log-odds over labels between them), exactly or to 1e-12, is unscored in both."""
    f1, g1, f2, g2 = pair(5, n=600, k=16, m=3)
    given = [0, 1, 2, 3]
    for noise in (0.0, 1e-12):
        f = f1.copy()
        f[2] = f[0] * (1.0 + noise * np.array([1.0, -1.0, 0.5]))
        with pytest.warns(UserWarning, match="d_LLV undefined"):
            r = compare(f, g1, f2, g2, input_set=given, method=method, measures="t2")
        assert np.isnan(r["t2"]), noise


def test_neighbours_tied_to_rounding_are_taken_by_index_on_every_search():
    """Rows 50-52 copy row 10, exactly or up to 1e-14: row 10's nearest neighbours are them
    in order of index, the same from the k-d tree and the blockwise scan, and the neighbour
    lists equal those of the exact copies; by inner product too (the copies, wherever they
    are neighbours, come in order of index)."""
    x = np.random.default_rng(0).normal(size=(300, 3))
    x[10] *= 4.0 / np.linalg.norm(x[10])  # long: among most rows' inner-product neighbours
    exact, near = x.copy(), x.copy()
    exact[[50, 51, 52]] = x[10]
    near[[50, 51, 52]] = x[10] * (1.0 + np.array([[1e-14], [-1e-14], [3e-15]]))
    want = knn_indices(exact, 10)
    assert want[10, :3].tolist() == [50, 51, 52] and want[51, :3].tolist() == [10, 50, 52]
    np.testing.assert_array_equal(knn_indices(near, 10), want)  # exact: integers
    # exact: integers
    np.testing.assert_array_equal(knn_indices_blockwise(unit_rows(near), 10, block=64), want)
    ip = ip_knn_indices(near, 10)
    np.testing.assert_array_equal(ip, ip_knn_indices(exact, 10))  # exact: integers
    copies = [[j for j in row if j in (10, 50, 51, 52)] for row in ip]
    assert all(c == sorted(c) for c in copies) and max(map(len, copies)) >= 3


@pytest.mark.parametrize("top_set", ["torch.topk", "numpy.argpartition"])
def test_one_scan_for_both_searches_gives_each_searchs_neighbours(monkeypatch, top_set):
    """knn_both_blockwise (one pass over x x^T for the cosine and the inner-product neighbours,
    as a prepared model searches beyond the k-d trees' dimension) equals knn_indices and
    ip_knn_indices row for row: with copies of a row exact or to 1e-14, a row scaled (a tie by
    cosine only) and a zero row, whichever way a block's top set is taken."""
    if top_set == "numpy.argpartition":
        monkeypatch.setattr(extra, "_torch_worth_importing", lambda elements: None)
    else:
        monkeypatch.setattr(extra, "TOPK_TORCH_ELEMENTS", 0)
    x = np.random.default_rng(5).normal(size=(400, 24))
    x[[50, 51, 52]] = x[10] * (1.0 + np.array([[0.0], [1e-14], [-3e-15]]))
    x[60] = 3.0 * x[11]
    x[70] = 0.0
    by_cosine, by_product = extra.knn_both_blockwise(x, 10, block=64)
    assert by_cosine[10, :3].tolist() == [50, 51, 52] and by_cosine[11, 0] == 60
    np.testing.assert_array_equal(by_cosine, knn_indices(x, 10))  # exact: integers
    np.testing.assert_array_equal(by_product, ip_knn_indices(x, 10))  # exact: integers
    view = AlignmentView(x)  # what compare() reads: the two lists from the one scan
    np.testing.assert_array_equal(view.knn_idx, by_cosine)  # exact: integers
    np.testing.assert_array_equal(view.ip_knn, knn_edge_keys(by_product))  # exact: integers


def test_a_constant_representation_up_to_rounding_is_constant():
    """Centring a constant leaves rounding (0.1's mean is not 0.1 exactly): CKA is NaN for it
    as for an exact zero, and a coordinate constant to rounding is a constant coordinate."""
    rng = np.random.default_rng(2)
    x = np.full((97, 3), 0.1) * (1.0 + 1e-16 * rng.choice([-1.0, 0.0, 1.0], size=(97, 3)))
    assert np.linalg.norm(x - x.mean(axis=0)) > 0  # rounding did leave something
    assert np.isnan(linear_cka(x, rng.normal(size=(97, 3))))
    r = compare(x, rng.normal(size=(5, 3)), rng.normal(size=(97, 3)), rng.normal(size=(5, 3)),
                measures="cka_f")
    assert np.isnan(r["cka_f"])
    folded = np.column_stack([rng.normal(size=(97, 2)), x[:, 0]])
    assert constant_columns(folded) == 1


@pytest.mark.parametrize("excess", [0.0, 4e-14])
def test_a_share_of_variance_at_the_threshold_reaches_it(excess):
    """Singular values sqrt(99) and sqrt(1 + excess) in random orientations: the first
    component explains 0.99, exactly or but for 4e-16 (rounding), and one SVCCA component
    is kept every time, by the function and by a prepared view (from the singular values of
    the SVD it keeps for m_CCA)."""
    counts = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        u, _ = np.linalg.qr(rng.normal(size=(200, 2)) - rng.normal(size=(200, 2)).mean(axis=0))
        u, _ = np.linalg.qr(u - u.mean(axis=0))
        rotation = np.linalg.qr(rng.normal(size=(2, 2)))[0]
        values = np.diag(np.sqrt([99.0, 1.0 + excess]))
        x = u @ values @ rotation
        counts += [components_for_variance(x), AlignmentView(x).svcca_kept]
    assert counts == [1] * 40


def test_a_null_draw_equal_to_the_observed_to_rounding_counts_as_extreme():
    """A draw 1e-15 on the less extreme side of the observed score ties with it: p counts it,
    for a similarity and for a distance."""
    _, p, _ = null_stats(0.5, np.array([0.5 - 1e-15, 0.1, 0.2, 0.3]), 0.05)
    assert p == pytest.approx(2 / 5)
    _, p, _ = null_stats(0.5, np.array([0.5 + 1e-15, 0.9, 0.8, 0.7]), 0.05, distance=True)
    assert p == pytest.approx(2 / 5)
