"""Measures: agreement with a literal transcription of the spec, invariances, degenerate input."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.cross_decomposition import CCA

from repdist_dev import reference
from conftest import perturbed, random_model
from repdist.measures.extra import svcca
from repdist.measures import (
    RESULT_KEYS,
    DegenerateRepresentationWarning,
    compare,
    compare_prepared,
    log_likelihoods,
    mean_cca,
    mean_kl,
    prepare,
    prepared_cache,
)
from repdist.measures.cache import PreparedCache
from repdist.measures.llv import input_candidates, input_terms
from repdist.measures.svd import label_sets

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels


@pytest.mark.parametrize("dist_type,sum_or_max", [("max", "max"), ("mean", "max"), ("max", "sum")])
@pytest.mark.parametrize("k,m", [(5, 2), (7, 3)])
@pytest.mark.parametrize("relation", ["close", "unrelated"])
def test_compare_matches_literal_spec_transcription(dist_type, sum_or_max, k, m, relation):
    rng = np.random.default_rng(k * 10 + m)
    f1, g1 = random_model(rng, n=120, k=k, m=m)
    if relation == "close":
        f2, g2 = perturbed(rng, f1, g1, noise=0.4)
    else:  # independent models: every candidate scores > 1, so the scan keeps row 0
        f2, g2 = random_model(rng, n=120, k=k, m=m)
    got = compare(f1, g1, f2, g2, num_samples=15, lam=0.3, seed=7,
                  dist_type=dist_type, sum_or_max=sum_or_max)
    cands = input_candidates(120, m, 15, 7)
    want = reference.d_llv(f1, g1, f2, g2, cands, lam=0.3, dist_type=dist_type,
                           sum_or_max=sum_or_max)
    assert (got["y_pivot"], got["y_leave_out"]) == (want["y_pivot"], want["y_leave_out"])
    assert got["input_set"] == [int(i) for i in want["input_set"]]
    for key in ("d_llv", "t1", "t2", "t3", "t4"):
        assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-12), key
    assert got["kl"] == pytest.approx(reference.kl(f1, g1, f2, g2), rel=1e-9)
    want_svd_f = reference.m_svd_f(f1, g1, f2, g2, want["y_pivot"], want["y_leave_out"])
    np.testing.assert_allclose(got["m_svd_f"], want_svd_f, rtol=1e-9)
    want_svd_g = reference.m_svd_g(f1, g1, f2, g2, want["input_set"])
    assert got["m_svd_g"] == pytest.approx(want_svd_g, rel=1e-9)
    assert got["d_fg"] == pytest.approx(1 - min(min(want_svd_f), want_svd_g), abs=1e-9)


def test_result_has_every_documented_key(rng):
    f, g = random_model(rng)
    r = compare(f, g, *perturbed(rng, f, g), num_samples=20)
    assert tuple(r) == RESULT_KEYS
    assert len(r["input_set"]) == 3 and len(r["m_svd_f"]) == 6  # C(K-2=4, M=2)
    assert r["warning"] == ""


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(2, 4))
def test_linear_equivalence_gives_identity(seed, m):
    """(f', g') = (A f, A^{-T} g + b): same distribution, so m_CCA = 1 and d_LLV = d_fg = 0."""
    rng = np.random.default_rng(seed)
    f, g = random_model(rng, n=200, k=m + 4, m=m)
    a = rng.normal(size=(m, m)) + 2.0 * np.eye(m)
    if np.linalg.cond(a) > 1e3:
        a = np.eye(m) * 1.7
    f2 = f @ a.T
    g2 = g @ np.linalg.inv(a) + rng.normal(size=m)  # rows: A^{-T} g(y) + b
    r = compare(f, g, f2, g2, num_samples=20, seed=seed % 1000)
    assert r["mcca_f"] == pytest.approx(1.0, abs=1e-9)
    assert r["mcca_g"] == pytest.approx(1.0, abs=1e-9)
    assert r["d_llv"] == pytest.approx(0.0, abs=1e-6)
    assert r["d_fg"] == pytest.approx(0.0, abs=1e-9)
    assert abs(r["kl"]) < 1e-9
    assert r["d_logit"] == pytest.approx(0.0, abs=1e-9)  # same distribution: same centred logits
    assert svcca(f, f2, k=m) == pytest.approx(1.0, abs=1e-9)  # all PCs kept: GL-invariant
    assert 0.0 <= r["cka_f"] <= 1.0 + 1e-12  # ... linear CKA only orthogonally invariant


def test_kl_nonnegative_and_zero_for_equal_models(rng):
    f, g = random_model(rng, n=500, k=8)
    ll = log_likelihoods(f, g)
    assert mean_kl(ll, ll) == 0.0
    for _ in range(5):
        f2, g2 = perturbed(rng, f, g, noise=rng.uniform(0.01, 2))
        assert mean_kl(ll, log_likelihoods(f2, g2)) > 0


def test_kl_is_float64_accurate_for_near_identical_models(rng):
    """float32 log-likelihoods (the original's) give negative KL here; float64 must not."""
    f, g = random_model(rng, n=2000, k=10, f_scale=5, g_scale=5)
    f2 = f + 1e-6 * rng.normal(size=f.shape)
    kl = mean_kl(log_likelihoods(f, g), log_likelihoods(f2, g))
    assert 0 < kl < 1e-9


def test_log_likelihoods_normalised_and_stable(rng):
    f, g = random_model(rng, n=50, k=5)
    ll = log_likelihoods(f * 1e3, g)  # huge logits: naive exp overflows
    assert np.isfinite(ll).all()
    np.testing.assert_allclose(np.exp(ll).sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("m", [2, 3, 5])
def test_mean_cca_matches_sklearn_on_well_conditioned_data(m):
    rng = np.random.default_rng(m)
    x = rng.normal(size=(400, m))
    y = x @ rng.normal(size=(m, m)) + 0.8 * rng.normal(size=(400, m))
    cca = CCA(n_components=m, max_iter=5000, tol=1e-12).fit(x, y)
    u, v = cca.transform(x, y)
    want = np.mean([np.corrcoef(u[:, j], v[:, j])[0, 1] for j in range(m)])
    assert mean_cca(x, y) == pytest.approx(want, abs=1e-6)


def test_mean_cca_invariant_to_affine_maps(rng):
    x = rng.normal(size=(300, 3))
    y = np.tanh(x) + 0.2 * rng.normal(size=x.shape)
    a, b = rng.normal(size=(3, 3)) + 3 * np.eye(3), rng.normal(size=(3, 3)) + 3 * np.eye(3)
    assert mean_cca(x @ a + 5, y @ b - 2) == pytest.approx(mean_cca(x, y), abs=1e-10)


def test_seeded_runs_identical_and_seed_matters(rng):
    f, g = random_model(rng, n=400, k=6)
    f2, g2 = perturbed(rng, f, g, noise=0.5)
    r1 = compare(f, g, f2, g2, num_samples=50, seed=3)
    r2 = compare(f, g, f2, g2, num_samples=50, seed=3)
    r3 = compare(f, g, f2, g2, num_samples=50, seed=4)
    assert r1 == r2
    assert r1["input_set"] != r3["input_set"]


def test_prepared_models_give_the_same_answer_as_arrays(rng):
    f, g = random_model(rng)
    f2, g2 = perturbed(rng, f, g)
    m1, m2 = prepare(f, g), prepare(f2, g2)
    assert compare_prepared(m1, m2, num_samples=30) == compare(f, g, f2, g2, num_samples=30)


def test_given_pivot_and_input_set_are_used(rng):
    f, g = random_model(rng, k=6)
    f2, g2 = perturbed(rng, f, g)
    r = compare(f, g, f2, g2, y_pivot=4, y_leave_out=0, input_set=[5, 6, 7])
    assert (r["y_pivot"], r["y_leave_out"], r["input_set"]) == (4, 0, [5, 6, 7])
    want = reference.d_llv(f, g, f2, g2, np.array([[5, 6, 7]]))
    assert r["t2"] == pytest.approx(want["t2"], rel=1e-9)


def test_torch_tensors_are_accepted(rng):
    torch = pytest.importorskip("torch")
    f, g = random_model(rng)
    f2, g2 = perturbed(rng, f, g)
    as_t = [torch.tensor(a, dtype=torch.float32) for a in (f, g, f2, g2)]
    as_np = [t.numpy().astype(np.float64) for t in as_t]
    assert compare(*as_t, num_samples=20) == compare(*as_np, num_samples=20)


def test_scan_rule_keeps_first_row_when_no_score_below_threshold():
    # Candidate rows of two unrelated models: every score is large (> 1).
    rng = np.random.default_rng(0)
    rows_1 = rng.normal(size=(10, 3, 6))
    rows_2 = -rows_1 + rng.normal(size=rows_1.shape)
    scan = input_terms(rows_1, rows_2, threshold=1.0)
    assert (scan.scores > 1).all()
    assert int(np.argmin(scan.scores)) != 0  # so keeping row 0 is the rule, not chance
    assert scan.chosen == 0
    scan = input_terms(rows_1, rows_2, threshold=np.inf)
    assert scan.chosen == int(np.argmin(scan.scores))


def test_identical_models_tie_everywhere_and_take_the_first_choices(rng):
    """T(a, b) = 0 for all pairs and every candidate scores 0: smallest (a, b), first row."""
    f, g = random_model(rng, n=200, k=7)
    r = compare(f, g, f.copy(), g.copy(), num_samples=20, seed=5)
    assert (r["y_pivot"], r["y_leave_out"]) == (0, 1)
    assert r["input_set"] == input_candidates(200, 2, 20, 5)[0].tolist()
    assert r["d_llv"] == 0.0 and r["kl"] == 0.0


def test_too_few_labels_is_a_clear_error(rng):
    f, g = random_model(rng, k=3, m=2)
    with pytest.raises(ValueError, match="K-2 >= M"):
        compare(f, g, f, g)


def test_too_few_inputs_for_num_samples_is_a_clear_error(rng):
    f, g = random_model(rng, n=50, k=5)
    with pytest.raises(ValueError, match="exceeds the number of inputs"):
        compare(f, g, f, g, num_samples=20)


def test_mismatched_shapes_are_a_clear_error(rng):
    f, g = random_model(rng, n=50, k=5)
    with pytest.raises(ValueError, match="same inputs"):
        compare(f, g, f[:40], g, num_samples=5)
    with pytest.raises(ValueError, match="representation dimension"):
        compare(f, g[:, :1], f, g, num_samples=5)


def test_constant_embeddings_give_nan_with_a_warning(rng):
    f, g = random_model(rng, n=100, k=5)
    constant = np.ones_like(f)
    with pytest.warns(DegenerateRepresentationWarning, match="zero"):
        r = compare(f, g, constant, g, num_samples=10)
    assert np.isnan(r["d_llv"]) and np.isnan(r["d_fg"]) and np.isnan(r["mcca_f"])
    assert "rank-deficient" in r["warning"]


def test_nan_embeddings_give_nan_with_a_warning(rng):
    f, g = random_model(rng, n=100, k=5)
    bad = f.copy()
    bad[3, 1] = np.nan
    with pytest.warns(DegenerateRepresentationWarning, match="non-finite"):
        r = compare(f, g, bad, g, num_samples=10)
    assert all(np.isnan(r[k]) for k in ("kl", "d_llv", "d_fg", "mcca_f", "mcca_g"))
    assert "model 2" in r["warning"]


def test_healthy_pairs_raise_no_warning(rng):
    f, g = random_model(rng, n=100, k=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compare(f, g, *perturbed(rng, f, g), num_samples=10)


def test_degenerate_model_is_flagged_in_the_pairs_table(tmp_path, rng):
    """A collapsed seed gives NaN measures with a reason in `warning`; healthy pairs stay clean."""
    from repdist.experiments.pairs import compare_seeds
    from repdist.io.representations import embeddings_frame, unembeddings_frame

    emb, unemb, metrics = [], [], []
    for s in range(3):
        f, g = random_model(rng, n=200, k=5)
        if s == 2:
            f = np.zeros_like(f)  # collapsed embedding
        emb.append(tmp_path / f"e{s}.parquet")
        unemb.append(tmp_path / f"u{s}.parquet")
        embeddings_frame(f, np.zeros(200), np.zeros(200)).to_parquet(emb[-1])
        unembeddings_frame(g).to_parquet(unemb[-1])
        metrics.append({"final_test_loss": 1.0, "test_accuracy": 0.5})
    with pytest.warns(DegenerateRepresentationWarning):
        pairs = compare_seeds([0, 1, 2], emb, unemb, metrics, {"num_samples": 20})
    healthy = pairs[(pairs.seed_a == 0) & (pairs.seed_b == 1)].iloc[0]
    assert healthy["warning"] == "" and np.isfinite(healthy["d_llv"])
    broken = pairs[pairs.seed_b == 2]
    assert len(broken) == 2 and broken["d_llv"].isna().all()
    assert broken["warning"].str.contains("zero").all()


DOCUMENTED_KEYWORDS = {"num_samples": None, "lam": 1e-5, "seed": 0, "input_set": None,
                       "y_pivot": None, "y_leave_out": None, "dist_type": "max",
                       "sum_or_max": "max"}


@pytest.mark.parametrize("func", [compare, compare_prepared])
def test_compare_functions_show_the_documented_keywords(func):
    import inspect

    params = inspect.signature(func).parameters
    shown = {n: p.default for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
    assert {n: shown.get(n, "absent") for n in DOCUMENTED_KEYWORDS} == DOCUMENTED_KEYWORDS
    assert shown["max_label_sets"] is None and shown["measures"] is None  # the new ones
    assert shown["method"] == "auto" and shown["max_pivots"] == 512


def test_settings_are_checked_whichever_entry_point(rng):
    f, g = random_model(rng, n=100, k=5)
    m = prepare(f, g)
    with pytest.raises(TypeError, match="num_sample"):
        compare(f, g, f, g, num_sample=10)
    for call in (lambda **kw: compare(f, g, f, g, **kw), lambda **kw: compare_prepared(m, m, **kw)):
        with pytest.raises(ValueError, match="dist_type"):
            call(dist_type="median")
        with pytest.raises(ValueError, match="both y_pivot and y_leave_out"):
            call(y_pivot=1)


@pytest.mark.parametrize("name", [k for k in RESULT_KEYS if k != "warning"])
def test_each_measure_alone_equals_its_value_in_the_full_result(name, rng):
    f, g = random_model(rng, n=300, k=6, m=2)
    f2, g2 = perturbed(rng, f, g)
    full = compare(f, g, f2, g2, num_samples=30)
    alone = compare(f, g, f2, g2, num_samples=30, measures=[name])
    companions = {"m_svd_f": ["m_svd_label_sets", "d_fg_estimate"],
                  "d_fg": ["m_svd_label_sets", "d_fg_estimate"],
                  "mcca_f": ["mcca_f_components"], "mcca_g": ["mcca_g_components"]}.get(name, [])
    assert list(alone) == [name, *companions, "warning"]
    assert alone[name] == full[name]


def test_a_measures_subset_skips_the_work_of_the_others(rng, monkeypatch):
    """m_CCA alone: no k-NN graph, no pivot search, no covariance of the log-likelihoods."""
    import importlib

    prepared_module = importlib.import_module("repdist.measures.prepared")
    compare_module = importlib.import_module("repdist.measures.compare")

    def forbidden(*args, **kwargs):
        raise AssertionError("work for a measure that was not asked for")

    monkeypatch.setattr(prepared_module, "knn_indices", forbidden)
    monkeypatch.setattr(compare_module, "pivot_objective", forbidden)
    monkeypatch.setattr(compare_module, "input_terms", forbidden)
    prepared_cache.clear()  # earlier tests may have prepared these very arrays
    f, g = random_model(rng, n=300, k=6)
    f2, g2 = perturbed(rng, f, g)
    r = compare(f, g, f2, g2, measures="mcca_f,kl")
    assert list(r) == ["kl", "mcca_f", "mcca_f_components", "warning"]
    m = prepare(f, g, measures=["mcca_g"])
    assert "g_basis" in vars(m) and not {"knn", "loglik_cov", "f_basis"} & set(vars(m))
    with pytest.raises(AssertionError, match="not asked for"):
        compare(f, g, f2, g2, measures=["mutual_knn_f"])


def test_unknown_measure_is_a_clear_error(rng):
    f, g = random_model(rng, n=100, k=5)
    with pytest.raises(ValueError, match=r"unknown measure\(s\) \['d_lvl'\]"):
        compare(f, g, f, g, num_samples=10, measures=["kl", "d_lvl"])


def test_degenerate_pair_reports_only_the_asked_measures(rng):
    f, g = random_model(rng, n=100, k=5)
    bad = f.copy()
    bad[0, 0] = np.inf
    with pytest.warns(DegenerateRepresentationWarning, match="non-finite"):
        r = compare(f, g, bad, g, num_samples=10, measures=["d_llv", "input_set"])
    assert list(r) == ["d_llv", "input_set", "warning"] and np.isnan(r["d_llv"])


def test_plain_compare_reuses_prepared_models_of_a_repeated_pair(rng):
    f, g = random_model(rng, n=300, k=6)
    f2, g2 = perturbed(rng, f, g)
    prepared_cache.clear()
    first = compare(f, g, f2, g2, num_samples=30)
    assert prepared_cache.info()[:3] == (0, 2, 2)  # hits, misses, models
    again = compare(f, g, f2.copy(), g2, num_samples=30)  # equal content, another array
    assert prepared_cache.info()[:3] == (2, 2, 2)
    assert again == first


def test_an_array_mutated_in_place_is_prepared_afresh(rng):
    f, g = random_model(rng, n=300, k=6)
    f2, g2 = perturbed(rng, f, g)
    prepared_cache.clear()
    before = compare(f, g, f2, g2, num_samples=30)
    f2[:50] += 1.0  # same array object, new content
    g2 *= 1.5
    after = compare(f, g, f2, g2, num_samples=30)
    assert prepared_cache.info()[:2] == (1, 3)  # (f, g) unchanged: a hit; (f2, g2) prepared anew
    fresh = compare_prepared(prepare(f, g), prepare(f2, g2), num_samples=30)
    assert after == fresh and after["kl"] != before["kl"]


def test_prepared_models_own_read_only_copies(rng):
    f, g = random_model(rng, n=100, k=5)
    m = prepare(f, g)
    f[0, 0] += 10.0
    assert m.f[0, 0] == f[0, 0] - 10.0
    assert not m.f.flags.writeable and not m.g.flags.writeable


def test_cache_is_bounded_in_models_and_bytes(rng):
    models = [random_model(rng, n=200, k=5) for _ in range(4)]
    small = PreparedCache(max_models=3)
    for f, g in models:
        small.get(f, g)
    assert small.info().models == 3
    tiny = PreparedCache(max_models=10, max_bytes=1)
    for f, g in models:
        tiny.get(f, g)
    assert tiny.info().models == 2  # the two most recent are kept for the pair at hand
    small.get(*models[0])  # evicted first, so prepared again
    assert small.info().misses == 5


def test_m_svd_f_on_a_sample_of_label_sets_when_there_are_too_many(rng):
    """K = 14, M = 5: C(12, 5) = 792 label sets; a limit of 100 samples 100 of them."""
    from itertools import combinations

    f, g = random_model(rng, n=700, k=14, m=5)
    f2, g2 = perturbed(rng, f, g, noise=0.5)
    exact = compare(f, g, f2, g2, num_samples=30, seed=3)
    assert exact["m_svd_label_sets"] == 792 and exact["d_fg_estimate"] is False
    assert compare(f, g, f2, g2, num_samples=30, seed=3, max_label_sets=792) == exact
    sampled = compare(f, g, f2, g2, num_samples=30, seed=3, max_label_sets=100)
    assert sampled["m_svd_label_sets"] == 100 == len(sampled["m_svd_f"])
    assert sampled["d_fg_estimate"] is True
    assert min(sampled["m_svd_f"]) >= min(exact["m_svd_f"])
    assert sampled["d_fg"] <= exact["d_fg"]
    # each sampled value is the exact value of its label set
    position = {c: i for i, c in enumerate(combinations(range(12), 5))}
    sets = label_sets(14, 5, 100, seed=3)
    want = [exact["m_svd_f"][position[tuple(row)]] for row in sets.tolist()]
    np.testing.assert_allclose(sampled["m_svd_f"], want, rtol=1e-12)
    assert compare(f, g, f2, g2, num_samples=30, seed=3, max_label_sets=100) == sampled
    for key in ("d_llv", "kl", "m_svd_g", "mcca_f"):  # the rest does not depend on the limit
        assert sampled[key] == exact[key]


@pytest.mark.parametrize(
    "k,m,limit", [(14, 5, 100), (40, 3, 5_000), (30, 4, 1_000), (100, 8, 10_000)]
)
def test_sampled_label_sets_are_distinct_sorted_and_seeded(k, m, limit):
    sets = label_sets(k, m, limit, seed=11)
    assert sets.shape == (limit, m) and sets.min() >= 0 and sets.max() < k - 2
    assert (np.diff(sets, axis=1) > 0).all()  # each set's labels ascending
    assert len(np.unique(sets, axis=0)) == limit  # distinct sets
    assert (np.lexsort(sets.T[::-1]) == np.arange(limit)).all()  # rows in lexicographic order
    np.testing.assert_array_equal(label_sets(k, m, limit, seed=11), sets)  # exact: integers
    assert not np.array_equal(label_sets(k, m, limit, seed=12), sets)


def test_label_sets_below_the_limit_are_all_of_them_in_order():
    from itertools import combinations

    want = np.array(list(combinations(range(10), 3)))
    np.testing.assert_array_equal(label_sets(12, 3), want)  # exact: integers
    # exact: integers
    np.testing.assert_array_equal(label_sets(12, 3, max_sets=len(want), seed=5), want)


def test_label_set_limit_must_be_positive(rng):
    f, g = random_model(rng, n=100, k=5)
    with pytest.raises(ValueError, match="max_label_sets must be a positive integer"):
        compare(f, g, f, g, num_samples=10, max_label_sets=0)


def _cubic_objective(a_term, b_term, dist_type):
    """The pivot objective as one K x K x K reduction (the original formulation): the oracle."""
    k = a_term.shape[1]
    labels = np.arange(k)
    excluded = (labels[:, None, None] == labels[None, None, :]) | (
        labels[None, :, None] == labels[None, None, :]
    )
    if dist_type == "max":
        per_label = np.maximum(a_term, b_term)
        objective = np.where(excluded, -np.inf, per_label[:, None, :]).max(axis=2)
    else:
        summed = np.where(excluded, 0.0, (a_term + b_term)[:, None, :])
        objective = summed.sum(axis=2) / (2.0 * (k - 2))
    objective[labels, labels] = np.inf
    return objective


@pytest.mark.parametrize("dist_type", ["max", "mean"])
@pytest.mark.parametrize("k", [3, 4, 7, 30, 150])
def test_pivot_objective_without_the_cubic_array_is_bitwise_the_same(k, dist_type, rng):
    from repdist.measures.llv import _objective_from_terms

    for trial in range(6):
        a_term, b_term = rng.uniform(0, 2, (k, k)), rng.uniform(0, 2, (k, k))
        if trial >= 1:  # NaN labels: one per row, two in a row, on the diagonal
            a_term[rng.integers(0, k, 3), rng.integers(0, k, 3)] = np.nan
        if trial >= 2:
            b_term[1, [0, k - 1]] = np.nan
            a_term[2, 2] = np.nan
        if trial >= 3:  # ties for the largest value of a row
            a_term[0, 1:] = 5.0
        if trial == 5:  # rows that are all +inf (pivots not re-scored)
            a_term[k // 2] = b_term[k // 2] = np.inf
        want = _cubic_objective(a_term, b_term, dist_type)
        # exact: the same row sums, blocked
        np.testing.assert_array_equal(_objective_from_terms(a_term, b_term, dist_type), want)
        rows = np.array([0, k - 1])
        np.testing.assert_array_equal(  # exact: the same row sums, blocked
            _objective_from_terms(a_term[rows], b_term[rows], dist_type, rows), want[rows]
        )


def test_mean_objective_at_many_labels_is_the_running_sum(rng, monkeypatch):
    from repdist.measures import llv

    k = 40
    a_term, b_term = rng.uniform(0, 2, (k, k)), rng.uniform(0, 2, (k, k))
    a_term[3, 7] = np.nan
    a_term[5, [1, 2]] = np.nan
    want = _cubic_objective(a_term, b_term, "mean")
    monkeypatch.setattr(llv, "CUBIC_MEAN_MAX_LABELS", 10)
    got = llv._objective_from_terms(a_term, b_term, "mean")
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))  # exact: booleans


def test_absurd_label_counts_are_refused_before_any_work(rng):
    """K = 400,000 by the exact path: the K x K covariance alone would need 1.2 TiB (the
    default, low-rank at that K, holds nothing K x K)."""
    f, g = random_model(rng, n=50, k=400_000, m=2)
    with pytest.raises(MemoryError, match=r"N=50 inputs, K=400000 labels, M=2.*GiB"):
        prepare(f, g, method="exact")
    with pytest.raises(MemoryError, match=r"C\(98, 8\) = 157366449604 label sets"):
        label_sets(100, 8)  # every label set, no limit: ~1.6e11 of them


def test_a_pair_that_does_not_fit_is_a_memory_error_naming_its_sizes(rng, monkeypatch):
    from repdist.measures import memory

    f, g = random_model(rng, n=300, k=6)
    m1, m2 = prepare(f, g), prepare(*perturbed(rng, f, g))
    monkeypatch.setattr(memory, "CHECK_ABOVE", 0)
    monkeypatch.setattr(memory, "available_bytes", lambda: 1000)
    with pytest.raises(MemoryError, match=r"comparing models of N=300 inputs, K=6 labels, M=2"):
        compare_prepared(m1, m2, num_samples=20)
    with pytest.raises(MemoryError, match="preparing a model of N=300 inputs"):
        prepare(f, g)


def test_many_labels_and_dimensions_finish_quickly_on_sampled_label_sets(rng):
    """K = 100, M = 8: C(98, 8) ~ 1.6e11 label sets would never finish; 10,000 are sampled."""
    f, g = random_model(rng, n=2000, k=100, m=8)
    r = compare(f, g, *perturbed(rng, f, g), num_samples=100)
    assert r["m_svd_label_sets"] == 10_000 and r["d_fg_estimate"] is True
    assert np.isfinite(r["d_fg"]) and np.isfinite(r["d_llv"])


def test_exact_rows_without_a_cache_are_the_cached_numbers(rng):
    from repdist.measures.llv import exact_objective_rows

    f, g = random_model(rng, n=400, k=9, m=3)
    g[4] = g[6]  # tied unembeddings: a zero log-odds scale, NaN terms
    f2, g2 = perturbed(rng, f, g, noise=0.3)
    g2[4] = g2[6]
    ll_1, ll_2 = log_likelihoods(f, g), log_likelihoods(f2, g2)
    for dist_type in ("max", "mean"):
        pivots = np.array([0, 4, 6, 8])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the tied labels' 0/0
            cached = exact_objective_rows(ll_1, ll_2, pivots, dist_type, cache={})
            light = exact_objective_rows(ll_1, ll_2, pivots, dist_type)
        np.testing.assert_array_equal(light, cached)  # exact: the same formulas, buffers reused
        assert np.isnan(cached[4]).any() and np.isfinite(cached[0, 1:]).all()


def test_many_near_tied_pivots_are_rescored_one_at_a_time(rng, monkeypatch):
    """All K pivots near-tied (models 1e-9 apart): the same choice as scoring every row at
    once; identical models stop at the first row with T = 0."""
    from repdist.measures import llv

    f, g = random_model(rng, n=500, k=12, m=3)
    ll_1 = log_likelihoods(f, g)
    ll_2 = log_likelihoods(f + 1e-9 * rng.normal(size=f.shape), g)
    c1, c2 = ll_1 - ll_1.mean(0), ll_2 - ll_2.mean(0)
    fast = llv.pivot_objective(np.cov(c1.T), np.cov(c2.T), c1.T @ c2 / (len(c1) - 1))
    every_row = llv.exact_objective_rows(ll_1, ll_2, np.arange(12), "max", cache={})
    lowest = every_row.min()
    want = divmod(int(np.argmax(every_row.ravel() <= lowest * (1 + llv.TIE_RTOL))), 12)
    calls = []
    real = llv._exact_ab_terms
    monkeypatch.setattr(llv, "_exact_ab_terms", lambda *a: calls.append(a[2]) or real(*a))
    cache = {}
    assert llv.choose_pivot_and_leave_out(fast, ll_1, ll_2, "max", cache) == want
    assert calls == list(range(12)) and cache == {}  # every pivot, none kept
    calls.clear()
    same = llv.pivot_objective(np.cov(c1.T), np.cov(c1.T), c1.T @ c1 / (len(c1) - 1))
    assert llv.choose_pivot_and_leave_out(same, ll_1, ll_1.copy(), "max", {}) == (0, 1)
    assert calls == [0]


def test_mcca_runs_over_the_non_constant_coordinates(rng):
    """A folded bias (f' = [f, 1], repdist extract) adds a coordinate with no variance: m_CCA of
    f' equals m_CCA of f (the mean over M, not M + 1, components); a collapsed model stays NaN."""
    f1, g1 = random_model(rng, n=200, k=6)
    f2, g2 = perturbed(rng, f1, g1)
    ones = np.ones((200, 1))
    plain = compare(f1, g1, f2, g2, num_samples=10, measures=["mcca_f"])
    folded = compare(np.hstack([f1, ones]), np.hstack([g1, rng.normal(size=(6, 1))]),
                     np.hstack([f2, ones]), np.hstack([g2, rng.normal(size=(6, 1))]),
                     num_samples=10, measures=["mcca_f"])
    assert folded["mcca_f"] == pytest.approx(plain["mcca_f"], rel=1e-12)
    assert folded["warning"] == ""
    with pytest.warns(DegenerateRepresentationWarning, match="rank-deficient"):
        r = compare(np.ones_like(f1), g1, f2, g2, num_samples=10, measures=["mcca_f"])
    assert np.isnan(r["mcca_f"])


def test_the_package_exports_what_users_call_and_compare_only_its_own():
    """repdist.measures exports compare and its settings, preparing for many pairs, the cache,
    the warnings, the null's settings and the paper's named measures (README,
    docs/measures.md); the pivot search,
    label sets and bases stay in their modules; compare.py's __all__ re-exports nothing."""
    import importlib

    import repdist.measures as measures

    compare_module = importlib.import_module("repdist.measures.compare")  # not the function

    assert set(measures.__all__) == {
        "compare", "compare_prepared", "compare_with_settings", "CompareSettings", "prepare",
        "PreparedModel", "prepared_cache", "PRH_CONVENTIONS", "RESULT_KEYS",
        "DegenerateRepresentationWarning", "PivotSampleWarning", "NullSettings",
        "log_likelihoods", "mean_kl",
        "m_svd_f", "m_svd_g", "d_fg", "mean_cca"}
    for internal in ("input_candidates", "choose_pivot_and_leave_out", "label_sets",
                     "orthonormal_basis", "canonical_correlations", "PreparedCache"):
        assert not hasattr(measures, internal), internal
    own = [getattr(compare_module, name) for name in compare_module.__all__]
    assert all(thing.__module__ == "repdist.measures.compare" for thing in own)
