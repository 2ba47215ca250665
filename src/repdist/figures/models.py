"""Figures for a group of models compared pair by pair (the config's `models:` section): the
bound d_{f,g} <= 2M d_LLV, and every measure as a model-by-model matrix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .bound import bound_figure
from .style import PAPER_BLUE, colour_bar, colour_map, plt
from .synthetic import MEASURE_PANELS


def pair_matrix(pairs: pd.DataFrame, column: str, names: list[str]) -> np.ndarray:
    """The symmetric model x model matrix of one measure (NaN on the diagonal)."""
    index = {n: i for i, n in enumerate(names)}
    matrix = np.full((len(names), len(names)), np.nan)
    for a, b, value in pairs[["model_a", "model_b", column]].itertuples(index=False):
        matrix[index[a], index[b]] = matrix[index[b], index[a]] = value
    return matrix


def measures_figure(pairs: pd.DataFrame, names: list[str], title: str) -> plt.Figure:
    """One heatmap per measure, models in the order given, each pair's value in its cell; its
    colour map and colour bar's label by the measure's direction (style.colour_bar)."""
    panels = [(c, label) for c, label in MEASURE_PANELS if c in pairs.columns]
    cols = 4
    rows = -(-len(panels) // cols)
    size = max(3.2, 0.35 * len(names) + 1.5)
    fig, axes = plt.subplots(rows, cols, figsize=(cols * size, rows * size), squeeze=False)
    for ax, (column, label) in zip(axes.ravel(), panels, strict=False):
        image = ax.imshow(pair_matrix(pairs, column, names), cmap=colour_map(column))
        ax.set_title(label)
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=8)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        colour_bar(image, ax, column, fraction=0.046, pad=0.04)
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=12, color=PAPER_BLUE)
    fig.tight_layout()
    return fig


def group_figures(pairs: pd.DataFrame, meta: Mapping[str, Any],
                  group: str) -> tuple[plt.Figure, plt.Figure]:
    names = [m["name"] for m in meta["models"]]
    m = int(meta["M"])  # the largest width (experiments.models.groups): its bound holds for all
    widths = sorted({int(model.get("M", m)) for model in meta["models"]})
    shown = f"M = {m}" if len(widths) == 1 else f"M = {widths[0]} to {m}"
    bound = bound_figure(pairs, m, f"Models '{group}' ({len(names)} models, {shown})", 20)
    title = f"Models '{group}': every measure for every pair ({len(pairs)} pairs)"
    return bound, measures_figure(pairs, names, title)
