"""Similarity and distance measures between models p(y|x) = softmax(f(x)^T g(y)).

Pure functions on arrays; `compare` is the single entry point pipelines and users call. This
package exports what users are told to call (README, docs/measures.md): `compare` and its
settings (and its permutation null's, `NullSettings`), `prepare` and `compare_prepared` for many
pairs, the prepared models' cache, the
warnings a comparison raises, and the paper's named measures (KL from log-likelihoods, m_SVD,
d_{f,g}, m_CCA). Everything else (d_LLV's pivot search, label sets, bases, the low-rank path,
the PRH metrics, what each output column means) is importable from its own module:
`repdist.measures.llv`, `.svd`, `.cca`, `.low_rank`, `.prh`, `.extra`, `.glossary`.
"""

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
    "PRH_CONVENTIONS",
    "RESULT_KEYS",
    "CompareSettings",
    "DegenerateRepresentationWarning",
    "NullSettings",
    "PivotSampleWarning",
    "PreparedModel",
    "compare",
    "compare_prepared",
    "compare_with_settings",
    "d_fg",
    "log_likelihoods",
    "m_svd_f",
    "m_svd_g",
    "mean_cca",
    "mean_kl",
    "prepare",
    "prepared_cache",
]
