"""PreparedModel: one model's representations and the per-model work every pair reuses.

Pipelines compare all pairs of a set of models, so the expensive per-model pieces (float64
log-likelihoods, their covariance, orthonormal bases for CCA, the k-NN graph) are computed
once per model. Each piece is computed on first use and kept, and `prepare` computes up front
those that the requested measures need, so a caller asking only for m_CCA never builds a
k-NN graph.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .cca import orthonormal_basis
from .extra import centred_log_probs, components_for_variance, knn_edge_keys, knn_indices
from .loglik import as_float64_matrix, log_likelihoods
from .memory import prepare_bytes, require
from .selection import model_parts, select_measures

MUTUAL_KNN_K = 10  # Platonic Representation Hypothesis, App. A


@dataclass(frozen=True, eq=False)
class PreparedModel:
    """One model's embeddings f (N x M), unembeddings g (K x M) and everything derived from them.

    `problem` is non-empty when the representations are unusable (NaN/inf, overflowing
    log-likelihoods): every measure of a pair with such a model is NaN.
    """

    f: np.ndarray
    g: np.ndarray
    loglik: np.ndarray = field(repr=False)
    problem: str = ""

    @property
    def n_inputs(self) -> int:
        return self.f.shape[0]

    @property
    def num_labels(self) -> int:
        return self.g.shape[0]

    @property
    def rep_dim(self) -> int:
        return self.f.shape[1]

    @cached_property
    def loglik_centred(self) -> np.ndarray:
        return self.loglik - self.loglik.mean(axis=0, keepdims=True)

    @cached_property
    def loglik_cov(self) -> np.ndarray:
        centred = self.loglik_centred
        return centred.T @ centred / (centred.shape[0] - 1)

    @cached_property
    def f_basis(self) -> np.ndarray:
        return orthonormal_basis(self.f)

    @cached_property
    def g_basis(self) -> np.ndarray:
        return orthonormal_basis(self.g)

    @cached_property
    def knn(self) -> np.ndarray | None:
        """Sorted k-NN edge keys of f (None when N is too small for k neighbours)."""
        if self.n_inputs <= MUTUAL_KNN_K:
            return None
        return knn_edge_keys(knn_indices(self.f, MUTUAL_KNN_K))

    @cached_property
    def f_centred(self) -> np.ndarray:
        return self.f - self.f.mean(axis=0, keepdims=True)

    @cached_property
    def f_gram_norm(self) -> float:
        return float(np.linalg.norm(self.f_centred.T @ self.f_centred))

    @cached_property
    def f_svcca_kept(self) -> int:
        """Principal components explaining 99% of f's variance."""
        return components_for_variance(self.f)

    @cached_property
    def loglik_clr(self) -> np.ndarray:
        return centred_log_probs(self.loglik)

    def warm(self, measures: Iterable[str] | str | None = None) -> PreparedModel:
        """Compute now every per-model quantity these measures need; returns self."""
        if not self.problem:
            for part in model_parts(select_measures(measures)):
                getattr(self, part)
        return self


def _unusable(f64: np.ndarray, g64: np.ndarray, problem: str) -> PreparedModel:
    """A model whose measures are all NaN; its derived quantities are NaN/empty placeholders."""
    f64 = np.where(np.isfinite(f64), f64, np.nan)
    g64 = np.where(np.isfinite(g64), g64, np.nan)
    nan_nk = np.full((f64.shape[0], g64.shape[0]), np.nan)
    model = PreparedModel(f64, g64, nan_nk, problem=problem)
    empty = np.zeros((0, 0))
    model.__dict__.update(  # fill the cached properties: nothing is computed from NaN
        loglik_centred=nan_nk, loglik_cov=np.full((g64.shape[0],) * 2, np.nan),
        f_basis=empty, g_basis=empty, knn=None, f_centred=None, f_gram_norm=0.0,
        f_svcca_kept=0, loglik_clr=None,
    )
    return model


def _own_read_only(converted: np.ndarray, given: Any) -> np.ndarray:
    """The array itself if conversion made a fresh one, else a copy, made read-only: a caller
    who later edits their array in place must not change a prepared model behind its back."""
    if converted is given or converted.base is not None:
        converted = converted.copy()
    converted.setflags(write=False)
    return converted


def prepare(f: Any, g: Any, measures: Iterable[str] | str | None = None) -> PreparedModel:
    """Validate a model's representations and precompute its per-model quantities.

    `measures` (default: all) limits the up-front work to what those measures need; anything
    else is computed on first use. The model keeps its own read-only copy of f and g.
    """
    f64 = _own_read_only(as_float64_matrix(f, "f"), f)
    g64 = _own_read_only(as_float64_matrix(g, "g"), g)
    if f64.shape[1] != g64.shape[1]:
        raise ValueError(
            "f and g must share the representation dimension M, "
            f"got f {f64.shape} and g {g64.shape}"
        )
    if f64.shape[0] < 2:
        raise ValueError(f"need at least 2 inputs, got f of shape {f64.shape}")
    (n, m), k = f64.shape, g64.shape[0]
    parts = model_parts(select_measures(measures))
    require(prepare_bytes(n, k, m, parts),
            f"preparing a model of N={n} inputs, K={k} labels, M={m}")
    problems = []
    if not np.isfinite(f64).all():
        problems.append("non-finite values in the embeddings f")
    if not np.isfinite(g64).all():
        problems.append("non-finite values in the unembeddings g")
    if problems:
        return _unusable(f64, g64, "; ".join(problems))
    with np.errstate(over="ignore", invalid="ignore"):
        loglik = log_likelihoods(f64, g64)
    if not np.isfinite(loglik).all():
        problem = "log-likelihoods overflow (embedding or unembedding norms too large)"
        return PreparedModel(f64, g64, loglik, problem=problem)
    return PreparedModel(f64, g64, loglik).warm(measures)
