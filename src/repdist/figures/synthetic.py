"""Figures of the synthetic experiments: the data (Fig. 4) and d_LLV / d_{f,g} vs width (Fig. 3
right, App. F.7)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from ..data.radial import RadialData
from .style import D_FG, D_LLV, PAPER_BLUE, PAPER_ORANGE, plt

LINE_COLOURS = [PAPER_BLUE, PAPER_ORANGE, "#2E8B57", "#8B008B"]


def data_figure(data: RadialData) -> plt.Figure:
    """Training points coloured by class (Paired colormap), as paper Fig. 4."""
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.scatter(data.x[:, 0], data.x[:, 1], c=data.labels, cmap="Paired", s=5)
    ax.set_title(f"Radial data, {data.num_classes} classes, {len(data.x):,} training points")
    ax.set_aspect("equal")
    return fig


def width_summary(pairs: pd.DataFrame, threshold: float, min_seeds: int) -> pd.DataFrame:
    """Per width: mean and population sd of d_LLV and d_{f,g} over pairs of high-accuracy seeds.

    A seed is high-accuracy if its test accuracy > threshold; a width is kept only if it has at
    least `min_seeds` such seeds (spec §6.4). Pairs with a NaN measure are left out and counted.
    """
    rows = []
    for width, group in pairs.groupby("width"):
        acc = pd.concat(
            [group[["seed_a", "acc_a"]].set_axis(["seed", "acc"], axis=1),
             group[["seed_b", "acc_b"]].set_axis(["seed", "acc"], axis=1)]
        ).drop_duplicates("seed")
        good = set(acc.loc[acc["acc"] > threshold, "seed"])
        if len(good) < min_seeds:
            continue
        kept = group[group["seed_a"].isin(good) & group["seed_b"].isin(good)]
        valid = kept.dropna(subset=["d_llv", "d_fg"])
        rows.append(
            {
                "width": width,
                "seeds": len(good),
                "pairs": len(valid),
                "nan_pairs": len(kept) - len(valid),
                "d_llv_mean": valid["d_llv"].mean(),
                "d_llv_std": valid["d_llv"].std(ddof=0),
                "d_fg_mean": valid["d_fg"].mean(),
                "d_fg_std": valid["d_fg"].std(ddof=0),
            }
        )
    return pd.DataFrame(rows)


def width_summaries(paths: Sequence[str | Path], threshold: float,
                    min_seeds: int) -> dict[int, pd.DataFrame]:
    """Pairs tables of one class-count group (read with their K and width metadata) -> the
    per-width summary of each class count (`width_summary`), in class-count order."""
    from ..io import read_parquet_metadata

    by_k: dict[int, list[pd.DataFrame]] = {}
    for path in paths:
        meta = read_parquet_metadata(path)
        by_k.setdefault(int(meta["K"]), []).append(pd.read_parquet(path).assign(width=meta["width"]))
    return {k: width_summary(pd.concat(tables), threshold, min_seeds)
            for k, tables in sorted(by_k.items())}


def width_table(summaries: Mapping[int, pd.DataFrame]) -> pd.DataFrame:
    """The summaries as one table with a num_classes column."""
    return pd.concat([s.assign(num_classes=k) for k, s in summaries.items()], ignore_index=True)


def width_figure(
    summaries: Mapping[int, pd.DataFrame], threshold: float, min_seeds: int, title: str = ""
) -> plt.Figure:
    """Two panels: mean d_LLV and mean d_{f,g} vs width, one line (+-1 sd band) per class count."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 4.6))
    notes = []
    for colour, (k, summary) in zip(LINE_COLOURS, summaries.items(), strict=False):
        if summary.empty:
            notes.append(f"K={k}: no width with ≥ {min_seeds} seeds of accuracy > {threshold:g}")
            continue
        for ax, key in ((left, "d_llv"), (right, "d_fg")):
            mean, std = summary[f"{key}_mean"].to_numpy(), summary[f"{key}_std"].to_numpy()
            ax.plot(summary["width"], mean, color=colour, lw=2.5, label=f"{k} classes")
            ax.fill_between(summary["width"], mean - std, mean + std, color=colour, alpha=0.2)
        nan_pairs = int(summary["nan_pairs"].sum())
        if nan_pairs:
            notes.append(f"K={k}: {nan_pairs} pairs with undefined measures left out")
    left.set_ylabel(f"mean {D_LLV}")
    right.set_ylabel(f"mean {D_FG}")
    right.yaxis.set_label_position("right")
    for ax in (left, right):
        ax.set_xlabel("width")
    if right.get_legend_handles_labels()[0]:
        right.legend()
    caption = f"pairs of seeds with test accuracy > {threshold:g}; widths with ≥ {min_seeds} seeds"
    fig.suptitle("\n".join([*([title] if title else []), caption, *notes]), fontsize=11)
    fig.tight_layout()
    return fig


MEASURE_PANELS = (
    ("d_llv", D_LLV),
    ("d_fg", D_FG),
    ("kl", r"$d_{\mathrm{KL}}$"),
    ("d_logit", r"$d_{\mathrm{logit}}$"),
    ("mcca_f", r"$m_{\mathrm{CCA}}$"),
    ("svcca_f", "SVCCA"),
    ("cka_f", "linear CKA"),
    ("mutual_knn_f", "mutual k-NN"),
)


def measures_by_width(pairs: pd.DataFrame) -> pd.DataFrame:
    """Mean and population sd of every measure per width (all pairs; NaN pairs left out)."""
    cols = [c for c, _ in MEASURE_PANELS if c in pairs.columns]
    grouped = pairs.groupby("width")[cols]
    return grouped.mean().join(grouped.std(ddof=0), lsuffix="_mean", rsuffix="_std")


def measures_vs_width_figure(pairs: pd.DataFrame, num_classes: int) -> plt.Figure:
    """One panel per measure: mean +- sd over all seed pairs against width."""
    summary = measures_by_width(pairs)
    panels = [(c, label) for c, label in MEASURE_PANELS if f"{c}_mean" in summary.columns]
    fig, axes = plt.subplots(2, 4, figsize=(16, 7), sharex=True)
    for ax, (col, label) in zip(axes.ravel(), panels, strict=False):
        mean, std = summary[f"{col}_mean"], summary[f"{col}_std"]
        ax.plot(summary.index, mean, color=PAPER_BLUE, lw=2, marker="o")
        ax.fill_between(summary.index, mean - std, mean + std, color=PAPER_BLUE, alpha=0.2)
        ax.set_title(label)
        ax.set_xscale("log", base=2)
    for ax in axes[-1]:
        ax.set_xlabel("width")
    nan_pairs = int(pairs[[c for c, _ in panels]].isna().any(axis=1).sum())
    note = f"; {nan_pairs} pairs with an undefined measure left out of it" if nan_pairs else ""
    fig.suptitle(f"All measures vs width, K = {num_classes}, unnormalised models, all "
                 f"{len(pairs)} seed pairs{note}", fontsize=12)
    fig.tight_layout()
    return fig
