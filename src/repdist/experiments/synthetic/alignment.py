"""The Platonic Representation Hypothesis' headline claim (Huh et al. 2024, §3: alignment
between models rises with their competence) on our synthetic models' unnormalised variant."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .widths import read_pairs, seed_accuracies, seed_intervals

ALIGNMENT_COLUMNS = ("mutual_knn_f", "cknna_f")


def alignment_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """One row per (K, width): pairs, mean test accuracy, and per alignment column its mean,
    population sd, the mean's 95 % seed-bootstrap interval and the null's means."""
    cols = [c for c in ALIGNMENT_COLUMNS if c in pairs.columns]
    rows = []
    for (k, width), group in pairs.groupby(["K", "width"]):
        row = {"num_classes": int(k), "width": int(width), "pairs": len(group),
               "test_accuracy": float(seed_accuracies(group).mean())}
        for col in cols:
            row[f"{col}_mean"] = float(group[col].mean())
            row[f"{col}_std"] = float(group[col].std(ddof=0))
            row.update(seed_intervals(group, [col]))
            for chance in (f"{col}_tau", f"{col}_calibrated"):  # with a null: its means
                if chance in group:
                    row[f"{chance}_mean"] = float(group[chance].mean())
        rows.append(row)
    return pd.DataFrame(rows)


def rank_correlation(x: pd.Series, y: pd.Series) -> float:
    """Spearman's rho (NaN with fewer than 3 points or a constant side)."""
    both = pd.concat([x, y], axis=1).dropna()
    if len(both) < 3 or both.nunique().min() < 2:
        return float("nan")
    return float(both.iloc[:, 0].corr(both.iloc[:, 1], method="spearman"))


def alignment_trends(table: pd.DataFrame, column: str = "mutual_knn_f") -> dict[str, object]:
    """rho(alignment, width) per K, how many K rise, and rho(alignment, accuracy) overall."""
    mean = f"{column}_mean"
    by_k = {int(k): rank_correlation(g["width"], g[mean])
            for k, g in table.groupby("num_classes")}
    rising = sum(r > 0 for r in by_k.values() if np.isfinite(r))
    return {"column": column, "rho_width_by_k": by_k, "rising_with_width": rising,
            "class_counts": len(by_k),
            "rho_accuracy": rank_correlation(table["test_accuracy"], table[mean])}


def read_alignment_table(paths: Sequence[str | Path]) -> pd.DataFrame:
    return alignment_table(read_pairs(paths))
