"""The settings of config.yaml's `measures:` section as the jobs pass them to compare()."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..measures.conventions import PRH_CONVENTIONS

ALIGNMENT_KEYS = tuple(PRH_CONVENTIONS)


def alignment_settings(measures: Mapping[str, Any]) -> dict[str, Any]:
    """The alignment options `measures` sets; `prh_conventions: true` supplies PRH's value to
    each one not set. Options not set are not passed: compare() then uses its defaults."""
    given = {key: measures[key] for key in ALIGNMENT_KEYS if key in measures}
    if measures.get("prh_conventions", False):
        return {**PRH_CONVENTIONS, **given}
    return given


def measure_settings(config: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """The d_LLV settings of config['measures'], with per-experiment overrides."""
    settings = {k: config["measures"][k] for k in ("lam", "dist_type", "sum_or_max")}
    settings.update(overrides)
    return settings


def pair_measures(config: Mapping[str, Any], snapshots: bool = False) -> dict[str, Any]:
    """What every pairs job passes to compare(), the permutation null included unless off.
    `snapshots`: a training run's snapshots, whose null draws only null.snapshot_measures
    (every pair at every step: 201 steps in Roeder's Fig. 2b)."""
    null = dict(config.get("null") or {})
    snapshot_measures = null.pop("snapshot_measures", None)
    if snapshots and snapshot_measures is not None:
        null["measures"] = list(snapshot_measures)
    drawn = null.get("permutations", 200) and null.get("measures", True)
    return measure_settings(config, num_samples=config["measures"]["num_samples"],
                            seed=config["seed"], **alignment_settings(config["measures"]),
                            **({"null": null} if drawn else {}))
