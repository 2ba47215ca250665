"""Roeder et al. (2021) Fig. 3 as tables, without torch. Panels: (b) m_CCA at the snapshots of
the base configuration; (c) after early stopping, per share of the training data; (d) after
early stopping within the shorter budget `width_steps`, per width."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...measures import CompareSettings, PreparedModel
from ...measures.cca import canonical_correlations
from ...measures.intervals import seed_bootstrap_interval
from ...measures.null import SUFFIXES
from ..synthetic.alignment import rank_correlation
from ..pairs import PAIR_COLUMNS, compare_seeds, null_fields_of

SNAPSHOT_MEASURES = ["mcca_f", "mcca_g"]
# Roeder's Fig. 3b draws every canonical correlation: the snapshots keep them (descending)
SNAPSHOT_COLUMNS = ["step", "seed_a", "seed_b", "mcca_f", "mcca_g", "mcca_f_components",
                    "mcca_g_components", "cca_f", "cca_g", "warning"]
PANELS = {"b": "step", "c": "n_train", "d": "width"}  # each panel's x
TABLE_COLUMNS = ["panel", "step", "data_fraction", "n_train", "width", "max_steps", "seed_a",
                 "seed_b", "mcca_f", "mcca_g", "mcca_f_components", "mcca_g_components", "kl",
                 "d_llv", "best_step_a", "best_step_b"]
SUMMARY_COLUMNS = ["panel", "x", "pairs", "mcca_f_mean", "mcca_f_se", "mcca_f_ci_low",
                   "mcca_f_ci_high", "mcca_g_mean", "mcca_g_se", "mcca_g_ci_low",
                   "mcca_g_ci_high", "kl_mean", "d_llv_mean"]


@dataclass(frozen=True)
class CPCConfiguration:
    """One trained stack: width, share of the training data, step budget."""

    width: int
    data_fraction: float
    steps: int

    @property
    def name(self) -> str:
        return f"w{self.width}_p{self.data_fraction:g}_t{self.steps}"


def configurations(cpc: Mapping[str, Any]) -> list[CPCConfiguration]:
    """Every configuration the panels of config `roeder.cpc` need, each once, base first."""
    steps, width = cpc["training"]["steps"], cpc["width"]
    wanted = [CPCConfiguration(width, 1.0, steps)]
    wanted += [CPCConfiguration(width, float(p), steps) for p in cpc["data_fractions"]]
    wanted += [CPCConfiguration(w, 1.0, cpc["width_steps"]) for w in cpc["widths"]]
    return list(dict.fromkeys(wanted))


def base_configuration(cpc: Mapping[str, Any]) -> CPCConfiguration:
    """Panel (b)'s configuration."""
    return configurations(cpc)[0]


def disjoint_pairs(n_seeds: int) -> list[tuple[int, int]]:
    """Seeds (0, 1), (2, 3), ...: independent pairs, as Roeder trained "two independent models in
    parallel", so their spread gives an honest standard error."""
    return [(i, i + 1) for i in range(0, n_seeds - 1, 2)]


CONFIG_COLUMNS = ["width", "data_fraction", "max_steps", "n_train", "best_step_a",
                  "best_step_b"]


@dataclass(frozen=True)
class TrainedConfiguration:
    """One configuration's seed files, in seed order."""

    config: CPCConfiguration
    embeddings: Sequence[str]
    unembeddings: Sequence[str]
    metrics: Sequence[Mapping[str, Any]]


def cpc_pairs(trained: Sequence[TrainedConfiguration], seeds: Sequence[int],
              measure_kwargs: Mapping[str, Any]) -> pd.DataFrame:
    """Every configuration's disjoint pairs, beside it and each seed's best (early) step."""
    pairs = disjoint_pairs(len(seeds))
    frames = []
    for t in trained:
        table = compare_seeds(seeds, t.embeddings, t.unembeddings, t.metrics, measure_kwargs,
                              pairs)
        best = [int(m["best_step"]) for m in t.metrics]
        frames.append(table.assign(
            width=t.config.width, data_fraction=t.config.data_fraction,
            max_steps=t.config.steps, n_train=int(t.metrics[0]["n_train"]),
            best_step_a=[best[i] for i, _ in pairs], best_step_b=[best[j] for _, j in pairs]))
    null = null_fields_of(CompareSettings(**measure_kwargs))
    return pd.concat(frames, ignore_index=True)[CONFIG_COLUMNS + PAIR_COLUMNS + null]


def cca_coefficients(m1: PreparedModel, m2: PreparedModel) -> dict[str, list[float]]:
    """A pair's canonical correlations of f and of g, descending."""
    return {f"cca_{side}": [float(c) for c in canonical_correlations(
        getattr(m1, f"{side}_basis"), getattr(m2, f"{side}_basis"))] for side in ("f", "g")}


def coefficient_means(rows: pd.DataFrame, side: str) -> dict[str, float]:
    """`cca_<side>_<k>`: the mean k-th canonical correlation, as far as every pair has one."""
    lists = [np.asarray(c, dtype=np.float64) for c in rows[f"cca_{side}"]
             if isinstance(c, list | np.ndarray)]
    if not lists:
        return {}
    shortest = min(len(c) for c in lists)
    means = np.mean([c[:shortest] for c in lists], axis=0)
    return {f"cca_{side}_{k + 1}": float(v) for k, v in enumerate(means)}


def untrained_means(snapshots: Mapping[str, pd.DataFrame]) -> dict[str, dict[str, float]]:
    """Per configuration (by name), the mean over its pairs of m_CCA of f and g at step 0."""
    out = {}
    for name, table in snapshots.items():
        start = table[table["step"] == 0]
        out[name] = {m: float(start[m].mean()) if len(start) else float("nan")
                     for m in SNAPSHOT_MEASURES}
    return out


def cpc_table(snapshots: pd.DataFrame, pairs: pd.DataFrame, cpc: Mapping[str, Any],
              untrained: Mapping[str, Mapping[str, float]] | None = None) -> pd.DataFrame:
    """One row per panel, point and pair; with `untrained`, each configuration's step-0 means."""
    base = base_configuration(cpc)
    b = snapshots.assign(panel="b", data_fraction=base.data_fraction, width=base.width,
                         max_steps=base.steps, n_train=_n_train(pairs, base))
    fractions = [float(p) for p in cpc["data_fractions"]]
    c = pairs[(pairs["width"] == base.width) & (pairs["max_steps"] == base.steps)
              & pairs["data_fraction"].isin(fractions)].assign(panel="c")
    d = pairs[(pairs["data_fraction"] == 1.0) & (pairs["max_steps"] == cpc["width_steps"])
              & pairs["width"].isin(cpc["widths"])].assign(panel="d")
    table = pd.concat([b, c, d], ignore_index=True)
    baseline = []
    if untrained is not None:
        names = [CPCConfiguration(int(w), float(p), int(t)).name for w, p, t in
                 zip(table["width"], table["data_fraction"], table["max_steps"], strict=True)]
        for m in SNAPSHOT_MEASURES:
            table[f"{m}_untrained"] = [untrained.get(n, {}).get(m, np.nan) for n in names]
            baseline.append(f"{m}_untrained")
    kept = [c for c in ("cca_f", "cca_g") if c in snapshots]  # panel b's coefficients
    return table.reindex(columns=[*TABLE_COLUMNS, *chance_columns(pairs), *baseline, *kept])


CHANCE_MEASURES = ("mcca_f", "mcca_g", "kl", "d_llv")


def chance_columns(table: pd.DataFrame) -> list[str]:
    """The null's columns of CHANCE_MEASURES that the pairs table has (panel b has none)."""
    return [f"{m}{s}" for m in CHANCE_MEASURES for s in SUFFIXES if f"{m}{s}" in table]


def _n_train(pairs: pd.DataFrame, config: CPCConfiguration) -> int:
    rows = pairs[(pairs["width"] == config.width) & (pairs["max_steps"] == config.steps)
                 & (pairs["data_fraction"] == config.data_fraction)]
    return int(rows["n_train"].iloc[0]) if len(rows) else -1


def cpc_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per panel and point: pairs, and m_CCA's mean, standard error (sd ddof 1 over
    sqrt(pairs)) and 95 % seed-bootstrap interval, of f and g; the means of KL, d_LLV and of
    the null's and untrained columns it has; in panel b, each canonical correlation's mean."""
    rows = []
    null = [f"mcca_{side}{s}" for side in ("f", "g")
            for s in ("_tau", "_calibrated", "_untrained") if f"mcca_{side}{s}" in table]
    for panel, x in PANELS.items():
        for value, group in table[table["panel"] == panel].groupby(x):
            n = len(group)
            row: dict[str, Any] = {"panel": panel, "x": value, "pairs": n}
            for side in ("f", "g"):
                column = group[f"mcca_{side}"]
                row[f"mcca_{side}_mean"] = float(column.mean())
                row[f"mcca_{side}_se"] = float(column.std(ddof=1) / np.sqrt(n)) if n > 1 \
                    else float("nan")
                row[f"mcca_{side}_ci_low"], row[f"mcca_{side}_ci_high"] = \
                    seed_bootstrap_interval(group["seed_a"], group["seed_b"], column)
                if f"cca_{side}" in group:  # panel b: every coefficient's mean
                    row.update(coefficient_means(group, side))
            row.update({f"{c}_mean": float(group[c].mean()) for c in ["kl", "d_llv", *null]})
            rows.append(row)
    coefficients = sorted({key for row in rows for key in row if key.startswith("cca_")},
                          key=lambda key: (key[4], int(key.rsplit("_", 1)[1])))
    return pd.DataFrame(rows, columns=[*SUMMARY_COLUMNS, *(f"{c}_mean" for c in null),
                                       *coefficients])


def baseline(rows: pd.DataFrame, side: str) -> pd.Series:
    """Per point, the larger of the untrained models' mean m_CCA and the null's mean tau."""
    parts = [rows[c] for c in (f"mcca_{side}_untrained_mean", f"mcca_{side}_tau_mean")
             if c in rows]
    if not parts:
        return pd.Series(np.nan, index=rows.index)
    return pd.concat(parts, axis=1).max(axis=1, skipna=True)


@dataclass(frozen=True)
class Trend:
    """Spearman's rho of a panel's mean m_CCA over its points, and the ends (x, mean, SE)."""

    rho: float
    first: tuple[float, float, float]  # x, mean, standard error
    last: tuple[float, float, float]
    points: int

    @property
    def rise_in_se(self) -> float:
        spread = float(np.hypot(self.first[2], self.last[2]))
        return (self.last[1] - self.first[1]) / spread if spread > 0 else float("nan")

    @property
    def rises(self) -> bool:
        """Roeder's "increases": rho > 0.5 (from three points: two have no rank correlation)
        and the last point above the first by more than two combined standard errors."""
        ordered = self.rho > 0.5 if self.points >= 3 else True
        return bool(ordered and self.rise_in_se > 2)


def trend(summary: pd.DataFrame, panel: str, side: str, beyond: bool = False) -> Trend:
    """The Trend of m_CCA of `side` over the panel's points; `beyond`: of its height above
    `baseline`, which untrained models cannot rise above by construction."""
    rows = summary[summary["panel"] == panel].sort_values("x")
    mean, se = rows[f"mcca_{side}_mean"], rows[f"mcca_{side}_se"]
    if beyond:
        mean = mean - baseline(rows, side)
    ends = [(float(rows["x"].iloc[k]), float(mean.iloc[k]), float(se.iloc[k])) for k in (0, -1)]
    return Trend(rank_correlation(rows["x"], mean), ends[0], ends[1], len(rows))
