"""The follow-up's figures (Nielsen et al. 2026's figures/metric_plots_cifar.py and
bound_plot_cifar.py), from experiments/logit_distance/tables.py's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .style import band_key, legend_beside, line_key, plt

LOSS_STYLE = {"kl": ("KL", "#002347"), "l1": (r"$L_1$ logits", "#2a9d8f"),
              "l2": (r"$L_2$ logits", "#FF5003"), "labels": ("labels only", "#8d8d8d")}
# each loss's marker (shape, area in points squared): hollow and of different shapes and sizes,
# so that a student drawn over another of a different loss leaves it in sight
LOSS_MARKERS = {"kl": ("o", 90), "l1": ("s", 45), "l2": ("^", 55), "labels": ("D", 30)}
PAIRS = (("l1", "kl"), ("l1", "l2"), ("l2", "kl"))
ROWS = (("mcca", r"$m_{\mathrm{CCA}}$", False), ("d_rep", r"$d_{\mathrm{rep}}$", True),
        ("d_logit2", r"$d^2_{\mathrm{logit}}$", True), ("kl", "KL(teacher || student)", True),
        ("agreement", "agreement with the teacher", False))


def metrics_figure(summary: pd.DataFrame, title: str) -> plt.Figure:
    """Each metric (a row) over epochs for each pair of losses (a column): the inverse-variance
    average over teachers ± 1.96 sd of it, test inputs solid, training inputs dashed."""
    fig, axes = plt.subplots(len(ROWS), len(PAIRS), figsize=(16.5, 3.1 * len(ROWS)),
                             sharex=True, squeeze=False)
    for col, pair in enumerate(PAIRS):
        for row, (metric, label, log) in enumerate(ROWS):
            ax = axes[row, col]
            for loss in pair:
                _band(ax, summary, loss, metric)
            if log:
                ax.set_yscale("log")
            if col == 0:
                ax.set_ylabel(label)
            if row == 0:
                ax.set_title(f"{LOSS_STYLE[pair[0]][0]} vs {LOSS_STYLE[pair[1]][0]}")
        axes[-1, col].set_xlabel("epoch")
    drawn = {loss for pair in PAIRS for loss in pair} & set(summary["loss"])
    losses = [loss for loss in LOSS_STYLE if loss in drawn]
    keys = [line_key(LOSS_STYLE[loss][0], LOSS_STYLE[loss][1], marker=LOSS_MARKERS[loss][0],
                     ms=4) for loss in losses]
    keys += [line_key("test inputs"), line_key("training inputs", style="--"),
             band_key("± 1.96 sd (test)", "grey", 0.3)]
    legend_beside(axes[0, -1], keys)
    fig.suptitle(f"{title}: inverse-variance average over teachers", fontsize=12)
    fig.tight_layout()
    return fig


def _band(ax: plt.Axes, summary: pd.DataFrame, loss: str, metric: str) -> None:
    label, colour = LOSS_STYLE.get(loss, (loss, None))
    for split, style in (("test", "-"), ("train", "--")):
        rows = summary[(summary["loss"] == loss) & (summary["metric"] == metric)
                       & (summary["split"] == split)].sort_values("epoch")
        if not len(rows):
            continue
        x, mean = rows["epoch"].to_numpy(), rows["mean"].to_numpy(dtype=float)
        half = 1.96 * np.sqrt(np.clip(rows["var"].to_numpy(dtype=float), 0, None))
        ax.plot(x, mean, style, color=colour, marker=LOSS_MARKERS.get(loss, ("o", 0))[0], ms=3,
                label=label if split == "test" else None)
        if split == "test":
            ax.fill_between(x, mean - half, mean + half, color=colour, alpha=0.2, lw=0)


def bound_figure(final: pd.DataFrame, title: str) -> plt.Figure:
    """Theorem F.1, sum (1 - rho^2) lambda (left, every point below y = x), and the KL bound
    2 KL / tau^2 (right, every point above: how far is how loose) per student against
    d_logit^2, each loss its own hollow marker; one legend beside the right panel."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.2))
    d2 = final["f1_right"].to_numpy(dtype=float)
    for loss, rows in final.groupby("loss", sort=False):
        label, colour = LOSS_STYLE.get(loss, (loss, None))
        marker, area = LOSS_MARKERS.get(loss, ("x", 40))
        for ax, column in ((left, "f1_left"), (right, "kl_bound")):
            ax.scatter(rows["f1_right"], rows[column], marker=marker, s=area, facecolors="none",
                       edgecolors=colour, linewidths=1.3, label=label)
    span = np.array([max(np.nanmin(d2[d2 > 0]), 1e-8) if (d2 > 0).any() else 1e-8,
                     max(np.nanmax(d2), 1e-7)]) * np.array([0.5, 2.0])
    for ax in (left, right):
        ax.plot(span, span, "k--", lw=1, label="y = x", zorder=1)
        ax.set(xscale="log", yscale="log",
               xlabel=r"$d^2_{\mathrm{logit}}$(teacher, student), test")
    violations = int((~final["f1_holds"].astype(bool)).sum())
    left.set_ylabel(r"$\sum_k (1 - \rho_k^2)\,\lambda_k$")
    left.set_title(f"Theorem F.1: below the line ({violations} above)", fontsize=12)
    right.set_ylabel(r"$2\,\mathrm{KL} / \tau^2$")
    loose = final["kl_bound_looseness"].replace(np.inf, np.nan).median()
    right.set_title(rf"KL bound under $\tau$-lower-boundedness: {loose:.3g}"
                    r"$\times\, d^2_{\mathrm{logit}}$ (median)", fontsize=12)
    legend_beside(right)
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    return fig
