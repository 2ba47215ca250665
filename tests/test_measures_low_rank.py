"""The low-rank path of compare (measures/low_rank.py): the measures at vocabulary scale from
rank-(M+1) factors, streamed logits and covariances, checked against the exact path."""

from __future__ import annotations

import numpy as np
import pytest

from repdist.measures import compare, prepare
from repdist.measures import low_rank as lr
from repdist.measures.cca import covariance_cca, mean_cca
from repdist.measures.compare import CompareSettings, PivotSampleWarning, candidate_count
from repdist.measures.loglik import log_likelihoods, logsumexp_rows, mean_kl

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels

SCALARS = ("kl", "d_llv", "t1", "t2", "t3", "t4", "m_svd_g", "d_fg", "mcca_f", "mcca_g",
           "d_logit")
INDICES = ("y_pivot", "y_leave_out", "input_set", "m_svd_label_sets", "d_fg_estimate")


def pair(seed: int, n: int = 1500, k: int = 120, m: int = 5, noise: float = 0.3):
    """Two models whose f and g differ by an invertible map plus noise (so the measures are
    neither trivial nor degenerate)."""
    rng = np.random.default_rng(seed)
    f1 = rng.normal(size=(n, m))
    g1 = rng.normal(size=(k, m)) * 1.5 / np.sqrt(m)
    a = rng.normal(size=(m, m)) + 2 * np.eye(m)
    f2 = f1 @ a + noise * rng.normal(size=(n, m))
    g2 = g1 @ np.linalg.inv(a).T + noise / 3 * rng.normal(size=(k, m))
    return f1, g1, f2, g2


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dist_type", ["max", "mean"])
def test_low_rank_equals_exact_when_every_pivot_is_searched(seed, dist_type):
    f1, g1, f2, g2 = pair(seed)
    common = dict(dist_type=dist_type, max_label_sets=40)
    exact = compare(f1, g1, f2, g2, method="exact", **common)
    low = compare(f1, g1, f2, g2, method="low_rank", max_pivots=10_000, **common)
    for key in SCALARS:
        assert low[key] == pytest.approx(exact[key], rel=1e-9, abs=1e-10), key
    for key in INDICES:
        assert low[key] == exact[key], key
    np.testing.assert_allclose(low["m_svd_f"], exact["m_svd_f"], rtol=1e-9, atol=1e-12)


def test_identical_models_are_at_distance_zero():
    f1, g1, _, _ = pair(3)
    r = compare(f1, g1, f1.copy(), g1.copy(), method="low_rank", max_label_sets=20)
    assert r["kl"] == 0.0
    assert r["d_llv"] == pytest.approx(0.0, abs=1e-6)
    assert r["mcca_f"] == pytest.approx(1.0) and r["mcca_g"] == pytest.approx(1.0)
    assert r["d_fg"] == pytest.approx(0.0, abs=1e-9)
    assert r["d_logit"] == pytest.approx(0.0, abs=1e-5)


def test_sampled_pivots_can_only_raise_t1():
    """t1 minimises over pivots: a sample of them ("mean", or "max" past its budget) finds the
    minimum or something above it, and says so."""
    f1, g1, f2, g2 = pair(4, k=200)
    for dist_type in ("mean", "max"):
        full = compare(f1, g1, f2, g2, method="low_rank", max_pivots=10_000, measures="t1",
                       dist_type=dist_type)
        for seed in range(3):
            with pytest.warns(PivotSampleWarning, match="max_pivots=3 of K=200"):
                sampled = compare(f1, g1, f2, g2, method="low_rank", max_pivots=3, seed=seed,
                                  measures="t1,y_pivot", dist_type=dist_type)
            assert sampled["t1"] >= full["t1"] - 1e-12


@pytest.mark.parametrize("seed", range(6))
def test_the_bounded_search_finds_the_exact_pivot_without_every_row(seed):
    """dist_type "max": branch and bound over pivots gives the pivot (and t1) of the search
    over every pivot, having computed fewer rows."""
    f1, g1, f2, g2 = pair(10 + seed, n=800, k=700, m=4)
    a, b = prepare(f1, g1, method="low_rank"), prepare(f2, g2, method="low_rank")
    every = lr.low_rank_label_side(a.loglik_factors, b.loglik_factors, "max", 700, seed)
    bounded = lr.low_rank_label_side(a.loglik_factors, b.loglik_factors, "max", 600, seed)
    assert bounded.proven and bounded.pivots_searched < 700
    assert (bounded.y_pivot, bounded.y_leave_out) == (every.y_pivot, every.y_leave_out)
    assert bounded.terms == every.terms


def test_auto_takes_the_low_rank_path_above_the_threshold_and_never_builds_n_by_k(monkeypatch):
    monkeypatch.setattr(lr, "LOW_RANK_ABOVE_LABELS", 100)
    f1, g1, f2, g2 = pair(5, k=101)
    model = prepare(f1, g1)
    assert "loglik" not in model.__dict__
    auto = compare(f1, g1, f2, g2, max_label_sets=10)
    low = compare(f1, g1, f2, g2, method="low_rank", max_label_sets=10)
    assert {k: v for k, v in auto.items() if k != "m_svd_f"} == {
        k: v for k, v in low.items() if k != "m_svd_f"}
    small = prepare(*pair(5, k=100)[:2])
    assert "loglik" in small.__dict__  # the exact path keeps the paper's arrays


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_streamed_kl_and_lse_equal_the_direct_ones_across_blocks(monkeypatch, backend):
    """With torch (every venv) and without (the measures' conda env): the same numbers."""
    if backend == "numpy":
        monkeypatch.setattr(lr, "_array_ops", lr._NumpyOps)
    monkeypatch.setattr(lr, "STREAM_LABELS", 7)  # 120 labels in 18 blocks, the last short
    f1, g1, f2, g2 = pair(6)
    f1, f2 = 4 * f1, 4 * f2  # sharp distributions: the running maximum moves between blocks
    kl, lse1, lse2 = lr.streamed_kl(f1, g1, f2, g2)
    np.testing.assert_allclose(lse1, logsumexp_rows(f1 @ g1.T)[:, 0], rtol=1e-13)
    np.testing.assert_allclose(lse2, logsumexp_rows(f2 @ g2.T)[:, 0], rtol=1e-13)
    assert kl == pytest.approx(mean_kl(log_likelihoods(f1, g1), log_likelihoods(f2, g2)),
                               rel=1e-11)
    # exact: the same pass over blocks
    np.testing.assert_allclose(lr.streamed_lse(f1, g1), lse1, rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_logits_far_below_their_maximum_stream_to_the_direct_kl(monkeypatch, backend):
    """Logits spread over thousands (most weights exp(z - max) underflow, where the stream
    floors exp's argument at EXP_FLOOR): the same KL and lse as the direct computation."""
    if backend == "numpy":
        monkeypatch.setattr(lr, "_array_ops", lr._NumpyOps)
    monkeypatch.setattr(lr, "STREAM_LABELS", 16)
    f1, g1, f2, g2 = pair(8)
    f1, f2 = 300 * f1, 300 * f2 + 1.0
    z1 = f1 @ g1.T
    assert np.mean(z1 - z1.max(axis=1, keepdims=True) < lr.EXP_FLOOR) > 0.5
    kl, lse1, lse2 = lr.streamed_kl(f1, g1, f2, g2)
    np.testing.assert_allclose(lse1, logsumexp_rows(z1)[:, 0], rtol=1e-13)
    np.testing.assert_allclose(lse2, logsumexp_rows(f2 @ g2.T)[:, 0], rtol=1e-13)
    assert kl == pytest.approx(mean_kl(log_likelihoods(f1, g1), log_likelihoods(f2, g2)),
                               rel=1e-11)


def test_the_covariance_over_labels_summed_by_blocks_is_the_covariance(monkeypatch):
    """label_covariance over blocks of labels (the last one short) equals numpy's covariance,
    a model's own exactly symmetric; far from zero means do not leak into it."""
    monkeypatch.setattr(lr, "COV_LABELS", 7)
    rng = np.random.default_rng(9)
    g1, g2 = rng.normal(size=(120, 5)) + 40.0, rng.normal(size=(120, 4)) - 3.0
    own = lr.label_covariance(g1, g1)
    np.testing.assert_allclose(own, np.cov(g1.T), rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(own, own.T)  # exact: numpy's c^T c is a symmetric product
    np.testing.assert_allclose(lr.label_covariance(g1, g2), np.cov(g1.T, g2.T)[:5, 5:],
                               rtol=1e-12, atol=1e-13)


def test_covariance_cca_equals_the_svd_one_and_names_a_lost_rank():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(500, 6))
    y = x @ rng.normal(size=(6, 6)) + 0.5 * rng.normal(size=(500, 6))

    def cov(a, b):
        return (a - a.mean(0)).T @ (b - b.mean(0)) / (len(a) - 1)

    value, why = covariance_cca(cov(x, x), cov(y, y), cov(x, y), 6)
    assert why == "" and value == pytest.approx(mean_cca(x, y), rel=1e-10)
    flat = x.copy()
    flat[:, 5] = flat[:, 0]  # rank 5
    value, why = covariance_cca(cov(flat, flat), cov(y, y), cov(flat, y), 6)
    assert np.isnan(value) and "rank 5 < 6" in why


def test_defaults_fit_the_inputs_and_labels_they_are_given():
    s = CompareSettings()
    assert candidate_count(s, 10_000, 768) == 13 and candidate_count(s, 10**6, 768) == 200
    assert candidate_count(CompareSettings(num_samples=50), 10_000, 768) == 50
    assert lr.default_label_sets(768, True) == 18 and lr.default_label_sets(768, False) == 10_000
    assert lr.default_label_sets(8, True) == 10_000
    with pytest.raises(ValueError, match="max_pivots"):
        CompareSettings(max_pivots=0)
    with pytest.raises(ValueError, match="method"):
        CompareSettings(method="fast")


def test_a_model_whose_logits_overflow_is_named_on_the_low_rank_path():
    f1, g1, f2, g2 = pair(8)
    with pytest.warns(UserWarning, match="overflow"):
        r = compare(f1 * 1e200, g1 * 1e200, f2, g2, method="low_rank", max_label_sets=5)
    assert np.isnan(r["kl"]) and "overflow" in r["warning"]


def test_the_bound_never_exceeds_a_pivot_row_minimum():
    """What makes the bounded search exact: for every pivot and any label subset, the bound is
    at most the pivot's row minimum (its best left-out label) under dist_type "max"."""
    f1, g1, f2, g2 = pair(20, n=600, k=300, m=4)
    a, b = prepare(f1, g1, method="low_rank"), prepare(f2, g2, method="low_rank")
    search = lr.PivotSearch(lr.PivotRows(a.loglik_factors, b.loglik_factors), 300, "max")
    search.evaluate(np.arange(300))
    rng = np.random.default_rng(0)
    for size in (2, 17, 100, 300):
        bounds = search.lower_bounds(np.sort(rng.choice(300, size, replace=False)))
        assert (bounds <= search.lowest * (1 + 1e-12)).all()
    assert (bounds >= 0.9 * search.lowest).mean() > 0.5  # over every label: mostly tight


def test_only_m_svd_f_asks_for_more_labels_than_dimensions():
    """K - 2 < M leaves no label set for m_SVD_f; KL, d_LLV and m_CCA are defined there."""
    f1, g1, f2, g2 = pair(30, n=400, k=6, m=5)
    r = compare(f1, g1, f2, g2, measures="kl,d_llv,mcca_f,mcca_g,m_svd_g")
    assert all(np.isfinite(r[key]) for key in ("kl", "d_llv", "mcca_f", "mcca_g", "m_svd_g"))
    with pytest.raises(ValueError, match="K-2 >= M"):
        compare(f1, g1, f2, g2, measures="d_fg")
