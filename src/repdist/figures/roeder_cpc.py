"""Roeder et al. (2021) Fig. 3: (a) the data, a patch of each image's top half (x) and one of its
bottom half (y), as a training step cuts and augments them; (b) mean CCA of f and of g between
pairs of models over training; (c) against the amount of training data; (d) against width."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle

from .style import PAPER_BLUE, PAPER_ORANGE, legend_beside, line_key, plt

SIDES = {"f": PAPER_BLUE, "g": PAPER_ORANGE}
FRAMES = {"f": "#3D9BFF", "g": PAPER_ORANGE}  # x's frame lighter than f's line: seen on black
AXES = {"b": ("training step", "linear", "(b) over training"),
        "c": ("training images", "log", "(c) against training data"),
        "d": ("hidden units", "log", "(d) against width")}


def cpc_figure(examples: Mapping[str, np.ndarray], summary: pd.DataFrame, title: str,
               examples_shown: int = 3) -> plt.Figure:
    """`examples`: the npz experiments.roeder.cpc.write_examples writes; `summary`:
    roeder_cpc_tables.cpc_summary's table."""
    fig = plt.figure(figsize=(19, 4.4))
    grid = fig.add_gridspec(1, 4, width_ratios=[1.1, 1, 1, 1], wspace=0.3)
    _data_panel(fig, grid[0], examples, examples_shown)
    keys: dict[str, Any] = {}
    for k, panel in enumerate(("b", "c", "d")):
        ax = fig.add_subplot(grid[k + 1])
        _trend_panel(ax, summary[summary["panel"] == panel].sort_values("x"), panel)
        keys.update(zip(*reversed(ax.get_legend_handles_labels()), strict=True))
    if any(c.endswith("_ci_low") for c in summary.columns):
        keys["95 % interval (seeds resampled)"] = line_key(
            "95 % interval (seeds resampled)", "grey", lw=6, alpha=0.25)
    legend_beside(ax, list(keys.values()))
    pairs = summary["pairs"].max() if len(summary) else 0
    fig.suptitle(f"{title} — mean ± standard error over {pairs} pairs of models", fontsize=12)
    return fig


def _data_panel(fig: plt.Figure, cell, examples: Mapping[str, np.ndarray], n: int) -> None:
    """Per example: the image with its patches framed (x: top, y: bottom), then both augmented."""
    n = min(n, len(examples["images"]))
    inner = cell.subgridspec(n, 3, wspace=0.05, hspace=0.1)
    h, w = examples["top"].shape[2:]
    for i in range(n):
        image_ax = fig.add_subplot(inner[i, 0])
        _show(image_ax, examples["images"][i])
        for corner, colour in ((examples["top_at"][i], FRAMES["f"]),
                               (examples["bottom_at"][i], FRAMES["g"])):
            image_ax.add_patch(Rectangle((corner[1] - 0.5, corner[0] - 0.5), w, h, fill=False,
                                         edgecolor=colour, lw=2))
        for j, (key, name) in enumerate((("top", "x"), ("bottom", "y")), start=1):
            ax = fig.add_subplot(inner[i, j])
            _show(ax, examples[key][i])
            if i == 0:
                ax.set_title(f"{name} (augmented)", fontsize=10)
        if i == 0:
            image_ax.set_title("(a) image", fontsize=10)


def _show(ax: plt.Axes, image: np.ndarray) -> None:
    """A (C, H, W) image in [0, 1]: RGB, or grey."""
    picture = np.clip(np.moveaxis(image, 0, -1), 0, 1)
    if picture.shape[-1] == 1:
        ax.imshow(picture[..., 0], cmap="gray", vmin=0, vmax=1)
    else:
        ax.imshow(picture)
    ax.set(xticks=[], yticks=[])


def _trend_panel(ax: plt.Axes, rows: pd.DataFrame, panel: str) -> None:
    """Mean ± standard error over the pairs per point of each side (pale and wide: the mean's 95 %
    seed-bootstrap interval); where the summary has them, each canonical correlation (thin: Fig.
    3b), the null's tau (a band from 0) and the untrained models' value (dashed: step 0)."""
    xlabel, scale, title = AXES[panel]
    for side, colour in SIDES.items():
        ax.errorbar(rows["x"], rows[f"mcca_{side}_mean"], yerr=rows[f"mcca_{side}_se"],
                    color=colour, marker="o", ms=4, lw=2, capsize=3, label=side)
        if f"mcca_{side}_ci_low" in rows:
            ax.vlines(rows["x"], rows[f"mcca_{side}_ci_low"], rows[f"mcca_{side}_ci_high"],
                      color=colour, lw=6, alpha=0.25)
        tau = rows.get(f"mcca_{side}_tau_mean")
        if tau is not None and tau.notna().any():
            ax.fill_between(rows["x"], 0, tau, color=colour, alpha=0.12, lw=0,
                            label=f"{side}: chance (null's tau)")
        coefficients = [c for c in rows.columns if c.startswith(f"cca_{side}_")]
        for k, column in enumerate(coefficients):  # (b): every canonical correlation, thin
            if rows[column].notna().any():
                ax.plot(rows["x"], rows[column], color=colour, lw=0.7, alpha=0.45,
                        label=f"{side}: each canonical correlation" if k == 0 else None)
        untrained = rows.get(f"mcca_{side}_untrained_mean")
        if untrained is not None and untrained.notna().any():
            ax.plot(rows["x"], untrained, color=colour, ls="--", lw=1.2,
                    label=f"{side}: untrained (step 0)")
    if scale == "log" and len(rows) and rows["x"].min() > 0:
        ax.set_xscale("log")
        ax.set_xticks(rows["x"], [f"{x:,.0f}" for x in rows["x"]], minor=False)
        ax.minorticks_off()
    ax.set(xlabel=xlabel, ylabel=r"mean CCA ($m_{\mathrm{CCA}}$)")
    ax.set_title(title, fontsize=12)
