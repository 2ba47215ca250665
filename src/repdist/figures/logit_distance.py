"""The follow-up's figures (Nielsen et al. 2026; their figures/metric_plots_cifar.py and
bound_plot_cifar.py), from experiments/logit_distance_tables.py's tables.

- `metrics_figure`: each metric over epochs for each pair of losses (L1 vs KL, L1 vs L2, L2 vs
  KL), the inverse-variance average over teachers with a band of +- 1.96 standard deviations of
  that average, test inputs solid, training inputs dashed.
- `bound_figure`: Theorem F.1 per student, sum (1 - rho^2) lambda against d_logit^2 with the
  bound's line (every point below it), and the KL bound 2 KL / tau^2 against d_logit^2 (every
  point above its line: how far above is how loose it is).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .style import plt

LOSS_STYLE = {
    "kl": ("KL", "#002347"),
    "l1": (r"$L_1$ logits", "#2a9d8f"),
    "l2": (r"$L_2$ logits", "#FF5003"),
    "labels": ("labels only", "#8d8d8d"),
}
PAIRS = (("l1", "kl"), ("l1", "l2"), ("l2", "kl"))
ROWS = (("mcca", r"$m_{\mathrm{CCA}}$", False), ("d_rep", r"$d_{\mathrm{rep}}$", True),
        ("d_logit2", r"$d^2_{\mathrm{logit}}$", True), ("kl", "KL(teacher || student)", True),
        ("agreement", "agreement with the teacher", False))


def metrics_figure(summary: pd.DataFrame, title: str) -> plt.Figure:
    fig, axes = plt.subplots(len(ROWS), len(PAIRS), figsize=(15, 3.1 * len(ROWS)),
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
        axes[0, col].legend(fontsize=9, loc="best")
    fig.suptitle(f"{title}: inverse-variance average over teachers, band +- 1.96 sd "
                 "(test solid, train dashed)", fontsize=12)
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
        ax.plot(x, mean, style, color=colour, marker="o", ms=3,
                label=label if split == "test" else None)
        if split == "test":
            ax.fill_between(x, mean - half, mean + half, color=colour, alpha=0.2, lw=0)


def bound_figure(final: pd.DataFrame, title: str) -> plt.Figure:
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.2))
    d2 = final["f1_right"].to_numpy(dtype=float)
    for loss, rows in final.groupby("loss", sort=False):
        label, colour = LOSS_STYLE.get(loss, (loss, None))
        left.scatter(rows["f1_right"], rows["f1_left"], color=colour, s=30, label=label)
        right.scatter(rows["f1_right"], rows["kl_bound"], color=colour, s=30, label=label)
    span = np.array([max(np.nanmin(d2[d2 > 0]), 1e-8) if (d2 > 0).any() else 1e-8,
                     max(np.nanmax(d2), 1e-7)]) * np.array([0.5, 2.0])
    for ax in (left, right):
        ax.plot(span, span, "k--", lw=1, label="y = x")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"$d^2_{\mathrm{logit}}$(teacher, student), test")
    violations = int((~final["f1_holds"].astype(bool)).sum())
    left.set_ylabel(r"$\sum_k (1 - \rho_k^2)\,\lambda_k$")
    left.set_title(f"Theorem F.1: below the line ({violations} above)", fontsize=12)
    right.set_ylabel(r"$2\,\mathrm{KL} / \tau^2$")
    loose = final["kl_bound_looseness"].replace(np.inf, np.nan).median()
    right.set_title(f"KL bound under tau-lower-boundedness: {loose:.3g}x d_logit^2 (median)",
                    fontsize=12)
    left.legend(fontsize=9)
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    return fig
