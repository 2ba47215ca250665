"""Similarity and distance measures between models p(y|x) = softmax(f(x)^T g(y)).

Pure functions on arrays; `compare` is the single entry point pipelines and users call.
"""

from .cache import PreparedCache, prepared_cache
from .cca import canonical_correlations, mean_cca, orthonormal_basis
from .compare import (
    PRH_CONVENTIONS,
    RESULT_KEYS,
    CompareSettings,
    DegenerateRepresentationWarning,
    PreparedModel,
    compare,
    compare_prepared,
    compare_with_settings,
    prepare,
)
from .llv import (
    choose_pivot_and_leave_out,
    combine_terms,
    input_candidates,
    input_terms,
    label_terms,
    pivot_objective,
)
from .loglik import log_likelihoods, mean_kl
from .svd import d_fg, label_sets, m_svd_f, m_svd_g

__all__ = [
    "PRH_CONVENTIONS",
    "RESULT_KEYS",
    "CompareSettings",
    "DegenerateRepresentationWarning",
    "PreparedCache",
    "PreparedModel",
    "canonical_correlations",
    "choose_pivot_and_leave_out",
    "combine_terms",
    "compare",
    "compare_prepared",
    "compare_with_settings",
    "d_fg",
    "input_candidates",
    "input_terms",
    "label_sets",
    "label_terms",
    "log_likelihoods",
    "m_svd_f",
    "m_svd_g",
    "mean_cca",
    "mean_kl",
    "orthonormal_basis",
    "pivot_objective",
    "prepare",
    "prepared_cache",
]
