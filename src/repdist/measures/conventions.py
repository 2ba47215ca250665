"""How the f-side alignment measures read f: today's conventions unless told otherwise, or the
Platonic Representation Hypothesis' (Huh et al. 2024, their measure_alignment.py and metrics.py).

The options touch only cka_f, svcca_f, mutual_knn_f and the PRH metrics (ALIGNMENT_MEASURES).
KL, d_LLV, m_SVD, d_fg and m_CCA are defined on the model's own f and never see them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .extra import unit_rows as unit_length_rows
from .prh import PRH_OUTLIER_QUANTILE, PRH_SVCCA_COMPONENTS, clamp_outliers
from .selection import KNN_MEASURES

ALIGNMENT_MEASURES = KNN_MEASURES | {"cka_f", "svcca_f", "unbiased_cka_f", "cknna_f"}
SVCCA_MODES = ("variance", "zscored")
# Their pipeline, as `compare(..., **PRH_CONVENTIONS)`, `repdist compare --prh` or the config's
# `measures: {prh_conventions: true}`.
PRH_CONVENTIONS: dict[str, Any] = {"outlier_quantile": PRH_OUTLIER_QUANTILE, "unit_rows": True,
                                   "svcca": "zscored", "svcca_components": PRH_SVCCA_COMPONENTS}


@dataclass(frozen=True)
class AlignmentConventions:
    """outlier_quantile q < 1 clamps f's values to [-t, t], t the mean over inputs of each row's
    q-quantile of |f| (`prh.clamp_outliers`); unit_rows L2-normalises f's rows after it; svcca
    "variance" keeps the principal components of 99% of the variance (Raghu et al.), "zscored"
    z-scores the columns and keeps svcca_components of them (PRH's). Defaults change nothing."""

    outlier_quantile: float = 1.0
    unit_rows: bool = False
    svcca: str = "variance"
    svcca_components: int = PRH_SVCCA_COMPONENTS

    def __post_init__(self) -> None:
        q = self.outlier_quantile
        if isinstance(q, bool) or not isinstance(q, int | float | np.number) or not 0 < q <= 1:
            raise ValueError(f"outlier_quantile must be in (0, 1] (1: no clamp; PRH uses "
                             f"{PRH_OUTLIER_QUANTILE}), got {q!r}")
        if not isinstance(self.unit_rows, bool | np.bool_):
            raise ValueError(f"unit_rows must be True or False, got {self.unit_rows!r}")
        if self.svcca not in SVCCA_MODES:
            raise ValueError(f"svcca must be one of {', '.join(SVCCA_MODES)}, got {self.svcca!r}")
        k = self.svcca_components
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"svcca_components must be a positive integer, got {k!r}")

    @property
    def view_key(self) -> tuple[float, bool]:
        """What f's preprocessing depends on (the SVCCA mode only picks a measure's pieces)."""
        return float(self.outlier_quantile), bool(self.unit_rows)

    def preprocess(self, f: np.ndarray) -> np.ndarray:
        """f as the alignment measures see it, float64: f itself under the defaults."""
        x = clamp_outliers(f, float(self.outlier_quantile))
        return unit_length_rows(x) if self.unit_rows else x


def with_prh_conventions(options: Mapping[str, Any]) -> dict[str, Any]:
    """Settings with a `prh_conventions` switch expanded: True gives PRH_CONVENTIONS' values to
    the options not given explicitly; the switch itself is dropped."""
    out = {key: value for key, value in options.items() if key != "prh_conventions"}
    switch = options.get("prh_conventions", False)
    if not isinstance(switch, bool | np.bool_):
        raise ValueError(f"prh_conventions must be True or False, got {switch!r}")
    return {**PRH_CONVENTIONS, **out} if switch else out
