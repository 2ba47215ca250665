"""Which measures a comparison reports, and which pieces of work each of them needs.

A caller that wants only, say, m_CCA should not pay for the k-NN graph or the pivot search:
`compare(..., measures=["mcca_f"])` reports those keys and computes only what they depend on.
The result keys are listed once, here; everything else derives from RESULT_KEYS."""

from __future__ import annotations

from collections.abc import Iterable

RESULT_KEYS = (
    "kl", "d_llv", "t1", "t2", "t3", "t4", "y_pivot", "y_leave_out", "input_set", "m_svd_f",
    "m_svd_g", "d_fg", "m_svd_label_sets", "d_fg_estimate", "mcca_f", "mcca_g", "mcca_f_components",
    "mcca_g_components", "cka_f", "svcca_f", "mutual_knn_f", "d_logit", "cycle_knn_f", "lcs_knn_f",
    "edit_distance_knn_f", "unbiased_cka_f", "cknna_f", "warning",
)
MEASURES = tuple(key for key in RESULT_KEYS if key != "warning")
# Keys that come with a measure: how many label sets m_SVD_f ran over and whether that was a
# sample (then min m_SVD_f can only be too high, d_fg too low); how many components m_CCA
# averaged (directions both models vary in: fewer than M after a final LayerNorm).
COMPANIONS = {
    "m_svd_f": ("m_svd_label_sets", "d_fg_estimate"),
    "d_fg": ("m_svd_label_sets", "d_fg_estimate"),
    "mcca_f": ("mcca_f_components",),
    "mcca_g": ("mcca_g_components",),
}
MCCA_F = frozenset({"mcca_f", "mcca_f_components"})
MCCA_G = frozenset({"mcca_g", "mcca_g_components"})

# Pair-level steps and the measures that need them.
LABEL_SIDE = frozenset({"d_llv", "t1", "t3", "y_pivot", "y_leave_out", "m_svd_f", "d_fg"})
INPUT_SIDE = frozenset({"d_llv", "t2", "t4", "input_set", "m_svd_g", "d_fg"})
SVD_F = frozenset({"m_svd_f", "d_fg"})
SVD_G = frozenset({"m_svd_g", "d_fg"})

# Per-model quantities (attributes of PreparedModel) and the measures that need them.
MODEL_PARTS: dict[str, frozenset[str]] = {
    "loglik_centred": LABEL_SIDE,
    "loglik_cov": LABEL_SIDE,
    "f_basis": MCCA_F,
    "g_basis": MCCA_G,
    "loglik_clr": frozenset({"d_logit"}),
}
# The same at vocabulary scale (low_rank.py): no N x K or K x K array. lse comes with the
# factors; a pair's KL pass computes it anyway, so it is left to that pass when KL is asked.
LOW_RANK_PARTS: dict[str, frozenset[str]] = {
    "loglik_factors": LABEL_SIDE,
    "g_cov": INPUT_SIDE | {"d_logit"} | MCCA_G,  # m_CCA of g from covariances (cca.py)
    "g_rounding": MCCA_G,  # and its rank tolerance
    "f_basis": MCCA_F,
}
# The f-side alignment measures' per-model quantities (attributes of prepared.AlignmentView);
# the k-NN measures share one neighbour search, SVCCA's pieces depend on the `svcca` option.
KNN_MEASURES = frozenset({"mutual_knn_f", "cycle_knn_f", "lcs_knn_f", "edit_distance_knn_f"})
VIEW_PARTS: dict[str, frozenset[str]] = {
    "basis": frozenset({"svcca_f"}),
    "svcca_kept": frozenset({"svcca_f"}),
    "zscored_basis": frozenset({"svcca_f"}),
    "knn_idx": KNN_MEASURES,
    "knn": frozenset({"mutual_knn_f"}),
    "centred": frozenset({"cka_f"}),
    "gram_norm": frozenset({"cka_f"}),
    "hsic_self": frozenset({"unbiased_cka_f"}),
    "ip_knn": frozenset({"cknna_f"}),
    "cknna_self": frozenset({"cknna_f"}),
}
SVCCA_PARTS = {"variance": ("basis", "svcca_kept"), "zscored": ("zscored_basis",)}


def select_measures(measures: Iterable[str] | str | None) -> frozenset[str]:
    """The set of measures asked for: None means all; a string is a comma-separated list."""
    if measures is None:
        return frozenset(MEASURES)
    names = measures.split(",") if isinstance(measures, str) else list(measures)
    names = [name.strip() for name in names if name.strip()]
    unknown = sorted(set(names) - set(MEASURES))
    if unknown:
        raise ValueError(f"unknown measure(s) {unknown}; choose from {', '.join(MEASURES)}")
    if not names:
        raise ValueError(f"no measure selected; choose from {', '.join(MEASURES)}")
    return frozenset(names).union(*(COMPANIONS.get(name, ()) for name in names))


def keys_for(selected: frozenset[str]) -> tuple[str, ...]:
    """The result keys of a comparison of these measures, in RESULT_KEYS order."""
    return tuple(key for key in RESULT_KEYS if key in selected or key == "warning")


def model_parts(selected: frozenset[str], low_rank: bool = False) -> tuple[str, ...]:
    """The per-model quantities these measures need (what `prepare` computes up front), by
    the exact or the low-rank path."""
    skip = "loglik_factors" if low_rank and "kl" in selected else None
    parts = LOW_RANK_PARTS if low_rank else MODEL_PARTS
    return tuple(part for part, users in parts.items() if users & selected and part != skip)


def view_parts(selected: frozenset[str], svcca: str = "variance") -> tuple[str, ...]:
    """The alignment view's quantities these measures need, SVCCA's for this `svcca` mode."""
    other = {part for mode, parts in SVCCA_PARTS.items() if mode != svcca for part in parts}
    return tuple(part for part, users in VIEW_PARTS.items()
                 if users & selected and part not in other)
