"""The f-side alignment measures of one pair from the two models' AlignmentViews (f as read
under one convention): linear CKA, SVCCA, mutual k-NN and PRH's cycle, LCS and edit-distance
k-NN, unbiased CKA and CKNNA (Huh et al. 2024, as their metrics.py: prh.py).

Per-model pieces come from the views; the pair's work is products and set overlaps. All k-NN
measures share each view's one neighbour search (k = MUTUAL_KNN_K = PRH's 10, cosine)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .conventions import AlignmentConventions
from .extra import linear_cka_centred, mutual_knn_from_keys, svcca_from_bases
from .prepared import MUTUAL_KNN_K, AlignmentView
from .prh import (
    cknna_from_keys,
    cycle_knn_from_indices,
    edit_distance_knn_from_indices,
    lcs_knn_from_indices,
    svcca_from_zscored,
    unbiased_cka_from_hsic,
)

NAN = float("nan")
FROM_INDICES: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "cycle_knn_f": cycle_knn_from_indices, "lcs_knn_f": lcs_knn_from_indices,
    "edit_distance_knn_f": edit_distance_knn_from_indices,
}
KNN_KEYS = frozenset({"mutual_knn_f", "cknna_f", *FROM_INDICES})


def alignment_measures(v1: AlignmentView, v2: AlignmentView, want: frozenset[str],
                       conventions: AlignmentConventions, reasons: list[str]) -> dict[str, float]:
    """The alignment measures in `want` between two views of the same N inputs; a NaN that
    needs explaining (SVCCA with more components than dimensions) adds to `reasons`."""
    out: dict[str, float] = {}
    if "cka_f" in want:
        out["cka_f"] = linear_cka_centred(v1.centred, v2.centred, v1.gram_norm, v2.gram_norm)
    if "svcca_f" in want:
        out["svcca_f"] = svcca(v1, v2, conventions, reasons)
    out.update(knn_measures(v1, v2, want))
    if "unbiased_cka_f" in want:
        out["unbiased_cka_f"] = NAN if len(v1.x) < 4 else unbiased_cka_from_hsic(
            v1.x, v2.x, v1.hsic_self, v2.hsic_self)
    if "cknna_f" in want:
        out["cknna_f"] = NAN if v1.ip_knn is None or v2.ip_knn is None else cknna_from_keys(
            v1.x, v2.x, v1.ip_knn, v2.ip_knn, v1.cknna_self, v2.cknna_self)
    reasons += _nan_reasons(out, len(v1.x), " ".join(reasons))
    return out


def _nan_reasons(out: dict[str, float], n: int, said: str) -> list[str]:
    """Words for the NaN measures no reason names yet: too few inputs for k neighbours or for
    unbiased CKA, else an f that does not vary over the inputs."""
    unexplained = [key for key, value in out.items() if np.isnan(value) and key not in said]
    few = {key for key in unexplained if (key in KNN_KEYS and n <= MUTUAL_KNN_K)
           or (key == "unbiased_cka_f" and n < 4)}
    reasons = []
    if few:
        reasons.append(f"{', '.join(sorted(few))} undefined: N = {n} inputs is too few (k-NN "
                       f"needs more than k = {MUTUAL_KNN_K}, unbiased CKA at least 4)")
    rest = sorted(set(unexplained) - few)
    if rest:
        reasons.append(f"{', '.join(rest)} undefined: a model's f, as these measures read it, "
                       "does not vary over the inputs (a constant or collapsed embedding)")
    return reasons


def svcca(v1: AlignmentView, v2: AlignmentView, conventions: AlignmentConventions,
          reasons: list[str]) -> float:
    """Today's SVCCA (99%-variance components) or PRH's (z-scored, svcca_components)."""
    if conventions.svcca == "variance":
        return svcca_from_bases(v1.basis, v2.basis, v1.svcca_kept, v2.svcca_kept)
    k = int(conventions.svcca_components)
    value = svcca_from_zscored(v1.zscored_basis, v2.zscored_basis, k)
    if np.isnan(value):
        most = min(v1.zscored_basis.shape[1], v2.zscored_basis.shape[1])
        reasons.append(f"svcca_f undefined: svcca_components = {k} exceeds min(N, M) = {most}")
    return value


def knn_measures(v1: AlignmentView, v2: AlignmentView, want: frozenset[str]) -> dict[str, float]:
    """mutual k-NN and PRH's sequence measures of the two neighbour lists (NaN when N <= k)."""
    asked = [key for key in ("mutual_knn_f", *FROM_INDICES) if key in want]
    if not asked:  # knn_idx is computed on first access
        return {}
    if v1.knn_idx is None or v2.knn_idx is None:
        return dict.fromkeys(asked, NAN)
    out = {key: FROM_INDICES[key](v1.knn_idx, v2.knn_idx) for key in asked if key in FROM_INDICES}
    if "mutual_knn_f" in want:
        out["mutual_knn_f"] = mutual_knn_from_keys(v1.knn, v2.knn, len(v1.x), MUTUAL_KNN_K)
    return out
