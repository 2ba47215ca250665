"""The permutation null (repdist.measures.null): every score beside its chance level.

Its statistics (tau, p, calibrated score) are Gröger, Wen and Brbić's (tests/test_null_reference.py
holds them to their package); here: a reordered model's carried-over pieces are the pieces of
the reordered model, p-values are uniform under the null, a model against an invertible map of
itself is as far from chance as K draws can say, the chance level of m_CCA grows with M/N as
theory says, exact tests over few labels, and reproducibility."""

from __future__ import annotations

import inspect
import warnings
from functools import cached_property

import numpy as np
import pytest
from scipy import stats

from repdist.measures import CompareSettings, compare, compare_with_settings, prepare
from repdist.measures.null import (
    DISTANCES,
    NULL_MEASURES,
    NullSettings,
    layers_null,
    null_settings,
    null_stats,
    pair_null,
    permutations,
)
from repdist.measures.null_batch import batched_null
from repdist.measures.prepared import (
    INPUT_ROWS,
    INPUT_SAME,
    LABEL_COLUMNS,
    LABEL_SAME,
    VIEW_ROWS,
    VIEW_SAME,
    AlignmentView,
    PreparedModel,
    permuted_inputs,
    permuted_labels,
)

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels

BATCHED = ("kl", "mcca_f", "mcca_g", "cka_f", "svcca_f", "mutual_knn_f", "cknna_f")
PRH = {"outlier_quantile": 0.95, "unit_rows": True, "svcca": "zscored", "svcca_components": 3}


def model(rng, n=120, m=3, k=6):
    return rng.normal(size=(n, m)), rng.normal(size=(k, m))


def close(a, b):
    return np.allclose(np.asarray(a, float), np.asarray(b, float), rtol=1e-9, atol=1e-12,
                       equal_nan=True)


def test_every_cached_piece_knows_how_it_follows_a_permutation():
    """A piece added to PreparedModel or AlignmentView later must say how a reordering carries
    it (or be computed afresh: the k-NN edge keys, the low-rank factors), or a null would
    silently reuse the unpermuted one."""
    def cached(cls):
        return {n for n, v in inspect.getmembers(cls) if isinstance(v, cached_property)}
    fresh_model = {"loglik_factors"}
    model_pieces = cached(PreparedModel)
    assert model_pieces <= set(INPUT_ROWS) | set(INPUT_SAME) | fresh_model
    assert model_pieces <= set(LABEL_COLUMNS) | set(LABEL_SAME) | fresh_model | {
        "loglik_cov", "g_spectrum", "g_basis"}
    fresh_view = {"_both_searches"}  # both neighbour lists at once, for knn_idx and ip_knn
    view_pieces = cached(AlignmentView)
    assert view_pieces <= set(VIEW_ROWS) | set(VIEW_SAME) | fresh_view | {
        "spectrum", "knn_idx", "knn", "ip_knn"}


@pytest.mark.parametrize("conventions", [{}, PRH, {"unit_rows": False, "outlier_quantile": 0.9}])
def test_a_reordered_model_measures_as_the_reordered_arrays_do(conventions):
    """Every measure of (m1, m2 with its inputs, or its labels, reordered from m2's pieces)
    equals compare() of the reordered arrays, prepared from scratch."""
    rng = np.random.default_rng(3)
    f1, g1 = model(rng)
    f2, g2 = model(rng)
    settings = CompareSettings(**conventions)
    m2 = prepare(f2, g2, conventions=settings.conventions)
    m2.warm(None, settings.conventions)
    m1 = prepare(f1, g1, conventions=settings.conventions)
    order = rng.permutation(len(f2))
    labels = rng.permutation(len(g2))
    for reordered, fresh in ((permuted_inputs(m2, order), (f2[order], g2)),
                             (permuted_labels(m2, labels), (f2, g2[labels]))):
        got = compare_with_settings(m1, reordered, settings)
        want = compare(f1, g1, *fresh, **conventions)
        for key in want:
            if key != "warning":
                assert close(got[key], want[key]), (key, got[key], want[key])


@pytest.mark.parametrize("conventions", [{}, PRH, {"unit_rows": False, "outlier_quantile": 0.9}])
def test_the_batched_draws_are_the_draw_by_draw_ones(conventions):
    """null_batch.py's D draws at once give every batched measure the tau, p and calibrated
    score of one compare() per draw, on the same orderings (inputs, and labels for m_CCA(g))."""
    rng = np.random.default_rng(12)
    f1, g1 = model(rng, n=90, m=3, k=7)
    f2, g2 = model(rng, n=90, m=3, k=7)
    f2 = f2 + 0.8 * f1  # related: p and the calibrated score not at their extremes
    batched = [m for m in BATCHED if m != "svcca_f" or conventions.get("svcca") != "zscored"]
    settings = CompareSettings(**conventions, null={"permutations": 30, "measures": batched})
    m1, m2 = prepare(f1, g1), prepare(f2, g2)
    observed = compare_with_settings(m1, m2, settings)

    def one_by_one(a, b, measures):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compare_with_settings(a, b, CompareSettings(**conventions, measures=measures))

    slow, _ = pair_null(m1, m2, observed, settings.null, one_by_one, settings.selected)
    assert set(slow) == {k for k in observed if k.endswith(("_tau", "_p", "_calibrated"))}
    for key, value in slow.items():
        assert observed[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    calls = []
    pair_null(m1, m2, observed, settings.null, lambda *a: calls.append(a), settings.selected,
              lambda m, orders: batched_null(m1, m2, m, orders, "auto", settings.conventions,
                                             False))
    assert not calls  # every one batched


def test_p_values_are_uniform_under_the_null():
    """Independent random representations: p of m_CCA, CKA and mutual k-NN uniform (KS), and
    the rate of p <= alpha within binomial bounds of alpha."""
    rng = np.random.default_rng(11)
    null = {"permutations": 39, "measures": ["mcca_f", "cka_f", "mutual_knn_f"], "seed": 5}
    ps = {m: [] for m in null["measures"]}
    pairs = 300
    for i in range(pairs):
        f1, g1 = model(rng, n=30, m=2, k=4)
        f2, g2 = model(rng, n=30, m=2, k=4)
        r = compare(f1, g1, f2, g2, measures=null["measures"], null={**null, "seed": i})
        for m in ps:
            ps[m].append(r[f"{m}_p"])
    for m, p in ps.items():
        p = np.array(p)
        # discrete p on {1/40, ..., 1}: compare with the uniform on its grid, jittered
        jittered = p - rng.uniform(0, 1 / 40, size=len(p))
        assert stats.kstest(jittered, "uniform").pvalue > 1e-3, (m, np.sort(p))
        rejected = int(np.sum(p <= 0.05))
        assert stats.binomtest(rejected, pairs, 0.05).pvalue > 1e-3, (m, rejected)


def test_a_model_against_an_invertible_map_of_itself_is_as_far_from_chance_as_k_allows():
    rng = np.random.default_rng(2)
    f, g = model(rng, n=200, m=4, k=7)
    a = rng.normal(size=(4, 4)) + 4 * np.eye(4)
    k = 99
    r = compare(f, g, f @ a, g @ np.linalg.inv(a).T,
                null={"permutations": k, "measures": ["mcca_f", "mcca_g", "d_llv", "kl"]})
    for m in ("mcca_f", "mcca_g", "d_llv", "kl"):
        assert r[f"{m}_p"] == pytest.approx(1 / (k + 1)), m
        assert r[f"{m}_calibrated"] == pytest.approx(1.0), m
    assert r["d_llv_tau"] > r["d_llv"] and r["mcca_f_tau"] < r["mcca_f"]


def test_the_chance_level_of_mcca_grows_with_m_over_n_as_theory_says():
    """Two independent uniformly random M-dimensional subspaces of the centred R^N: the mean
    squared canonical correlation is M / (N - 1) in expectation; m_CCA (their mean) is at most
    its root (Jensen), and the null's level rises with M."""
    rng = np.random.default_rng(4)
    n = 200
    levels = []
    for m in (2, 8, 32):
        f1, g1 = model(rng, n=n, m=m, k=m + 3)
        f2, g2 = model(rng, n=n, m=m, k=m + 3)
        m1, m2 = prepare(f1, g1), prepare(f2, g2)
        only = CompareSettings(measures=["mcca_f"])
        draws = np.array([compare_with_settings(m1, permuted_inputs(m2, rng.permutation(n)),
                                                only)["mcca_f"] for _ in range(60)])
        theory = np.sqrt(m / (n - 1))
        assert 0.6 * theory < draws.mean() < theory, (m, draws.mean(), theory)
        levels.append(compare_with_settings(m1, m2, CompareSettings(
            measures=["mcca_f"], null={"permutations": 60, "measures": ["mcca_f"]}))["mcca_f_tau"])
    assert levels[0] < levels[1] < levels[2]


def test_few_labels_are_enumerated_an_exact_test_that_says_when_it_cannot_reach_alpha():
    orders, count, exact = permutations(4, 200, seed=0)
    listed = {tuple(o) for o in orders}
    assert exact and count == 23 == len(listed) and (0, 1, 2, 3) not in listed
    assert permutations(5, 100, 0)[1:] == (100, False)  # 119 orderings > 100: drawn
    rng = np.random.default_rng(0)
    f1, g1 = model(rng, n=60, m=1, k=3)
    f2, g2 = model(rng, n=60, m=1, k=3)
    with pytest.warns(UserWarning, match="smallest p"):
        r = compare(f1, g1, f2, g2, measures=["mcca_g", "mcca_f"],
                    null={"measures": ["mcca_g", "mcca_f"]})
    assert r["mcca_g_p"] >= 1 / 6 and r["mcca_f_p"] >= 1 / 201
    assert "all 6 orderings of 3 labels" in r["warning"] and "above alpha 0.05" in r["warning"]


def test_the_null_is_reproducible_bit_for_bit_and_follows_its_seed():
    rng = np.random.default_rng(6)
    f1, g1 = model(rng)
    f2, g2 = model(rng)
    runs = [compare(f1, g1, f2, g2, null={"permutations": 30, "seed": s}) for s in (1, 1, 2)]
    assert runs[0] == runs[1]
    assert runs[0]["cka_f_tau"] != runs[2]["cka_f_tau"]
    assert {k for k in runs[0] if k.endswith("_calibrated")} == {
        f"{m}_calibrated" for m in ("kl", "mcca_f", "mcca_g", "cka_f", "svcca_f",
                                    "mutual_knn_f")}  # the default: config.yaml's too


def test_tau_p_and_the_calibrated_score_by_their_definitions():
    null = np.arange(1.0, 20.0) / 20  # 19 null scores 0.05 .. 0.95
    tau, p, cal = null_stats(0.97, null, alpha=0.05)  # ceil(0.95 * 20) = the 19th of 20
    assert tau == 0.95 and p == 1 / 20 and cal == pytest.approx(0.02 / 0.05)
    tau, p, cal = null_stats(0.97, null, alpha=0.1)  # the 18th of 20
    assert tau == 0.9 and p == 1 / 20 and cal == pytest.approx(0.07 / 0.1)
    assert null_stats(0.5, null, alpha=0.05)[1:] == (11 / 20, 0.0)  # 0.50 .. 0.95 and itself
    tau, p, cal = null_stats(0.01, null, alpha=0.1, distance=True)  # 2nd smallest
    assert tau == 0.05 and p == 1 / 20 and cal == pytest.approx(0.8)
    assert np.isnan(null_stats(float("nan"), null, 0.05)[0])
    assert DISTANCES <= set(NULL_MEASURES)


def test_the_best_of_many_layer_pairs_pays_for_the_search():
    """Algorithm 2: the maximum over layer pairs of independent representations is no more
    significant than one pair, while its raw value is higher."""
    rng = np.random.default_rng(8)
    n = 60
    xs = [rng.normal(size=(n, 4)) for _ in range(4)]
    ys = [rng.normal(size=(n, 4)) for _ in range(4)]

    def table(order):
        return np.array([[compare(x, np.eye(4), y if order is None else y[order], np.eye(4),
                                  measures=["cka_f"])["cka_f"] for y in ys] for x in xs])

    settings = NullSettings(permutations=39, seed=1)
    best, tau, p, _ = layers_null(table, n, settings)
    assert best == table(None).max() and p > 0.05 and tau >= best * 0.9
    with pytest.raises(ValueError, match="aggregate"):
        layers_null(table, n, settings, aggregate="median")


@pytest.mark.parametrize("bad, message", [
    ({"permutations": -1}, "permutations must be an integer >= 0"),
    ({"permutations": 2.5}, "permutations"),
    ({"alpha": 1.5}, "alpha must be a number in"),
    ({"measures": ["m_cca"]}, r"unknown \['m_cca'\]"),
    ({"seed": "x"}, "seed must be an integer"),
])
def test_bad_null_settings_are_refused_naming_the_setting(bad, message):
    with pytest.raises(ValueError, match=message):
        CompareSettings(null=bad)
    assert null_settings({"permutations": 0}) is None
    assert CompareSettings().null is None
