"""The Platonic Representation Hypothesis' claim on the synthetic grid: the per-(K, width) table,
its rank correlations, the figure and the paper-comparison rows, on hand-made pairs tables."""

import itertools

import numpy as np
import pandas as pd
import pytest

from repdist.experiments.synthetic.alignment import (alignment_table, alignment_trends,
                                                     read_alignment_table)
from repdist.experiments.paper_comparison.checks import alignment_checks
from repdist.figures.style import plt
from repdist.figures.synthetic import alignment_figure
from repdist.io import write_parquet

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels


def pairs_of(k: int, width: int, accs: list[float], knn: float) -> pd.DataFrame:
    """Every pair of seeds with the given accuracies; mutual k-NN knn + seed_b / 100."""
    rows = [{"seed_a": a, "seed_b": b, "acc_a": accs[a], "acc_b": accs[b],
             "mutual_knn_f": knn + b / 100, "cknna_f": knn / 2, "K": k, "width": width}
            for a, b in itertools.combinations(range(len(accs)), 2)]
    return pd.DataFrame(rows)


def grid(rising_k: int = 4, falling_k: int = 6) -> pd.DataFrame:
    parts = []
    for i, width in enumerate((16, 32, 64)):
        parts.append(pairs_of(rising_k, width, [0.6 + 0.1 * i, 0.7 + 0.1 * i, 0.8], 0.2 * i))
        parts.append(pairs_of(falling_k, width, [0.5, 0.5, 0.5 + 0.1 * i], 0.6 - 0.2 * i))
    return pd.concat(parts, ignore_index=True)


def test_the_table_holds_pair_means_and_seed_mean_accuracy():
    table = alignment_table(grid())
    row = table[(table["num_classes"] == 4) & (table["width"] == 32)].iloc[0]
    # pairs (0,1), (0,2), (1,2): knn 0.2 + b/100 -> 0.21, 0.22, 0.22
    assert row["pairs"] == 3
    assert row["mutual_knn_f_mean"] == pytest.approx(np.mean([0.21, 0.22, 0.22]))
    assert row["mutual_knn_f_std"] == pytest.approx(np.std([0.21, 0.22, 0.22]))
    assert row["test_accuracy"] == pytest.approx(np.mean([0.7, 0.8, 0.8]))
    assert row["cknna_f_mean"] == pytest.approx(0.1)
    # three seeds: the mean's seed-bootstrap interval spans the pair values' range at most
    assert 0.21 <= row["mutual_knn_f_ci_low"] <= row["mutual_knn_f_mean"]
    assert row["mutual_knn_f_mean"] <= row["mutual_knn_f_ci_high"] <= 0.22


def test_trends_count_the_class_counts_whose_alignment_rises_with_width():
    trends = alignment_trends(alignment_table(grid()))
    assert trends["rho_width_by_k"] == {4: pytest.approx(1.0), 6: pytest.approx(-1.0)}
    assert trends["rising_with_width"] == 1 and trends["class_counts"] == 2
    assert -1 <= trends["rho_accuracy"] <= 1


def test_rho_is_undefined_with_two_widths_or_constant_alignment():
    two = alignment_table(grid()[lambda d: d["width"] < 64])
    assert np.isnan(alignment_trends(two)["rho_width_by_k"][4])
    flat = grid().assign(mutual_knn_f=0.5)
    assert np.isnan(alignment_trends(alignment_table(flat))["rho_accuracy"])


def test_read_alignment_table_takes_k_and_width_from_the_metadata(tmp_path):
    paths = []
    for (k, width), group in grid().groupby(["K", "width"]):
        path = tmp_path / f"K{k}_w{width}.parquet"
        write_parquet(path, group.drop(columns=["K", "width"]), {"K": int(k), "width": int(width)})
        paths.append(path)
    read = read_alignment_table(paths)
    expected = alignment_table(grid())
    read = read.sort_values(["num_classes", "width"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(read, expected.reset_index(drop=True), check_dtype=False)


def test_the_figure_draws_one_line_and_one_point_per_configuration():
    table = alignment_table(grid())
    trends = alignment_trends(table)
    fig = alignment_figure(table, trends["rho_width_by_k"], trends["rho_accuracy"])
    left, right = fig.axes[:2]
    assert len(left.lines) == 2 and all(len(line.get_xdata()) == 3 for line in left.lines)
    k4 = table[table["num_classes"] == 4].sort_values("width")
    np.testing.assert_allclose(left.lines[0].get_ydata(), k4["mutual_knn_f_mean"])
    assert sum(len(c.get_offsets()) for c in right.collections) == 6
    labels = left.get_legend_handles_labels()[1]
    assert labels == ["4 classes (ρ = 1.00)", "6 classes (ρ = -1.00)"]
    plt.close(fig)


def test_the_paper_comparison_rows_are_informational_and_carry_the_numbers():
    checks = alignment_checks(alignment_table(grid()))
    assert [c.verdict for c in checks] == ["informational", "informational"]
    assert "K=4: +1.00" in checks[0].claim and "K=6: -1.00" in checks[0].claim
    assert checks[0].ours == "1 of 2 K rising"
    rho = alignment_trends(alignment_table(grid()))["rho_accuracy"]
    assert checks[1].ours == pytest.approx(rho)
