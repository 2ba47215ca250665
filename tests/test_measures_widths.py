"""Models of different widths (issue 42): the same N inputs and K labels, f and g of M = 8 and
M = 12. KL, d_LLV (its diversity sets of max(M) + 1 inputs) and the f-side alignment measures
are defined for any two widths; m_SVD and d_{f,g} compare sets of one M: NaN, one warning."""

import warnings

import numpy as np
import pandas as pd
import pytest

from repdist_dev import reference
from repdist.cli import main
from repdist.measures import DegenerateRepresentationWarning, compare
from repdist.measures.compare import SampleSizeWarning
from repdist.measures.llv import input_candidates
from repdist.measures.extra import linear_cka
from repdist.measures.loglik import log_likelihoods, mean_kl

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels

K, N, SAMPLES, SEED = 16, 400, 6, 3


@pytest.fixture(scope="module")
def two_widths():
    """Two synthetic MLPs of the paper's family (models/mlp.py), M = 8 and M = 12, on the same
    radial inputs: f (N x M) and g (K x M), float32 values."""
    from repdist.data.radial import label_codes, make_radial
    from repdist.models.extract import extract
    from repdist.models.mlp import build_synthetic_model

    data = make_radial(N, K, 0)
    codes = label_codes(np.arange(K), K)
    return [extract(build_synthetic_model(seed, K, 32, m, 0.0, 0.0), data.x, codes)
            for seed, m in ((0, 8), (1, 12))]


def test_kl_and_d_llv_are_what_the_log_likelihoods_give(two_widths):
    (f1, g1), (f2, g2) = two_widths
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = compare(f1, g1, f2, g2, num_samples=SAMPLES, seed=SEED)
    degenerate = [w for w in caught if w.category is DegenerateRepresentationWarning]
    assert len(degenerate) == 1 and str(degenerate[0].message) == r["warning"]
    # K = 16 labels span 15 directions, fewer than 2M = 24: m_CCA(g)'s sample rule says so
    assert [w.category for w in caught if w not in degenerate] == [SampleSizeWarning]
    assert "widths differ (M = 8 and 12)" in r["warning"]
    assert r["kl"] == pytest.approx(mean_kl(log_likelihoods(f1, g1), log_likelihoods(f2, g2)),
                                    rel=1e-12)
    candidates = input_candidates(N, 12, SAMPLES, SEED)  # sets of max(M) + 1 = 13 inputs
    want = reference.d_llv(f1, g1, f2, g2, candidates)
    for key in ("d_llv", "t1", "t2", "t3", "t4", "y_pivot", "y_leave_out"):
        assert r[key] == pytest.approx(want[key], rel=1e-9), key
    assert r["input_set"] == [int(i) for i in want["input_set"]] and len(r["input_set"]) == 13
    assert np.isnan(r["m_svd_g"]) and np.isnan(r["d_fg"]) and np.isnan(r["m_svd_f"]).all()
    assert r["m_svd_label_sets"] == 0 and r["d_fg_estimate"] is False
    # the alignment measures as usual: m_CCA over min(M) = 8 components, CKA as the function
    assert r["mcca_f_components"] == 8 and r["mcca_g_components"] == 8
    assert np.isfinite(r["mcca_f"]) and r["cka_f"] == pytest.approx(linear_cka(f1, f2), rel=1e-10)
    assert all(np.isfinite(r[key]) for key in ("svcca_f", "mutual_knn_f", "d_logit"))


def test_the_low_rank_path_agrees_and_asking_no_svd_measure_warns_nothing(two_widths):
    (f1, g1), (f2, g2) = two_widths
    exact = compare(f1, g1, f2, g2, num_samples=SAMPLES, seed=SEED)
    low = compare(f1, g1, f2, g2, num_samples=SAMPLES, seed=SEED, method="low_rank",
                  max_pivots=K)
    for key in ("kl", "d_llv", "t1", "t2", "t3", "t4", "mcca_f", "mcca_g", "d_logit"):
        assert low[key] == pytest.approx(exact[key], rel=1e-8), key
    assert low["input_set"] == exact["input_set"] and np.isnan(low["d_fg"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = compare(f1, g1, f2, g2, num_samples=SAMPLES, measures="kl,d_llv,mcca_f,cka_f")
    assert r["warning"] == ""


def test_different_n_or_k_is_still_refused(two_widths):
    (f1, g1), (f2, g2) = two_widths
    with pytest.raises(ValueError, match="same inputs"):
        compare(f1, g1, f2[:-1], g2)
    with pytest.raises(ValueError, match="same labels"):
        compare(f1, g1, f2, g2[:-1])


def test_the_command_line_compares_models_of_different_widths(two_widths, tmp_path, capsys):
    (f1, g1), (f2, g2) = two_widths
    paths = []
    models = {"narrow": (f1, g1), "wide": (f2, g2), "narrow2": (f1[:, ::-1], g1[:, ::-1])}
    for name, (f, g) in models.items():
        paths.append(tmp_path / f"{name}.npz")
        np.savez(paths[-1], f=f, g=g)
    out = tmp_path / "pairs.parquet"
    assert main(["compare", *map(str, paths), "-o", str(out), "--num-samples", "6"]) == 0, \
        capsys.readouterr().err
    table = pd.read_parquet(out).set_index(["model_a", "model_b"])
    mixed = table.loc[("narrow", "wide")]
    assert np.isnan(mixed["d_fg"]) and "widths differ" in mixed["warning"]
    assert np.isfinite(mixed["d_llv"]) and np.isfinite(mixed["kl"])
    same = table.loc[("narrow", "narrow2")]  # coordinates permuted: the same model
    assert same["d_fg"] == pytest.approx(0.0, abs=1e-9) and same["warning"] == ""
    from repdist.io import read_parquet_metadata

    meta = read_parquet_metadata(out)
    assert meta["M"] == 12 and [m["M"] for m in meta["models"]] == [8, 12, 8]
