"""The alignment options of config.yaml's `measures:` section, as every pairs job passes them
to compare(): how cka_f, svcca_f and the Platonic Representation Hypothesis' k-NN and CKA
measures read f (repdist.measures.conventions). Nothing here imports the measures: the
Snakefile's head process builds the rules' parameters without scipy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ALIGNMENT_KEYS = ("outlier_quantile", "unit_rows", "svcca", "svcca_components")
# Huh et al. 2024 (their measure_alignment.py, metrics.py): measures.conventions.PRH_CONVENTIONS
PRH_CONVENTIONS: dict[str, Any] = {
    "outlier_quantile": 0.95, "unit_rows": True, "svcca": "zscored", "svcca_components": 10,
}


def alignment_settings(measures: Mapping[str, Any]) -> dict[str, Any]:
    """The alignment options `measures` sets; `prh_conventions: true` supplies PRH's value to
    each one not set. Options not set are not passed (compare() then uses its defaults), so a
    config without them gives its jobs exactly the parameters it gave before."""
    given = {key: measures[key] for key in ALIGNMENT_KEYS if key in measures}
    if measures.get("prh_conventions", False):
        return {**PRH_CONVENTIONS, **given}
    return given
