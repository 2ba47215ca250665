"""Anyone's models compared pair by pair: what `repdist compare` and the DAG's `models:` groups
both run. Each model is a folder of our parquet files, an .npz or a .pt (io.representations);
every pair (i < j in the order given) becomes one row of the pairs table."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..io import provenance
from ..io.representations import LoadedModel, check_models, load_model, model_names
from ..measures import CompareSettings, prepare
from ..measures.pairs import all_pairs, compare_pairs
from ..measures.null import null_keys
from ..measures.selection import keys_for

ALIASES = {"m_svd_f_min": "m_svd_f"}  # the table's column name for the list-valued m_svd_f


def compare_models(
    paths: Sequence[str | Path], settings: CompareSettings, jobs: int = 1
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read, check and compare every pair of the models at `paths`: the pairs table and its
    provenance (which records M, the largest of the models' widths, and each model's)."""
    paths = [Path(p) for p in paths]
    models = [load_model(p) for p in paths]
    check_models(models)
    names = model_names(paths)
    prepared = [prepare(m.f, m.g, settings.selected, settings.conventions, settings.method)
                for m in models]
    results = compare_pairs(prepared, settings, jobs=jobs, name="repdist compare", quiet=True)
    rows = [_row(names[i], names[j], r) for (i, j), r in zip(all_pairs(len(models)), results,
                                                             strict=True)]
    frame = pd.DataFrame(rows, columns=table_columns(settings))
    return frame, _provenance(settings, models, names)


def _row(name_a: str, name_b: str, result: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"model_a": name_a, "model_b": name_b}
    for key, value in result.items():
        if key == "m_svd_f":  # one value per label set: the table keeps the minimum
            row["m_svd_f_min"] = float(np.min(value)) if len(value) else math.nan
        else:
            row[key] = value
    return row


def table_columns(settings: CompareSettings) -> list[str]:
    """The table's columns for these settings: the models, then the measures, then warning."""
    back = {measure: column for column, measure in ALIASES.items()}
    return ["model_a", "model_b", *(back.get(k, k) for k in keys_for(settings.selected)),
            *null_keys(settings.null, settings.selected)]


def _provenance(settings: CompareSettings, models: Sequence[LoadedModel],
                names: list[str]) -> dict[str, Any]:
    options = asdict(settings)
    options["measures"] = sorted(settings.selected)
    for unused in ("input_set", "y_pivot", "y_leave_out"):
        options.pop(unused)
    return provenance(
        None,
        tool="repdist compare",
        settings=options,
        M=max(int(m.f.shape[1]) for m in models),
        models=[{"name": name, "path": str(m.path), "resolved_path": str(m.path.resolve()),
                 "shape": m.shape_text, "M": int(m.f.shape[1])}
                for name, m in zip(names, models, strict=True)],
    )
