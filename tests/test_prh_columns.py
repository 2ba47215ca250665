"""The Platonic Representation Hypothesis' metrics as columns of every comparison (issue 23,
item 2): compare()'s new keys equal repdist.measures.prh on the same f, under today's
conventions and under PRH's; the options never move the paper's measures; a subset computes
only what it needs; bad options are refused by name; `repdist compare` and the config pass
them on."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import perturbed, random_model

from repdist.measures import PRH_CONVENTIONS, CompareSettings, compare, prepare, prepared_cache
from repdist.measures.cca import mean_cca
from repdist.measures.conventions import ALIGNMENT_MEASURES, AlignmentConventions
from repdist.measures.extra import linear_cka, mutual_knn, svcca
from repdist.measures.prh import (
    clamp_outliers,
    cknna,
    cycle_knn_from_indices,
    knn_metrics,
    prh_prepare,
    svcca_zscored,
    unbiased_cka,
    unit_rows,
)
from repdist.measures.selection import RESULT_KEYS

NEW_KEYS = ["cycle_knn_f", "lcs_knn_f", "edit_distance_knn_f", "unbiased_cka_f", "cknna_f"]
ALIGNMENT = ["cka_f", "svcca_f", "mutual_knn_f", *NEW_KEYS]
FAST = {"num_samples": 20}


@pytest.fixture
def pair(rng):
    """Two related models of N = 400 inputs, K = 8 labels, M = 5 (room for 4 SVCCA components)."""
    f, g = random_model(rng, n=400, k=8, m=5)
    f2, g2 = perturbed(rng, f, g, noise=0.5)
    return f, g, f2, g2


def direct(x1, x2, svcca_value):
    """Every alignment measure by prh.py's and extra.py's own functions on x1, x2 as given."""
    knn = knn_metrics(x1, x2, k=10)
    return {"cka_f": linear_cka(x1, x2), "svcca_f": svcca_value,
            "mutual_knn_f": mutual_knn(x1, x2, k=10), "cycle_knn_f": knn["cycle_knn"],
            "lcs_knn_f": knn["lcs_knn"], "edit_distance_knn_f": knn["edit_distance_knn"],
            "unbiased_cka_f": unbiased_cka(x1, x2), "cknna_f": cknna(x1, x2, k=10)}


def assert_measures(result, expected):
    for key, value in expected.items():
        assert result[key] == pytest.approx(value, rel=1e-12, abs=1e-14), key


def test_result_keys_keep_todays_order_with_the_new_ones_last():
    old = ["kl", "d_llv", "t1", "t2", "t3", "t4", "y_pivot", "y_leave_out", "input_set",
           "m_svd_f", "m_svd_g", "d_fg", "m_svd_label_sets", "d_fg_estimate", "mcca_f",
           "mcca_g", "cka_f", "svcca_f", "mutual_knn_f", "d_logit"]
    counts = ["mcca_f_components", "mcca_g_components"]  # added beside m_CCA (issue 42)
    at = old.index("mcca_g") + 1
    assert list(RESULT_KEYS) == [*old[:at], *counts, *old[at:], *NEW_KEYS, "warning"]
    from repdist.experiments.pairs import CIFAR_PAIR_COLUMNS, EXTRA_COLUMNS, PAIR_COLUMNS

    assert EXTRA_COLUMNS == ["cka_f", "svcca_f", "mutual_knn_f", "d_logit", *NEW_KEYS]
    for columns in (PAIR_COLUMNS, CIFAR_PAIR_COLUMNS):
        assert columns[-len(NEW_KEYS) - 2:] == ["d_logit", *NEW_KEYS, "warning"]


def test_new_keys_equal_the_prh_functions_on_f_as_it_is(pair):
    f, g, f2, g2 = pair
    r = compare(f, g, f2, g2, **FAST)
    assert_measures(r, direct(f, f2, svcca(f, f2)))
    assert r["warning"] == ""


def test_defaults_leave_every_existing_key_as_the_plain_functions_give_it(pair):
    """Today's values, recomputed by the functions compare() used before the new columns."""
    from repdist.measures.extra import d_logit
    from repdist.measures.loglik import log_likelihoods, mean_kl

    f, g, f2, g2 = pair
    r = compare(f, g, f2, g2, **FAST)
    l1, l2 = log_likelihoods(f, g), log_likelihoods(f2, g2)
    assert r["kl"] == pytest.approx(mean_kl(l1, l2), rel=1e-12)
    assert r["d_logit"] == pytest.approx(d_logit(l1, l2), rel=1e-12)
    assert r["mcca_f"] == pytest.approx(mean_cca(f, f2), rel=1e-12)
    assert r["mcca_g"] == pytest.approx(mean_cca(g, g2), rel=1e-12)
    assert r["cka_f"] == linear_cka(f, f2) and r["mutual_knn_f"] == mutual_knn(f, f2)
    assert r["svcca_f"] == pytest.approx(svcca(f, f2), rel=1e-12)


def test_prh_conventions_give_prh_pipeline_values(pair):
    f, g, f2, g2 = pair
    r = compare(f, g, f2, g2, **FAST, **{**PRH_CONVENTIONS, "svcca_components": 4})
    x1, x2 = prh_prepare(f), prh_prepare(f2)  # their clamp at 0.95, then unit rows
    assert_measures(r, direct(x1, x2, svcca_zscored(x1, x2, k=4)))


@pytest.mark.parametrize("options", [
    {"outlier_quantile": 0.8},
    {"unit_rows": True},
    {"svcca": "zscored", "svcca_components": 3},
    {"outlier_quantile": 0.9, "unit_rows": True, "svcca": "variance"},
])
def test_each_option_alone_reads_f_as_it_says(pair, options):
    f, g, f2, g2 = pair
    c = AlignmentConventions(**options)

    def read(x):
        x = clamp_outliers(x, c.outlier_quantile)
        return unit_rows(x) if c.unit_rows else x

    x1, x2 = read(f), read(f2)
    expected_svcca = (svcca(x1, x2) if c.svcca == "variance"
                      else svcca_zscored(x1, x2, k=c.svcca_components))
    assert_measures(compare(f, g, f2, g2, **FAST, **options), direct(x1, x2, expected_svcca))


@pytest.mark.filterwarnings("ignore:svcca_f undefined")
def test_options_never_move_the_papers_measures(pair):
    f, g, f2, g2 = pair
    plain = compare(f, g, f2, g2, **FAST)
    prh = compare(f, g, f2, g2, **FAST, **PRH_CONVENTIONS)
    others = [key for key in RESULT_KEYS if key not in ALIGNMENT_MEASURES and key != "warning"]
    assert "d_llv" in others and "mcca_f" in others and "d_logit" in others
    for key in others:
        assert plain[key] == prh[key], key
    assert all(plain[key] != prh[key] for key in ("cka_f", "cknna_f", "unbiased_cka_f"))


def test_svcca_with_more_components_than_dimensions_is_nan_and_says_why(pair):
    f, g, f2, g2 = pair  # M = 5 < PRH's 10 components
    with pytest.warns(UserWarning, match="svcca_components = 10 exceeds min"):
        r = compare(f, g, f2, g2, **FAST, **PRH_CONVENTIONS)
    assert math.isnan(r["svcca_f"]) and "svcca_f undefined" in r["warning"]
    assert all(np.isfinite(r[key]) for key in ALIGNMENT if key != "svcca_f")


def test_a_subset_computes_only_what_it_needs(pair, monkeypatch):
    import importlib

    prepared_module = importlib.import_module("repdist.measures.prepared")
    f, g, f2, g2 = pair

    def forbidden(*args, **kwargs):
        raise AssertionError("work for a measure that was not asked for")

    prepared_cache.clear()
    monkeypatch.setattr(prepared_module, "knn_indices", forbidden)  # the cosine search
    r = compare(f, g, f2, g2, measures=["cknna_f"])
    assert list(r) == ["cknna_f", "warning"]
    assert r["cknna_f"] == pytest.approx(cknna(f, f2), rel=1e-12)
    view = prepare(f, g, measures=["cknna_f"]).view()
    assert set(vars(view)) == {"x", "unit", "ip_knn", "cknna_self"}
    # on unit rows CKNNA's neighbours are the cosine ones: one search, shared
    monkeypatch.undo()
    monkeypatch.setattr(prepared_module, "ip_knn_indices", forbidden)
    unit = AlignmentConventions(unit_rows=True)
    view = prepare(f, g, measures=["cknna_f", "mutual_knn_f"], conventions=unit).view(unit)
    assert view.ip_knn is view.knn and "basis" not in vars(view)
    r = compare(f, g, f2, g2, measures="lcs_knn_f,cknna_f", unit_rows=True)
    assert list(r) == ["lcs_knn_f", "cknna_f", "warning"]


@pytest.mark.filterwarnings("ignore:svcca_f undefined")
def test_one_model_serves_several_conventions_each_from_its_own_view(pair):
    f, g, f2, g2 = pair
    prepared_cache.clear()
    first = compare(f, g, f2, g2, **FAST)
    prh = compare(f, g, f2, g2, **FAST, **PRH_CONVENTIONS)
    again = compare(f, g, f2, g2, **FAST)
    assert prepared_cache.info()[:3] == (4, 2, 2)  # hits, misses, models
    assert set(prepare(f, g).view().__dict__) >= {"knn", "basis"}
    for key in ALIGNMENT:
        assert again[key] == first[key] or (math.isnan(again[key]) and math.isnan(first[key]))
    fresh_prh = compare(f, g, f2, g2, **FAST, **PRH_CONVENTIONS)
    assert [fresh_prh[key] for key in NEW_KEYS] == [prh[key] for key in NEW_KEYS]


@pytest.mark.parametrize("options, name", [
    ({"outlier_quantile": 0}, "outlier_quantile"),
    ({"outlier_quantile": 1.5}, "outlier_quantile"),
    ({"outlier_quantile": float("nan")}, "outlier_quantile"),
    ({"outlier_quantile": True}, "outlier_quantile"),
    ({"outlier_quantile": "0.95"}, "outlier_quantile"),
    ({"unit_rows": "yes"}, "unit_rows"),
    ({"svcca": "pca"}, "svcca must be one of variance, zscored"),
    ({"svcca_components": 0}, "svcca_components"),
    ({"svcca_components": 2.5}, "svcca_components"),
])
def test_bad_options_are_refused_naming_the_option(rng, options, name):
    with pytest.raises(ValueError, match=name):
        CompareSettings(**options)
    f, g = random_model(rng, n=50, k=5)
    with pytest.raises(ValueError, match=name):
        compare(f, g, f, g, **options)


def test_identical_inputs_give_each_measures_maximum(rng):
    f, g = random_model(rng, n=300, k=6, m=3)
    for options in ({}, {**PRH_CONVENTIONS, "svcca_components": 3}):
        r = compare(f, g, f, g, num_samples=20, **options)
        assert r["cka_f"] == pytest.approx(1, abs=1e-12)
        assert r["svcca_f"] == pytest.approx(1, abs=1e-12)
        assert r["mutual_knn_f"] == 1 and r["lcs_knn_f"] == 10 and r["edit_distance_knn_f"] == 1
        assert r["unbiased_cka_f"] == pytest.approx(1, abs=1e-5)  # 1 up to PRH's 1e-6
        assert r["cknna_f"] == pytest.approx(1, abs=1e-4)
        # cycle k-NN of a graph with itself is 1 only where every i is a neighbour of one
        # of its neighbours (not guaranteed for a k-NN graph): it is that share here
        nn = prepare(f, g).view(CompareSettings(**options).conventions).knn_idx
        assert r["cycle_knn_f"] == cycle_knn_from_indices(nn, nn) > 0.95


def test_rotations_leave_the_neighbour_measures_and_ckas_unchanged(pair, rng):
    f, g, f2, g2 = pair
    q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    plain = compare(f, g, f2, g2, **FAST)
    turned = compare(f, g, f2 @ q, g2 @ q, **FAST)  # the same model, rotated
    for key in ("mutual_knn_f", "cycle_knn_f", "lcs_knn_f", "edit_distance_knn_f"):
        assert turned[key] == plain[key], key
    for key in ("cka_f", "unbiased_cka_f", "cknna_f", "svcca_f", "mcca_f", "d_llv"):
        assert turned[key] == pytest.approx(plain[key], rel=1e-9), key


def test_unit_rows_make_a_rescaling_of_rows_irrelevant(pair, rng):
    f, g, f2, g2 = pair
    scaled = f2 * rng.uniform(0.2, 5, size=(len(f2), 1))
    plain = compare(f, g, f2, g2, measures=ALIGNMENT, unit_rows=True)
    rescaled = compare(f, g, scaled, g2, measures=ALIGNMENT, unit_rows=True)
    for key in ALIGNMENT:
        assert rescaled[key] == pytest.approx(plain[key], rel=1e-9), key
    as_is = compare(f, g, scaled, g2, measures=["cka_f", "cknna_f"])
    assert as_is["cka_f"] != pytest.approx(plain["cka_f"], rel=1e-3)  # without: it matters


def test_too_few_inputs_for_ten_neighbours_give_nan(rng):
    f, g = random_model(rng, n=10, k=5)
    f2, g2 = perturbed(rng, f, g)
    r = compare(f, g, f2, g2, num_samples=2, measures=ALIGNMENT)
    assert all(math.isnan(r[key]) for key in ("mutual_knn_f", "cycle_knn_f", "lcs_knn_f",
                                               "edit_distance_knn_f", "cknna_f"))
    assert r["unbiased_cka_f"] == pytest.approx(unbiased_cka(f, f2), rel=1e-12)


def test_the_cli_flags_change_the_written_columns(tmp_path, rng):
    from repdist.cli import main
    from repdist.io import read_parquet_metadata

    f, g = random_model(rng, n=300, k=6, m=2)
    paths = []
    for i, (fi, gi) in enumerate([(f, g), perturbed(rng, f, g), perturbed(rng, f, g, 0.6)]):
        paths.append(tmp_path / f"m{i}.npz")
        np.savez(paths[-1], f=fi, g=gi)
    tables = {}
    for name, flags in [("plain", []), ("prh", ["--prh"]),
                        ("prh_variance", ["--prh", "--svcca", "variance"]),
                        ("clamp", ["--outlier-quantile", "0.9", "--no-unit-rows"])]:
        out = tmp_path / f"{name}.parquet"
        assert main(["compare", *map(str, paths), "-o", str(out), "--num-samples", "20",
                     *flags]) == 0
        tables[name] = pd.read_parquet(out)
    plain, prh = tables["plain"], tables["prh"]
    assert list(plain.columns)[-6:] == [*NEW_KEYS, "warning"]
    pd.testing.assert_series_equal(plain.d_llv, prh.d_llv)
    pd.testing.assert_series_equal(plain.mcca_f, prh.mcca_f)
    assert (plain.cknna_f != prh.cknna_f).all() and (plain.cka_f != prh.cka_f).all()
    assert prh.svcca_f.isna().all() and (prh.warning != "").all()  # 10 components, M = 2
    # what compare() gives with those options (equal to prh.py's functions: tests above;
    # in 2-D the clamp makes rows equal, ties that any neighbour search may break its way)
    models = [(np.load(p)["f"], np.load(p)["g"]) for p in paths]
    for name, options, key, (i, j), row in [
            ("prh", PRH_CONVENTIONS, "cknna_f", (0, 1), 0),
            ("prh_variance", {**PRH_CONVENTIONS, "svcca": "variance"}, "svcca_f", (0, 1), 0),
            ("clamp", {"outlier_quantile": 0.9}, "unbiased_cka_f", (1, 2), 2)]:
        direct_value = compare(*models[i], *models[j], measures=[key], **options)[key]
        assert tables[name][key][row] == direct_value, name
    x = [prh_prepare(f) for f, _ in models]
    assert tables["prh_variance"].svcca_f[0] == pytest.approx(svcca(x[0], x[1]), rel=1e-12)
    settings = read_parquet_metadata(tmp_path / "prh.parquet")["settings"]
    assert {k: settings[k] for k in PRH_CONVENTIONS} == PRH_CONVENTIONS
    assert main(["compare", *map(str, paths), "-o", str(tmp_path / "x.csv"),
                 "--outlier-quantile", "2"]) == 2


def test_config_keys_reach_the_pairs_jobs_only_when_set():
    """pipeline.measure_settings: config.yaml as shipped passes nothing new (the jobs'
    parameters are today's); prh_conventions fills the options not set; the schema checks."""
    import copy

    import yaml
    from conftest import ROOT
    from snakemake.utils import validate
    from snakemake_interface_common.exceptions import WorkflowError

    from repdist.pipeline import measure_settings

    assert measure_settings.PRH_CONVENTIONS == PRH_CONVENTIONS
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert measure_settings.alignment_settings(cfg["measures"]) == {}
    prh = {**cfg["measures"], "prh_conventions": True, "svcca": "variance"}
    assert measure_settings.alignment_settings(prh) == {**PRH_CONVENTIONS, "svcca": "variance"}
    CompareSettings(**measure_settings.alignment_settings(prh))
    schema = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    cfg["measures"].update(prh_conventions=True, outlier_quantile=0.9, unit_rows=False)
    validate(copy.deepcopy(cfg), schema)
    for key, bad in [("outlier_quantile", 1.5), ("svcca", "pca"), ("svcca_components", 0),
                     ("unit_rows", "yes")]:
        wrong = copy.deepcopy(cfg)
        wrong["measures"][key] = bad
        with pytest.raises(WorkflowError):
            validate(wrong, schema)
