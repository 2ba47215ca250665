"""Mean +- sd over seed pairs of m_CCA, d_LLV and d_{f,g} against the training step."""

from __future__ import annotations

import pandas as pd

from .style import D_FG, D_LLV, PAPER_BLUE, plt


def dynamics_figure(snapshots: pd.DataFrame, title: str) -> plt.Figure:
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), sharex=True)
    grouped = snapshots.groupby("step")
    for ax, col, label in zip(axes, ("mcca_f", "d_llv", "d_fg"),
                              (r"$m_{\mathrm{CCA}}$ of f", D_LLV, D_FG), strict=True):
        mean, std = grouped[col].mean(), grouped[col].std(ddof=0)
        ax.plot(mean.index, mean.to_numpy(), color=PAPER_BLUE, lw=2, marker="o", ms=4)
        ax.fill_between(mean.index, (mean - std).to_numpy(), (mean + std).to_numpy(),
                        color=PAPER_BLUE, alpha=0.2)
        ax.set_xlabel("training step")
        ax.set_ylabel(f"mean {label}")
    pairs = int(grouped.size().iloc[0]) if len(snapshots) else 0
    fig.suptitle(f"{title} — mean ± sd over {pairs} seed pairs", fontsize=12)
    fig.tight_layout()
    return fig
