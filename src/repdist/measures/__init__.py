"""Similarity and distance measures between models p(y|x) = softmax(f(x)^T g(y)).

Exported: what README and docs/measures.md tell users to call (`compare`, its settings and its
null's, `prepare` and `compare_prepared`, the cache, the warnings, the paper's named measures).
Everything else (d_LLV's pivot search, the low-rank path, the PRH metrics, the glossary) is
imported from its own module."""

from .cache import prepared_cache
from .cca import mean_cca
from .compare import (
    CompareSettings,
    DegenerateRepresentationWarning,
    PivotSampleWarning,
    compare,
    compare_prepared,
    compare_with_settings,
)
from .conventions import PRH_CONVENTIONS
from .loglik import log_likelihoods, mean_kl
from .null import NullSettings
from .prepared import PreparedModel, prepare
from .selection import RESULT_KEYS
from .svd import d_fg, m_svd_f, m_svd_g

__all__ = [
    "PRH_CONVENTIONS", "RESULT_KEYS", "CompareSettings", "DegenerateRepresentationWarning",
    "NullSettings", "PivotSampleWarning", "PreparedModel", "compare", "compare_prepared",
    "compare_with_settings", "d_fg", "log_likelihoods", "m_svd_f", "m_svd_g", "mean_cca", "mean_kl",
    "prepare", "prepared_cache",
]
