"""The alignment options of config.yaml's `measures:` section, as every pairs job passes them
to compare(): how cka_f, svcca_f and the Platonic Representation Hypothesis' k-NN and CKA
measures read f (repdist.measures.conventions, where PRH's values live)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..measures.conventions import PRH_CONVENTIONS

ALIGNMENT_KEYS = tuple(PRH_CONVENTIONS)


def alignment_settings(measures: Mapping[str, Any]) -> dict[str, Any]:
    """The alignment options `measures` sets; `prh_conventions: true` supplies PRH's value to
    each one not set. Options not set are not passed (compare() then uses its defaults), so a
    config without them gives its jobs exactly the parameters it gave before."""
    given = {key: measures[key] for key in ALIGNMENT_KEYS if key in measures}
    if measures.get("prh_conventions", False):
        return {**PRH_CONVENTIONS, **given}
    return given
