"""Width tables (paper Fig. 3 right, App. F.7; the original's `plots/mean_d_prob_vs_width.py`):
per width, the distances between seeds of high test accuracy, and every measure's pair means."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from ...io import read_parquet_metadata
from ...measures.intervals import seed_bootstrap_interval


def seed_accuracies(pairs: pd.DataFrame) -> pd.Series:
    """Each seed's test accuracy (indexed by seed), read off the pairs it appears in."""
    acc = pd.concat([pairs[["seed_a", "acc_a"]].set_axis(["seed", "acc"], axis=1),
                     pairs[["seed_b", "acc_b"]].set_axis(["seed", "acc"], axis=1)])
    return acc.drop_duplicates("seed").set_index("seed")["acc"]


def kept_pairs(pairs: pd.DataFrame, threshold: float, min_seeds: int
               ) -> tuple[list[int], pd.DataFrame]:
    """(the seeds of test accuracy > threshold, the pairs of two of them) of one width's pairs;
    no seeds and no pairs where fewer than `min_seeds` pass (the width is left out)."""
    acc = seed_accuracies(pairs)
    good = sorted(int(s) for s in acc.index[acc > threshold])
    if len(good) < min_seeds:
        return [], pairs.iloc[:0]
    return good, pairs[pairs["seed_a"].isin(good) & pairs["seed_b"].isin(good)]


def width_summary(pairs: pd.DataFrame, threshold: float, min_seeds: int) -> pd.DataFrame:
    """Per width kept (kept_pairs, as the original's plot): mean and population sd of d_LLV
    and d_{f,g} over the kept pairs (NaN pairs left out, counted), and each mean's 95 %
    seed-bootstrap interval (pairs sharing a seed are not independent)."""
    rows = []
    for width, group in pairs.groupby("width"):
        good, kept = kept_pairs(group, threshold, min_seeds)
        if not good:
            continue
        valid = kept.dropna(subset=["d_llv", "d_fg"])
        rows.append({"width": width, "seeds": len(good), "pairs": len(valid),
                     "nan_pairs": len(kept) - len(valid),
                     "d_llv_mean": valid["d_llv"].mean(), "d_llv_std": valid["d_llv"].std(ddof=0),
                     "d_fg_mean": valid["d_fg"].mean(), "d_fg_std": valid["d_fg"].std(ddof=0),
                     **seed_intervals(valid, ("d_llv", "d_fg"))})
    return pd.DataFrame(rows)


def seed_intervals(pairs: pd.DataFrame, columns: Sequence[str]) -> dict[str, float]:
    """`<column>_ci_low`, `<column>_ci_high`: each column's mean's 95 % seed-bootstrap interval."""
    out = {}
    for column in columns:
        low, high = seed_bootstrap_interval(pairs["seed_a"], pairs["seed_b"], pairs[column])
        out.update({f"{column}_ci_low": low, f"{column}_ci_high": high})
    return out


def width_summaries(paths: Sequence[str | Path], threshold: float,
                    min_seeds: int) -> dict[int, pd.DataFrame]:
    """Pairs tables of one class-count group -> each class count's width_summary."""
    pairs = read_pairs(paths)
    return {int(k): width_summary(group, threshold, min_seeds)
            for k, group in pairs.groupby("K")}


def read_pairs(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Pairs tables as one frame, each row with its table's K and width (from its metadata)."""
    tables = []
    for path in paths:
        meta = read_parquet_metadata(path)
        tables.append(pd.read_parquet(path).assign(K=int(meta["K"]), width=meta["width"]))
    return pd.concat(tables, ignore_index=True)


def width_table(summaries: Mapping[int, pd.DataFrame]) -> pd.DataFrame:
    """The summaries as one table with a num_classes column."""
    return pd.concat([s.assign(num_classes=k) for k, s in summaries.items()], ignore_index=True)


def measures_by_width(pairs: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Mean and population sd of every measure per width (all pairs; NaN pairs left out)."""
    cols = [c for c in columns if c in pairs.columns]
    grouped = pairs.groupby("width")[cols]
    return grouped.mean().join(grouped.std(ddof=0), lsuffix="_mean", rsuffix="_std")
