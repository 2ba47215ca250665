"""Figures leave out pairs whose measures are undefined (NaN, from degenerate models) and say
how many, without crashing."""

import numpy as np
import pandas as pd
import pytest

from repdist.figures.bound import bound_figure
from repdist.figures.cifar import loss_diff_figure
from repdist.figures.style import plt
from repdist.figures.synthetic import measures_vs_width_figure, width_figure, width_summary


def all_text(fig) -> str:
    texts = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        texts += [ax.get_title(), *(t.get_text() for t in ax.texts)]
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
    text = all_text(measures_vs_width_figure(pairs, num_classes=4))
    assert "2 pairs with an undefined measure left out" in text


def test_cifar_loss_figure_counts_nan_pairs():
    pairs = pd.DataFrame({"mcca_f_test": [0.5, np.nan, 0.7], "test_loss_diff": [0.1, 0.2, np.nan]})
    text = all_text(loss_diff_figure({2: pairs}, standin=True))
    assert "2 undefined left out" in text
