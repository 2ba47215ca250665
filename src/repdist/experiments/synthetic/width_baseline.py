"""The baselines of the width claim (Fig. 3 right, App. F.7) per kept width of the unnormalised
variant: the same seeds untrained, and the permutation null of the trained models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...measures import CompareSettings, prepare
from ...measures.pairs import compare_pairs
from ...models.extract import extract
from ..pairs import compare_seeds
from .training import SyntheticModelConfig, synthetic_data, synthetic_stack
from .widths import kept_pairs

UNTRAINED_MEASURES = ("d_llv", "d_fg", "mcca_f", "mutual_knn_f")
NULL_DISTANCES = ("d_llv", "d_fg")


def untrained_pairs(model_cfg: SyntheticModelConfig, pairs: Sequence[tuple[int, int]],
                    measure_kwargs: Mapping[str, Any]) -> pd.DataFrame:
    """UNTRAINED_MEASURES of these pairs' seeds at initialisation, on the same test inputs."""
    stack = synthetic_stack([model_cfg])
    data = synthetic_data(model_cfg)
    with torch.no_grad():
        f_all, g_all = extract(stack, data.test_x, data.codes)
    index = {int(s): i for i, s in enumerate(model_cfg.seeds)}
    prepared = [prepare(f, g) for f, g in zip(f_all, g_all, strict=True)]
    settings = CompareSettings(**{**measure_kwargs, "measures": list(UNTRAINED_MEASURES),
                                  "null": None})
    results = compare_pairs(prepared, settings, [(index[a], index[b]) for a, b in pairs])
    return pd.DataFrame([{"seed_a": a, "seed_b": b, **{m: r[m] for m in UNTRAINED_MEASURES}}
                         for (a, b), r in zip(pairs, results, strict=True)])


def _mean_se(values: pd.Series) -> tuple[float, float]:
    values = values.dropna()
    se = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else float("nan")
    return float(values.mean()) if len(values) else float("nan"), se


def baseline_row(k: int, width: int, untrained: pd.DataFrame,
                 nulls: pd.DataFrame) -> dict[str, Any]:
    """One width's baselines: untrained means and SEs, and the null's mean tau and calibrated."""
    row: dict[str, Any] = {"K": k, "width": width, "untrained_pairs": len(untrained)}
    for m in UNTRAINED_MEASURES:
        row[f"{m}_untrained_mean"], row[f"{m}_untrained_se"] = _mean_se(untrained[m])
    row["null_pairs"] = len(nulls)
    for m in NULL_DISTANCES:
        row[f"{m}_tau_mean"] = float(nulls[f"{m}_tau"].mean())
        row[f"{m}_calibrated_mean"], row[f"{m}_calibrated_se"] = _mean_se(
            nulls[f"{m}_calibrated"])
    return row


# The null draws one comparison at a time (~1-2 ms a draw at N = 2,000), so a width's chance level
# is the mean over the first `null_pairs` kept pairs, not every pair's (190 at 20 seeds).
def width_baseline(configs: Sequence[SyntheticModelConfig], pairs_tables: Sequence[str | Path],
                   models: Mapping[str, Sequence[Any]], kept: tuple[float, int],
                   measure_kwargs: Mapping[str, Any], null: Mapping[str, Any] | None,
                   null_pairs: int = 10) -> pd.DataFrame:
    """One row per kept width (baseline_row). `models`: embeddings, unembeddings and metrics per
    seed, configuration-major; `kept`: (threshold, min_seeds); `null` None: its columns NaN."""
    embeddings, unembeddings, metrics = (models[k] for k in ("embeddings", "unembeddings",
                                                              "metrics"))
    threshold, min_seeds = kept
    rows = []
    per = [len(c.seeds) for c in configs]
    starts = np.concatenate([[0], np.cumsum(per)])
    for c, cfg in enumerate(configs):
        trained = pd.read_parquet(pairs_tables[c])
        good, chosen = kept_pairs(trained, threshold, min_seeds)
        if not good:
            continue
        chosen = chosen.sort_values(["seed_a", "seed_b"])
        pairs = [(int(a), int(b)) for a, b in zip(chosen["seed_a"], chosen["seed_b"],
                                                  strict=True)]
        untrained = untrained_pairs(cfg, pairs, measure_kwargs)
        if not null or null_pairs < 1:  # no null: the untrained baseline alone
            rows.append(baseline_row(cfg.num_classes, cfg.width, untrained, pd.DataFrame(
                columns=[f"{m}{s}" for m in NULL_DISTANCES for s in ("_tau", "_calibrated")])))
            continue
        files = slice(int(starts[c]), int(starts[c + 1]))
        index = {int(s): i for i, s in enumerate(cfg.seeds)}
        nulls = compare_seeds(cfg.seeds, embeddings[files], unembeddings[files], metrics[files],
                              {**measure_kwargs,
                               "null": {**null, "measures": list(NULL_DISTANCES)}},
                              [(index[a], index[b]) for a, b in pairs[:null_pairs]])
        rows.append(baseline_row(cfg.num_classes, cfg.width, untrained, nulls))
    return pd.DataFrame(rows)
