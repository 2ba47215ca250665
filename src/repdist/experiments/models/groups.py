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

from ...io import provenance
from ...io.representations import (LoadedModel, ModelInputError, check_models, load_model,
                                   match_models, model_names)
from ...measures import CompareSettings, prepare
from ...measures.pairs import all_pairs, compare_pairs
from ...measures.null import null_keys
from ...measures.sample_rules import sample_notes
from ...measures.selection import keys_for

ALIASES = {"m_svd_f_min": "m_svd_f"}  # the table's column name for the list-valued m_svd_f
MATCHES = ("exact", "intersect")


def compare_models(paths: Sequence[str | Path], settings: CompareSettings, jobs: int = 1,
                   match: str = "exact") -> tuple[pd.DataFrame, dict[str, Any]]:
    """Every pair of the models at `paths`: the pairs table and its provenance (M: the largest
    width). Rows are matched by identity; `match` "exact" refuses models of other inputs or
    labels, "intersect" keeps those all share. The provenance's `notes` say what was dropped
    and which measures had too few inputs for their rule (sample_rules)."""
    if match not in MATCHES:
        raise ValueError(f"match must be one of {', '.join(MATCHES)}, got {match!r}")
    paths = [Path(p) for p in paths]
    models = [load_model(p, gaps=match == "intersect") for p in paths]
    notes: list[str] = []
    if match == "intersect":
        models, notes = match_models(models)
    check_models(models)
    notes += _sample_notes(models, settings)
    names = model_names(paths)
    prepared = [prepare(m.f, m.g, settings.selected, settings.conventions, settings.method)
                for m in models]
    results = compare_pairs(prepared, settings, jobs=jobs, name="repdist compare", quiet=True)
    rows = [_row(names[i], names[j], r) for (i, j), r in zip(all_pairs(len(models)), results,
                                                             strict=True)]
    frame = pd.DataFrame(rows, columns=table_columns(settings))
    return frame, {**_provenance(settings, models, names), "notes": notes}


def _sample_notes(models: Sequence[LoadedModel], settings: CompareSettings) -> list[str]:
    """The sample rules' warnings for these models' N, K and largest M; a refusal raises."""
    n, k = models[0].f.shape[0], models[0].g.shape[0]
    m = max(int(model.f.shape[1]) for model in models)
    refusals, notes = sample_notes(n, k, m, settings.selected)
    if refusals:
        raise ModelInputError("; ".join(refusals))
    return notes


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
        None, tool="repdist compare", settings=options, M=max(int(m.f.shape[1]) for m in models),
        models=[{"name": name, "path": str(m.path), "resolved_path": str(m.path.resolve()),
                 "shape": m.shape_text, "M": int(m.f.shape[1])}
                for name, m in zip(names, models, strict=True)])


# How the warning column names a column's measure: a reason that mentions one of these, or
# that is about a whole model ("model 1: ..."), explains that column's NaN.
MENTIONS = {"kl": ("KL",), "d_llv": ("d_LLV",), "t1": ("d_LLV",), "t2": ("d_LLV",),
            "t3": ("d_LLV",), "t4": ("d_LLV",), "m_svd_f_min": ("m_SVD", "d_SVD"),
            "m_svd_g": ("m_SVD", "d_SVD"), "d_fg": ("m_SVD", "d_SVD", "d_fg"),
            "mcca_f": ("m_CCA(f)",), "mcca_g": ("m_CCA(g)",)}
NULL_SUFFIXES = ("_tau", "_p", "_calibrated")
SHOWN_REASONS = 3


def reasons_of(warning: str, column: str) -> list[str]:
    """The parts of one pair's warning that explain `column`."""
    base = next((column.removesuffix(s) for s in NULL_SUFFIXES if column.endswith(s)), column)
    names = (base, *MENTIONS.get(base, ()), *(("null",) if base != column else ()))
    return [part for part in warning.split("; ") if part
            and (part.startswith("model ") or any(name in part for name in names))]


def nan_report(frame: pd.DataFrame) -> list[str]:
    """One line per group of columns that are NaN for the same pairs: which, for how many
    pairs, and why (the warning column's words), e.g. "d_fg: NaN for 3 of 10 pairs: ..."."""
    warnings_ = frame["warning"].fillna("").astype(str) if "warning" in frame else None
    groups: dict[tuple[Any, ...], list[str]] = {}
    for column in frame.columns:
        if column in ("model_a", "model_b", "warning") or frame[column].dtype.kind != "f":
            continue
        nan = frame[column].isna().to_numpy()
        if not nan.any():
            continue
        reasons = sorted({r for w in (warnings_[nan] if warnings_ is not None else [])
                          for r in reasons_of(w, column)})
        groups.setdefault((tuple(nan), tuple(reasons)), []).append(column)
    lines = []
    for (nan, reasons), columns in groups.items():
        count = int(sum(nan))
        shown = "; ".join(reasons[:SHOWN_REASONS]) or "the warning column gives no reason"
        more = f" (and {len(reasons) - SHOWN_REASONS} more)" if len(reasons) > SHOWN_REASONS else ""
        lines.append(f"{', '.join(columns)}: NaN for {count} of "
                     f"{plural(len(frame), 'pair')}: {shown}{more}")
    return lines


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and its noun in the number it takes: 1 pair, 2 pairs, 0 pairs; `many` where an
    added s is wrong, as in plural(3, "match", "matches")."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"
