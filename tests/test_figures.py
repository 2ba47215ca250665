"""Figures leave out pairs whose measures are undefined (NaN, from degenerate models) and say
how many, without crashing."""

import numpy as np
import pandas as pd
import pytest
from tolerances import FLOAT64_ROUNDING, ULPS

from repdist.figures.bound import bound_figure
from repdist.figures.cifar import loss_diff_figure
from repdist.figures.style import plt
from repdist.experiments.synthetic.widths import measures_by_width, width_summary
from repdist.figures.synthetic import MEASURE_PANELS, measures_vs_width_figure, width_figure


def all_text(fig) -> str:
    """The figure's titles, texts and legends' entries."""
    texts = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        texts += [ax.get_title(), *(t.get_text() for t in ax.texts)]
        if ax.get_legend():
            texts += [t.get_text() for t in ax.get_legend().get_texts()]
    return "\n".join(texts)


def synthetic_pairs(n_seeds=5, widths=(16, 32), nan_rows=()):
    rng = np.random.default_rng(0)
    rows = []
    for w in widths:
        for a in range(n_seeds):
            for b in range(a + 1, n_seeds):
                rows.append({"width": w, "seed_a": a, "seed_b": b, "acc_a": 0.99, "acc_b": 0.99,
                             "d_llv": rng.uniform(0.01, 0.2), "d_fg": rng.uniform(0, 0.1),
                             "kl": 0.1, "d_logit": 0.2, "mcca_f": 0.9, "svcca_f": 0.9,
                             "cka_f": 0.9, "mutual_knn_f": 0.5})
    pairs = pd.DataFrame(rows)
    for i in nan_rows:
        pairs.loc[i, ["d_llv", "d_fg", "mcca_f"]] = np.nan
    return pairs


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_bound_figure_counts_undefined_pairs_apart_from_out_of_range_ones():
    table = pd.DataFrame({"d_llv": [0.01, 0.02, 0.9, np.nan, np.nan],
                          "d_fg": [0.01, 0.05, 0.5, 0.1, np.nan]})
    fig = bound_figure(table, rep_dim=2, title="t")
    text = all_text(fig)
    assert "2 pairs with" in text and "0 above the bound" in text
    assert "1 with" in text and "not shown" in text
    assert "2 undefined (NaN) left out" in text


def test_bound_figure_without_nan_has_no_nan_note():
    table = pd.DataFrame({"d_llv": [0.01, 0.02], "d_fg": [0.01, 0.05]})
    assert "NaN" not in all_text(bound_figure(table, rep_dim=2, title="t"))


def test_width_figure_counts_nan_pairs_per_class_count():
    pairs = synthetic_pairs(nan_rows=(0, 3, 12))  # two at width 16, one at width 32
    summary = width_summary(pairs, threshold=0.9, min_seeds=5)
    assert summary.set_index("width")["nan_pairs"].to_dict() == {16: 2, 32: 1}
    assert summary["pairs"].tolist() == [8, 9]
    assert np.isfinite(summary[["d_llv_mean", "d_fg_mean"]].to_numpy()).all()
    text = all_text(width_figure({4: summary}, threshold=0.9, min_seeds=5))
    assert "K=4: 3 pairs with undefined measures left out" in text


def test_measures_figure_counts_nan_pairs():
    pairs = synthetic_pairs(nan_rows=(1, 2))
    columns = [c for c, _ in MEASURE_PANELS if c in pairs.columns]
    nan_pairs = int(pairs[columns].isna().any(axis=1).sum())
    assert nan_pairs == 2
    summary = measures_by_width(pairs, columns)
    text = all_text(measures_vs_width_figure(summary, 4, len(pairs), nan_pairs))
    assert "2 pairs with an undefined measure left out" in text


def test_cifar_loss_figure_counts_nan_pairs():
    pairs = pd.DataFrame({"mcca_f_test": [0.5, np.nan, 0.7], "test_loss_diff": [0.1, 0.2, np.nan]})
    text = all_text(loss_diff_figure({2: pairs}, standin=True))
    assert "2 undefined left out" in text


def scatter_points(ax) -> np.ndarray:
    """Every scatter point drawn on an axes, as an (n, 2) array."""
    pts = [c.get_offsets() for c in ax.collections if hasattr(c, "get_offsets")
           and len(c.get_offsets())]
    return np.concatenate(pts) if pts else np.zeros((0, 2))


def test_bound_figure_draws_exactly_the_pairs_in_range_and_the_bound_line():
    table = pd.DataFrame({"d_llv": [0.01, 0.02, 0.2, 0.3], "d_fg": [0.01, 0.5, 0.1, 0.2]})
    fig = bound_figure(table, rep_dim=2, title="t")
    ax = fig.axes[0]
    np.testing.assert_allclose(scatter_points(ax), [[0.01, 0.01], [0.02, 0.5], [0.2, 0.1]])
    (line,) = ax.get_lines()
    x, y = line.get_data()
    np.testing.assert_allclose(y, 4 * x)  # 2M d_LLV with M = 2
    assert "1 above the bound" in all_text(fig)
    assert ax.get_xlabel() == r"$d^{\lambda}_{\mathrm{LLV}}$"


def test_width_figure_draws_the_summary_means_per_width():
    pairs = synthetic_pairs()
    summary = width_summary(pairs, threshold=0.9, min_seeds=5)
    fig = width_figure({4: summary, 6: summary}, threshold=0.9, min_seeds=5)
    left, right = fig.axes
    lines = [ln for ln in left.get_lines() if not ln.get_label().startswith("_")]
    assert [ln.get_label() for ln in lines] == ["4 classes", "6 classes"]
    assert len(left.containers) == 2  # each mean's seed-bootstrap interval, as bars
    assert summary["d_llv_ci_low"].lt(summary["d_llv_mean"]).all()
    assert summary["d_llv_ci_high"].gt(summary["d_llv_mean"]).all()
    np.testing.assert_allclose(lines[0].get_xdata(), [16, 32])
    np.testing.assert_allclose(lines[0].get_ydata(), summary["d_llv_mean"])
    np.testing.assert_allclose(right.get_lines()[0].get_ydata(), summary["d_fg_mean"])
    assert "95 % interval (seeds resampled)" in all_text(fig)


def test_data_figure_draws_every_training_point_coloured_by_class():
    from repdist.data.radial import make_radial
    from repdist.figures.synthetic import data_figure

    data = make_radial(500, 6, 0)
    ax = data_figure(data).axes[0]
    np.testing.assert_allclose(scatter_points(ax), data.x, rtol=1e-6)
    np.testing.assert_array_equal(ax.collections[0].get_array(), data.labels)  # exact: integers


def test_loss_diff_figure_draws_one_point_per_pair_per_dimension():
    pairs = {m: pd.DataFrame({"mcca_f_test": [0.4, 0.6, 0.8], "test_loss_diff": [0.1, 0.2, 0.3],
                              "test_loss_eval_diff": [0.3, 0.2, 0.1]}) for m in (2, 3, 5)}
    fig = loss_diff_figure(pairs, standin=False, loss_column="test_loss_eval_diff")
    assert [ax.get_title() for ax in fig.axes] == ["2", "3", "5"]
    for ax in fig.axes:
        np.testing.assert_allclose(scatter_points(ax), [[0.4, 0.3], [0.6, 0.2], [0.8, 0.1]])
    assert fig.axes[0].get_ylabel() == "test loss difference (eval mode)"


def test_models_measures_figure_puts_each_pair_in_its_cells():
    from repdist.figures.models import measures_figure

    pairs = pd.DataFrame({"model_a": ["a", "a", "b"], "model_b": ["b", "c", "c"],
                          "d_llv": [0.1, 0.2, 0.3], "mcca_f": [0.9, 0.8, 0.7]})
    fig = measures_figure(pairs, ["a", "b", "c"], "t")
    image = fig.axes[0].get_images()[0].get_array()
    assert image[0, 1] == image[1, 0] == 0.1 and image[1, 2] == 0.3
    assert np.ma.is_masked(image[0, 0]) or np.isnan(image[0, 0])  # no self-pairs
    titles = [ax.get_title() for ax in fig.axes if ax.get_images()]
    assert titles == [r"$d^{\lambda}_{\mathrm{LLV}}$", r"$m_{\mathrm{CCA}}$"]


def test_the_seed_comparison_draws_the_m_cca_it_is_given(rng):
    """The figure computes nothing: its title is the number handed to it, which
    experiments/pairs.py::embeddings_mcca computes from the two tables."""
    from repdist.experiments.pairs import embeddings_mcca
    from repdist.figures.cifar import seed_comparison
    from repdist.measures import mean_cca

    f = rng.normal(size=(50, 2))
    a = pd.DataFrame({"f_0": f[:, 0], "f_1": f[:, 1], "pred": np.arange(50) % 10})
    b = a.assign(f_0=a["f_0"] + rng.normal(size=50), pred=np.arange(50) % 3)
    # a table's columns come F-ordered, f C-ordered: its centring sums in another order
    want = mean_cca(f, b[["f_0", "f_1"]].to_numpy())
    assert embeddings_mcca(a, b) == pytest.approx(want, rel=ULPS * FLOAT64_ROUNDING)
    fig = seed_comparison(a, b, 0.123456, [f"c{i}" for i in range(10)], ("seed 0", "seed 1"),
                          standin=True)
    assert "= 0.123 on the test set" in fig._suptitle.get_text()


def test_measures_figure_draws_each_null_measures_chance_band():
    """A measure with a null in the pairs (its `_tau` column): a grey band up to the mean tau
    per width; one without: none."""
    from matplotlib.collections import PolyCollection

    pairs = synthetic_pairs()
    pairs["mcca_f_tau"] = 0.1 + pairs["width"] / 1000
    columns = [c for c, _ in MEASURE_PANELS if c in pairs.columns]
    summary = measures_by_width(pairs, [*columns, "mcca_f_tau"])
    fig = measures_vs_width_figure(summary, 4, len(pairs), 0)
    bands = {ax.get_title(): [c for c in ax.collections if isinstance(c, PolyCollection)]
             for ax in fig.axes}
    assert len(bands[r"$m_{\mathrm{CCA}}$"]) == 2 and len(bands["linear CKA"]) == 1
    top = bands[r"$m_{\mathrm{CCA}}$"][1].get_paths()[0].vertices[:, 1].max()
    assert top == pytest.approx(0.1 + 32 / 1000)


def colour_bars(fig) -> tuple[list[str], list[str]]:
    """(each heatmap's colour map, each colour bar's label), in the figure's order."""
    maps = [ax.get_images()[0].get_cmap().name for ax in fig.axes if ax.get_images()]
    labels = [ax.get_ylabel() for ax in fig.axes if ax.get_label() == "<colorbar>"]
    return maps, labels


def test_heatmaps_colour_a_distance_and_a_similarity_apart_and_say_so():
    """Each measure's heatmap takes its direction from the glossary (measures/glossary.py):
    a distance and a similarity get different colour maps, and each colour bar's label says
    which value means the same model."""
    from repdist.figures.models import measures_figure
    from repdist.figures.style import COLOUR_MAPS

    pairs = pd.DataFrame({"model_a": ["a", "a", "b"], "model_b": ["b", "c", "c"],
                          "d_llv": [0.1, 0.2, 0.3], "mcca_f": [0.9, 0.8, 0.7]})
    maps, labels = colour_bars(measures_figure(pairs, ["a", "b", "c"], "t"))
    assert maps == [COLOUR_MAPS["distance"], COLOUR_MAPS["similarity"]] and maps[0] != maps[1]
    assert labels == ["d_llv (distance: 0 = the same)", "mcca_f (similarity: 1 = the same)"]


@pytest.mark.parametrize(("metric", "top"), [("lcs_knn", "10"), ("mutual_knn", "1"),
                                             ("not_in_the_glossary", "1")])
def test_prhs_matrix_says_its_metrics_direction(metric, top):
    """The raw score's colour bar reads the metric's own entry (LCS k-NN's top is 10), or
    `score`'s for a metric it has none of; the calibrated one is 1 at a perfect score."""
    from repdist.figures.prh import matrix_figure

    table = pd.DataFrame({"language": ["l0", "l1"], "vision": "v", "family": "vit",
                          "vision_parameters": 10, "performance": [0.1, 0.2], "metric": metric,
                          "score": [0.3, np.nan], "calibrated": [0.1, 0.2],
                          "significant": [True, False]})
    _, labels = colour_bars(matrix_figure(table, ["vit"]))
    assert labels == [f"score (similarity: {top} = the same)",
                      "calibrated (similarity: 1 = the same)"]
