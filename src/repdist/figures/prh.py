"""The Platonic Representation Hypothesis' study drawn: their Fig. 3, raw and calibrated, and
the language x vision matrix of both as heatmaps."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..measures.glossary import missing
from .style import colour_bar, colour_map, legend_below, legend_beside, line_key, plt

METRIC_NAMES = {"mutual_knn": "mutual k-NN", "cycle_knn": "cycle k-NN", "lcs_knn": "LCS k-NN",
                "edit_distance_knn": "edit-distance k-NN", "cka": "CKA",
                "unbiased_cka": "unbiased CKA", "cknna": "CKNNA", "svcca": "SVCCA"}
ROWS = (("score", "alignment"), ("calibrated", "calibrated alignment"))


def alignment_figure(table: pd.DataFrame, families: Sequence[str]) -> plt.Figure:
    """PRH's Fig. 3, raw (top) and calibrated (bottom): per family, a line per vision model
    (darker: fewer parameters) through the language models ordered by performance (1 - bits
    per byte); the null's tau faint beside the raw line."""
    metric = METRIC_NAMES.get(str(table["metric"].iloc[0]), str(table["metric"].iloc[0]))
    fig, axes = plt.subplots(2, len(families), figsize=(4.2 * len(families), 7.5),
                             squeeze=False, sharex=True)
    for col, family in enumerate(families):
        part = table[table["family"] == family]
        order = part.groupby("vision")["vision_parameters"].first().sort_values()
        shades = plt.cm.viridis(np.linspace(0.15, 0.85, max(len(order), 1)))
        for (vision, params), colour in zip(order.items(), shades, strict=False):
            line = part[part["vision"] == vision].sort_values("performance")
            label = f"{vision} ({params / 1e6:.3g}M)" if params and params >= 1e6 else vision
            for row, (column, _) in enumerate(ROWS):
                ax = axes[row, col]
                ax.plot(line["performance"], line[column], "o-", color=colour, label=label)
                if column == "score" and line["tau"].notna().any():
                    ax.plot(line["performance"], line["tau"], ":", color=colour, alpha=0.6)
        axes[0, col].set_title(family)
        axes[-1, col].set_xlabel("language performance\n(1 - bits per byte)", fontsize=11)
        legend_below(axes[-1, col], axes[-1, col].get_legend_handles_labels()[0], fontsize=8)
    for row, (_, label) in enumerate(ROWS):
        axes[row, 0].set_ylabel(f"{label}\n({metric}, best layer pair)")
    legend_beside(axes[0, -1], [line_key("alignment", marker="o"),
                                line_key("the null's τ (chance)", style=":", alpha=0.6)])
    fig.suptitle("Alignment to vision models against language performance (PRH Fig. 3)",
                 fontsize=12)
    fig.tight_layout()
    return fig


def metric_column(table: pd.DataFrame, column: str) -> str:
    """The glossary's column a matrix of `column` is read by: the metric's own for `score`
    (mutual_knn: mutual_knn_f, whose top is its "the same"), else `column` itself."""
    own = f"{table['metric'].iloc[0]}_f"
    return own if column == "score" and not missing([own]) else column


def matrix_figure(table: pd.DataFrame, families: Sequence[str]) -> plt.Figure:
    """The language x vision matrix, raw and calibrated; '*' where q <= alpha (Benjamini-
    Hochberg over the matrix), the vision models by family then size."""
    vision = (table.sort_values(["vision_parameters"])
              .assign(rank=lambda t: t["family"].map({f: i for i, f in enumerate(families)}))
              .sort_values(["rank", "vision_parameters"], kind="stable")["vision"].unique())
    language = table.sort_values("performance")["language"].unique()
    fig, axes = plt.subplots(1, 2, figsize=(2 + 1.1 * len(vision) * 2, 1.5 + 0.6 * len(language)),
                             squeeze=False)
    for ax, (column, label) in zip(axes[0], ROWS, strict=True):
        grid = table.pivot(index="language", columns="vision", values=column).loc[language, vision]
        star = table.pivot(index="language", columns="vision", values="significant")
        star = star.loc[language, vision].fillna(False).astype(bool)
        values = grid.to_numpy(dtype=float)
        glossary_column = metric_column(table, column)
        image = ax.imshow(values, cmap=colour_map(glossary_column), aspect="auto")
        for i, j in np.ndindex(values.shape):
            value, mark = values[i, j], "*" if star.iloc[i, j] else ""
            red, green, blue, _ = image.cmap(image.norm(value))
            luminance = 0.299 * red + 0.587 * green + 0.114 * blue
            dark = bool(np.isfinite(value)) and luminance < 0.5
            ax.text(j, i, f"{value:.2f}{mark}", ha="center", va="center", fontsize=8,
                    color="white" if dark else "black")
        ax.set_xticks(range(len(vision)), vision, rotation=60, ha="right", fontsize=9)
        ax.set_yticks(range(len(language)), language, fontsize=9)
        ax.set_title(label, fontsize=12)
        colour_bar(image, ax, glossary_column, shown=column, shrink=0.8)
    fig.tight_layout()
    return fig
