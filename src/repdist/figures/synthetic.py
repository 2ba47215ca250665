"""Figures of the synthetic experiments: the data (Fig. 4) and d_LLV / d_{f,g} vs width (Fig. 3
right, App. F.7), drawn from the width tables of `experiments.synthetic.widths`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..data.radial import RadialData
from .style import (D_FG, D_LLV, LINE_COLOURS, PAPER_BLUE, band_key, legend_below,
                    legend_beside, line_key, plt)


def data_figure(data: RadialData, name: str = "Radial data", cmap: str = "Paired") -> plt.Figure:
    """Training points (their first two coordinates) coloured by class: Paired as paper Fig. 4;
    Roeder et al.'s Fig. 2a passes tab20, whose 20 colours keep 18 wedges apart."""
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.scatter(data.x[:, 0], data.x[:, 1], c=data.labels, cmap=cmap, s=5)
    ax.set_title(f"{name}, {data.num_classes} classes, {len(data.x):,} training points")
    ax.set_aspect("equal")
    return fig


def width_figure(summaries: Mapping[int, pd.DataFrame], threshold: float, min_seeds: int,
                 title: str = "", baseline: pd.DataFrame | None = None) -> plt.Figure:
    """Mean d_LLV and d_{f,g} vs width, a line (±1 sd band, as the paper) per class count, and
    the mean's 95 % seed-bootstrap interval as bars where the summary has it; with a `baseline`
    (width_baseline), the same seeds untrained dashed and the null's mean tau dotted."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.6))
    notes: list[str] = []
    tops: dict[str, float] = {}
    for colour, (k, summary) in zip(LINE_COLOURS, summaries.items(), strict=False):
        if summary.empty:
            notes.append(f"K={k}: no width with ≥ {min_seeds} seeds of accuracy > {threshold:g}")
            continue
        for ax, key in ((left, "d_llv"), (right, "d_fg")):
            mean, std = summary[f"{key}_mean"].to_numpy(), summary[f"{key}_std"].to_numpy()
            ax.plot(summary["width"], mean, color=colour, lw=2.5, label=f"{k} classes")
            ax.fill_between(summary["width"], mean - std, mean + std, color=colour, alpha=0.2)
            if f"{key}_ci_low" in summary:
                bars = [mean - summary[f"{key}_ci_low"], summary[f"{key}_ci_high"] - mean]
                ax.errorbar(summary["width"], mean, yerr=np.abs(bars), fmt="none",
                            ecolor=colour, elinewidth=1.2, capsize=3)
            rows = baseline[baseline["K"] == k] if baseline is not None else []
            if len(rows):
                ax.plot(rows["width"], rows[f"{key}_untrained_mean"], "--", color=colour, lw=1.5)
                ax.plot(rows["width"], rows[f"{key}_tau_mean"], ":", color=colour, lw=1.5)
                tops[key] = max(tops.get(key, 0.0), float(np.nanmax(mean + std)),
                                float(rows[f"{key}_tau_mean"].max()))
        nan_pairs = int(summary["nan_pairs"].sum())
        if nan_pairs:
            notes.append(f"K={k}: {nan_pairs} pairs with undefined measures left out")
    for ax, key in ((left, "d_llv"), (right, "d_fg")):  # an untrained d_LLV can be 10x
        if key in tops and ax.get_ylim()[1] > 2 * tops[key]:  # the trained: cut it off
            ax.set_ylim(top=1.3 * tops[key])
            notes.append(f"untrained {'d_LLV' if key == 'd_llv' else 'd_fg'} beyond the "
                         "top of its axis where cut off")
    left.set(xlabel="width", ylabel=f"mean {D_LLV}")
    right.set(xlabel="width", ylabel=f"mean {D_FG}")
    if right.get_legend_handles_labels()[0]:
        legend_beside(right, width_keys(right, summaries, baseline))
    caption = (f"pairs of seeds with test accuracy > {threshold:g}; widths with ≥ {min_seeds} "
               "seeds")
    fig.suptitle("\n".join([*([title] if title else []), caption, *notes]), fontsize=11)
    fig.tight_layout()
    return fig


def width_keys(ax: plt.Axes, summaries: Mapping[int, pd.DataFrame],
               baseline: pd.DataFrame | None) -> list[Any]:
    """The width figure's legend: a line per class count in its colour, then what each style
    means (band, bars, and with a baseline the untrained and chance lines)."""
    keys: list[Any] = [*ax.get_legend_handles_labels()[0], line_key("mean over pairs of seeds"),
                       band_key("±1 sd over pairs", "grey", 0.3)]
    if any("d_llv_ci_low" in s for s in summaries.values()):
        keys.append(line_key("the mean's 95 % interval (seeds resampled)", style="",
                             marker="|", markersize=12, markeredgewidth=1.2))
    if baseline is not None and len(baseline):
        keys += [line_key("the same seeds untrained", style="--", lw=1.5),
                 line_key("chance (the null's mean τ)", style=":", lw=1.5)]
    return keys


MEASURE_PANELS = (("d_llv", D_LLV), ("d_fg", D_FG), ("kl", r"$d_{\mathrm{KL}}$"),
                  ("d_logit", r"$d_{\mathrm{logit}}$"), ("mcca_f", r"$m_{\mathrm{CCA}}$"),
                  ("svcca_f", "SVCCA"), ("cka_f", "linear CKA"), ("mutual_knn_f", "mutual k-NN"))


def measures_vs_width_figure(summary: pd.DataFrame, num_classes: int, n_pairs: int,
                             nan_pairs: int) -> plt.Figure:
    """One panel per measure of a `measures_by_width` table: mean ± sd over seed pairs against
    width, and the null's mean tau as a grey band from the axis (chance; low end for distances)."""
    panels = [(c, label) for c, label in MEASURE_PANELS if f"{c}_mean" in summary.columns]
    fig, axes = plt.subplots(2, 4, figsize=(17, 7), sharex=True)
    chance = any(f"{col}_tau_mean" in summary.columns for col, _ in panels)
    for ax, (col, label) in zip(axes.ravel(), panels, strict=False):
        mean, std = summary[f"{col}_mean"], summary[f"{col}_std"]
        ax.plot(summary.index, mean, color=PAPER_BLUE, lw=2, marker="o")
        ax.fill_between(summary.index, mean - std, mean + std, color=PAPER_BLUE, alpha=0.2)
        if f"{col}_tau_mean" in summary.columns:
            tau = summary[f"{col}_tau_mean"]
            ax.fill_between(summary.index, 0, tau, color="0.5", alpha=0.25, lw=0)
        ax.set_title(label)
        ax.set_xscale("log", base=2)
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("width")
    keys = [line_key("mean over seed pairs", PAPER_BLUE, marker="o", lw=2),
            band_key("±1 sd over seed pairs", PAPER_BLUE),
            *([band_key("chance (the null's mean τ)", "0.5", 0.25)] if chance else [])]
    legend_beside(axes[0, -1], keys)
    note = f"; {nan_pairs} pairs with an undefined measure left out of it" if nan_pairs else ""
    fig.suptitle(f"All measures vs width, K = {num_classes}, unnormalised models, all "
                 f"{n_pairs} seed pairs{note}", fontsize=12)
    fig.tight_layout()
    return fig


def alignment_figure(table: pd.DataFrame, rho_width: Mapping[int, float],
                     rho_accuracy: float, column: str = "mutual_knn_f",
                     models: str = "the synthetic grid (unnormalised models)") -> plt.Figure:
    """The Platonic Representation Hypothesis' claim on the synthetic grid: mean alignment over
    seed pairs against width, a line (±1 sd band) per class count, and against the seeds' mean
    test accuracy, a point per (K, width), its size the width; Spearman's rho in the legends."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.5, 5.4))
    mean, std = f"{column}_mean", f"{column}_std"
    for colour, (k, rows) in zip(LINE_COLOURS * 3, table.groupby("num_classes"), strict=False):
        rows = rows.sort_values("width")
        label = f"{k} classes (ρ = {rho_width.get(int(k), float('nan')):.2f})"
        left.plot(rows["width"], rows[mean], color=colour, lw=2.5, marker="o", label=label)
        left.fill_between(rows["width"], rows[mean] - rows[std], rows[mean] + rows[std],
                          color=colour, alpha=0.2)
        if f"{column}_tau_mean" in rows:  # what chance reaches at that width, dotted
            left.plot(rows["width"], rows[f"{column}_tau_mean"], ":", color=colour, lw=1.5)
        right.scatter(rows["test_accuracy"], rows[mean], color=colour, s=marker_area(rows["width"]),
                      alpha=0.75, edgecolors="white", linewidths=0.5, label=f"{k} classes")
    left.set_xscale("log", base=2)
    left.set_xlabel("width")
    right.set_xlabel("mean test accuracy of the seeds")
    name = column.removesuffix("_f").replace("_", " ")
    for ax in (left, right):
        ax.set_ylabel(f"{name} alignment of f between seeds")
    keys = [band_key("±1 sd over seed pairs", "grey", 0.3)]
    if f"{column}_tau_mean" in table:
        keys.append(line_key("chance (the null's mean τ)", style=":", lw=1.5))
    legend_below(left, [*left.get_legend_handles_labels()[0], *keys], ncols=2)
    sizes = [line_key(f"width {w:g}", "grey", "", marker="o",
                      markersize=float(np.sqrt(marker_area(w))))
             for w in sorted({table["width"].min(), table["width"].max()})]
    legend_below(right, [*right.get_legend_handles_labels()[0], *sizes], ncols=2)
    fig.suptitle(f"Platonic Representation Hypothesis on {models}: does {name} alignment rise with "
                 f"width and accuracy? ρ(alignment, accuracy) = {rho_accuracy:.2f}", fontsize=10)
    fig.tight_layout()
    return fig


def marker_area(width: Any) -> Any:
    """The alignment figure's marker area (points squared) for a width: larger when wider."""
    return 25 + width / 4
