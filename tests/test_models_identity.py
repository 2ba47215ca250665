"""Rows are read by identity, never by position, and the measures respect what identity means:
any row order of a folder gives the numbers of the sorted folder; a joint relabelling of both
models' labels changes no measure; a joint permutation of the inputs changes no measure that
draws no sample of them; f·c with g/c is the same model."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repdist.experiments.models.groups import compare_models
from repdist.io.representations import (
    ModelInputError,
    embeddings_frame,
    load_model,
    unembeddings_frame,
)
from repdist.measures import CompareSettings, compare
from repdist.measures.loglik import log_likelihoods

pytestmark = pytest.mark.numerics

N, K, M = 60, 6, 2
FAST = dict(num_samples=4, seed=1)
# Two computations of one measure over reordered rows differ by float64 rounding of sums:
# tens of ulps of the values' scale (measures of size ~1).
RTOL, ATOL = 1e-9, 1e-10
# measures that draw no sample of the inputs (d_LLV, t2, t4, m_SVD(g), d_fg draw input sets)
NO_INPUT_SAMPLE = ("kl", "t1", "t3", "m_svd_f_min", "mcca_f", "mcca_g", "cka_f", "svcca_f",
                   "mutual_knn_f", "d_logit", "unbiased_cka_f", "cknna_f")
SETTINGS = settings(max_examples=12, deadline=None, database=None,
                    derandomize=True,
                    suppress_health_check=list(HealthCheck))


def model(seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(N, M)), rng.normal(size=(K, M))


def write_folder(path, f, g, input_order=None, label_order=None):
    """Our parquet folder, its rows written in the given orders (identities kept)."""
    path.mkdir(parents=True)
    emb = embeddings_frame(f, np.arange(N) % K, np.zeros(N))
    unemb = unembeddings_frame(g)
    if input_order is not None:
        emb = emb.iloc[input_order]
    if label_order is not None:
        unemb = unemb.iloc[label_order]
    emb.to_parquet(path / "embeddings.parquet")
    unemb.to_parquet(path / "unembeddings.parquet")
    return path


def table(paths, **kwargs):
    frame, _ = compare_models(paths, CompareSettings(**FAST), **kwargs)
    return frame.drop(columns=["model_a", "model_b"])


def assert_same_numbers(got, want):
    for column in want.columns:
        if want[column].dtype.kind == "f":
            np.testing.assert_allclose(got[column], want[column], rtol=RTOL, atol=ATOL,
                                       err_msg=column)
        else:
            assert got[column].tolist() == want[column].tolist(), column


@pytest.fixture(scope="module")
def sorted_table(tmp_path_factory):
    root = tmp_path_factory.mktemp("sorted")
    paths = [write_folder(root / name, *model(seed)) for name, seed in (("a", 0), ("b", 1))]
    return table(paths)


@SETTINGS
@given(st.permutations(range(N)), st.permutations(range(K)))
def test_any_row_order_of_a_folder_gives_the_sorted_folders_numbers(
        tmp_path_factory, sorted_table, inputs, labels):
    root = tmp_path_factory.mktemp("shuffled")
    paths = [write_folder(root / "a", *model(0)),
             write_folder(root / "b", *model(1), list(inputs), list(labels))]
    assert_same_numbers(table(paths), sorted_table)


def test_a_reversed_unembeddings_table_is_the_same_model(tmp_path):
    """The report that started it: the same model, its g rows in reverse label order, read as
    another model (KL 4.99) and its shuffled f rows gave m_CCA(f) 0.07."""
    f, g = model(0)
    a = write_folder(tmp_path / "a", f, g)
    b = write_folder(tmp_path / "b", f, g, np.random.default_rng(3).permutation(N),
                     np.arange(K)[::-1])
    row = table([a, b]).iloc[0]
    assert row["kl"] == pytest.approx(0, abs=1e-12)
    assert row["mcca_f"] == pytest.approx(1, abs=1e-9)


@SETTINGS
@given(st.permutations(range(K)), st.integers(0, 2**16))
def test_a_joint_relabelling_changes_no_measure(labels, seed):
    (f1, g1), (f2, g2) = model(seed), model(seed + 1)
    order = list(labels)
    want = compare(f1, g1, f2, g2, **FAST)
    got = compare(f1, g1[order], f2, g2[order], **FAST)
    for key, value in want.items():
        if key in ("y_pivot", "y_leave_out"):  # the same labels, by their new names
            assert order[got[key]] == value, key
        elif isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=RTOL, abs=ATOL), key


@SETTINGS
@given(st.permutations(range(N)), st.integers(0, 2**16))
def test_a_joint_permutation_of_inputs_changes_no_measure_that_draws_none(inputs, seed):
    (f1, g1), (f2, g2) = model(seed), model(seed + 1)
    order = list(inputs)
    want = compare(f1, g1, f2, g2, **FAST)
    got = compare(f1[order], g1, f2[order], g2, **FAST)
    for key in NO_INPUT_SAMPLE:
        key = "m_svd_f" if key == "m_svd_f_min" else key
        np.testing.assert_allclose(got[key], want[key], rtol=RTOL, atol=ATOL, err_msg=key)


@SETTINGS
@given(st.floats(1e-3, 1e3), st.integers(0, 2**16))
def test_f_times_c_with_g_over_c_is_the_same_model(c, seed):
    f, g = model(seed)
    r = compare(f, g, f * c, g / c, **FAST)
    assert r["kl"] == pytest.approx(0, abs=1e-12)
    np.testing.assert_allclose(log_likelihoods(f * c, g / c), log_likelihoods(f, g),
                               rtol=1e-12, atol=1e-12)


def test_intersect_compares_the_rows_every_model_has(tmp_path, capsys):
    f, g = model(0)
    a = write_folder(tmp_path / "a", f, g)
    b = tmp_path / "b"
    write_folder(b, f, g)
    emb = pd.read_parquet(b / "embeddings.parquet")
    emb.drop(index=[3, 40]).to_parquet(b / "embeddings.parquet")  # two inputs lost
    with pytest.raises(ModelInputError, match="index should run 0..57, but 3 is missing"):
        load_model(b)
    frame, meta = compare_models([a, b], CompareSettings(**FAST), match="intersect")
    assert frame["kl"][0] == pytest.approx(0, abs=1e-12)
    assert any("58 inputs every model has; dropped a 2, b 0" in n for n in meta["notes"])


@pytest.mark.parametrize("mangle,fragment", [
    (lambda e: e.assign(f_norm=1.0), "column 'f_norm' does not belong in an embeddings table"),
    (lambda e: pd.concat([e, e.iloc[[7]]]), "index 7 appears 2 times"),
    (lambda e: e.drop(columns=["f_1"]).assign(f_2=0.0), "f_1 is missing"),
    (lambda e: e.assign(index=e["index"].astype(float)), "index must be a column of integers"),
    (lambda e: e.assign(index=e["index"] - 1), "index -1 is negative"),
])
def test_a_bad_table_is_refused_naming_file_column_and_value(tmp_path, mangle, fragment):
    path = write_folder(tmp_path / "m", *model(0))
    mangle(pd.read_parquet(path / "embeddings.parquet")).to_parquet(path / "embeddings.parquet")
    with pytest.raises(ModelInputError) as err:
        load_model(path)
    assert str(path / "embeddings.parquet") in str(err.value) and fragment in str(err.value)


def test_npz_rows_are_ordered_by_their_index_and_g_label_arrays(tmp_path):
    f, g = model(0)
    inputs, labels = np.random.default_rng(5).permutation(N), np.arange(K)[::-1]
    path = tmp_path / "m.npz"
    np.savez(path, f=f[inputs], g=g[labels], index=inputs, g_label=labels)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.f, f)  # exact: the same rows, reordered
    np.testing.assert_array_equal(loaded.g, g)  # exact: the same rows, reordered
