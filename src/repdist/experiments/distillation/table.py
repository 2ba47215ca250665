"""Students against their teachers (experiments.distillation.training trains them): the
measures between each student and its teacher on the test inputs, both test accuracies, and
linear probes of the concepts a radial classifier's f may encode; the summary per loss."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...data.radial import make_radial
from ...measures import CompareSettings, prepare
from ...measures.intervals import unit_bootstrap_interval
from ...measures.pairs import compare_pairs
from ...measures.probe import linear_probe_r2
from ..pairs import null_fields, null_fields_of

MEASURES = ("kl", "d_logit", "d_llv", "mcca_f", "d_fg")
PROBES = ("angle", "radius")
COLUMNS = ["K", "width", "loss", "teacher_seed", "student_seed", *MEASURES, "test_accuracy",
           "teacher_test_accuracy", *(f"probe_{c}_{who}" for c in PROBES
                                      for who in ("teacher", "student")), "warning"]


@dataclass(frozen=True)
class Teachers:
    """One teacher configuration: its class count, width, seeds, and the test set's size and
    seed (the synthetic section's), from which the probes' inputs are drawn again."""

    num_classes: int
    width: int
    seeds: Sequence[int]
    n_test: int
    test_data_seed: int


def radial_concepts(x: np.ndarray) -> dict[str, np.ndarray]:
    """What a radial classifier's f may encode linearly: the angle its classes are cut from,
    as (sin 2a, cos 2a) (opposite wedges share a class, so the angle counts modulo pi), and the
    radius (which the labels ignore)."""
    x = np.asarray(x, dtype=np.float64)
    angle = np.arctan2(x[:, 1], x[:, 0])
    return {"angle": np.stack([np.sin(2 * angle), np.cos(2 * angle)], axis=1),
            "radius": np.hypot(x[:, 0], x[:, 1])}


def probe_scores(f: np.ndarray, concepts: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Mean R^2 per concept of a linear probe from f fitted on the first half of the inputs and
    scored on the second (measures.probe)."""
    half = len(f) // 2
    return {name: float(np.mean(linear_probe_r2(f[:half], z[:half], f[half:], z[half:])))
            for name, z in concepts.items()}


@dataclass(frozen=True)
class LoadedSeed:
    """One model's test-set f, g and test accuracy (from its metrics)."""

    f: np.ndarray
    g: np.ndarray
    test_accuracy: float


def student_rows(model_cfg: Teachers, teachers: Sequence[LoadedSeed],
                 students: Mapping[str, Sequence[LoadedSeed]], spec_offset: int,
                 measure_kwargs: Mapping[str, Any]) -> pd.DataFrame:
    """One row per (loss, teacher seed): the measures, both test accuracies and both probes."""
    concepts = radial_concepts(make_radial(model_cfg.n_test, model_cfg.num_classes,
                                           model_cfg.test_data_seed).x)
    losses = list(students)
    models = [*teachers, *(s for loss in losses for s in students[loss])]
    prepared = [prepare(m.f, m.g) for m in models]
    n = len(teachers)
    pairs = [(t, n + li * n + t) for li in range(len(losses)) for t in range(n)]
    settings = CompareSettings(**measure_kwargs)
    results = compare_pairs(prepared, settings, pairs, quiet=True)
    probes = [probe_scores(m.f, concepts) for m in models]
    rows = []
    for (t, s), r in zip(pairs, results, strict=True):
        teacher_seed = int(model_cfg.seeds[t])
        rows.append({"K": model_cfg.num_classes, "width": model_cfg.width,
                     "loss": losses[(s - n) // n], "teacher_seed": teacher_seed,
                     "student_seed": spec_offset + teacher_seed,
                     **{m: r[m] for m in MEASURES}, "test_accuracy": models[s].test_accuracy,
                     "teacher_test_accuracy": models[t].test_accuracy,
                     **{f"probe_{c}_{who}": probes[i][c] for c in PROBES
                        for who, i in (("teacher", t), ("student", s))},
                     "warning": r["warning"], **null_fields(r, settings)})
    return pd.DataFrame(rows, columns=[*COLUMNS, *null_fields_of(settings)])


def distillation_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per (K, width, loss), and per loss over every configuration (K = width = 'all'): the
    mean and sd of each measure, accuracy and probe over teacher seeds, and the mean's 95 %
    interval from a bootstrap that resamples teachers (each with its student one unit)."""
    values = [*MEASURES, "test_accuracy", *(c for c in COLUMNS if c.startswith("probe_"))]
    everything = table.assign(K="all", width="all")
    both = pd.concat([table.astype({"K": str, "width": str}), everything], ignore_index=True)
    grouped = both.groupby(["K", "width", "loss"], sort=False)[values]
    summary = grouped.mean().add_suffix("_mean").join(grouped.std().add_suffix("_sd"))
    intervals = {key: {value: unit_bootstrap_interval(rows[value]) for value in values}
                 for key, rows in both.groupby(["K", "width", "loss"], sort=False)}
    for value in values:
        for end, name in enumerate(("ci_low", "ci_high")):
            summary[f"{value}_{name}"] = [intervals[key][value][end] for key in summary.index]
    summary.insert(0, "students", grouped.size())
    return summary.reset_index()
