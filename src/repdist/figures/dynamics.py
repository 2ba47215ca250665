"""Mean ± sd over seed pairs of m_CCA, d_LLV and d_{f,g} against the training step: one line
per run (the NeurIPS MLP's training_dynamics; Roeder et al.'s Fig. 2b, one per data variant),
each with its chance level (the null's mean tau) dotted where the snapshots drew a null."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from .style import D_FG, D_LLV, LINE_COLOURS, PAPER_BLUE, band_key, legend_beside, plt


def dynamics_figure(snapshots: pd.DataFrame | Mapping[str, pd.DataFrame], title: str,
                    mark_step: int | None = None, mark_label: str = "") -> plt.Figure:
    """`snapshots`: one table (SNAPSHOT_COLUMNS) or several by legend label; `mark_step`: a
    dotted vertical line (e.g. the step a paper names), labelled `mark_label`, drawn where the
    curves reach it."""
    runs = {"": snapshots} if isinstance(snapshots, pd.DataFrame) else dict(snapshots)
    colours = [PAPER_BLUE] if len(runs) == 1 else LINE_COLOURS
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), sharex=True)
    pairs, last_step = 0, 0
    for colour, (label, table) in zip(colours, runs.items(), strict=False):
        grouped = table.groupby("step")
        pairs = max(pairs, int(grouped.size().max()) if len(table) else 0)
        last_step = max(last_step, int(table["step"].max()) if len(table) else 0)
        for ax, col in zip(axes, ("mcca_f", "d_llv", "d_fg"), strict=True):
            mean, std = grouped[col].mean(), grouped[col].std(ddof=0)
            ax.plot(mean.index, mean.to_numpy(), color=colour, lw=2, marker="o",
                    ms=4 if len(mean) <= 30 else 0, label=label or None)
            ax.fill_between(mean.index, (mean - std).to_numpy(), (mean + std).to_numpy(),
                            color=colour, alpha=0.2)
            if f"{col}_tau" in table.columns:  # what chance reaches at that step
                tau = grouped[f"{col}_tau"].mean()
                ax.plot(tau.index, tau.to_numpy(), ":", color=colour, lw=1.5,
                        label="chance (null's tau)" if colour == colours[0] else None)
    mark = mark_step is not None and mark_step <= last_step  # not past the curves' end
    for ax, label in zip(axes, (r"$m_{\mathrm{CCA}}$ of f", D_LLV, D_FG), strict=True):
        if mark:
            ax.axvline(mark_step, color="grey", ls=":", lw=1.5, label=mark_label or None)
        ax.set(xlabel="training step", ylabel=f"mean {label}")
    legend_beside(axes[-1], [*axes[-1].get_legend_handles_labels()[0],
                             band_key("±1 sd over seed pairs", "grey", 0.3)])
    fig.suptitle(f"{title} — mean ± sd over {pairs} seed pairs", fontsize=12)
    fig.tight_layout()
    return fig
