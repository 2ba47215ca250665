"""compare(): every measure of the paper for one pair of models, with per-model work cached.

Pipelines compare all pairs of a set of models, so the expensive per-model pieces (float64
log-likelihoods, their covariance, orthonormal bases for CCA) live in a PreparedModel that is
built once per model and reused for every pair it is part of.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np

from .cca import mean_cca_from_bases, orthonormal_basis
from .extra import (
    centred_log_probs,
    components_for_variance,
    d_logit_from_clr,
    knn_edge_keys,
    knn_indices,
    linear_cka_centred,
    mutual_knn_from_keys,
    svcca_from_bases,
)
from .llv import (
    PivotTerms,
    check_combine,
    check_dist_type,
    check_label_pair,
    choose_pivot_and_leave_out,
    combine_terms,
    input_candidates,
    input_terms,
    label_terms,
    pivot_objective,
    pivot_terms,
)
from .loglik import as_float64_matrix, log_likelihoods, mean_kl
from .svd import d_fg, label_sets, m_svd_f, m_svd_g

RESULT_KEYS = (
    "kl",
    "d_llv",
    "t1",
    "t2",
    "t3",
    "t4",
    "y_pivot",
    "y_leave_out",
    "input_set",
    "m_svd_f",
    "m_svd_g",
    "d_fg",
    "mcca_f",
    "mcca_g",
    "cka_f",
    "svcca_f",
    "mutual_knn_f",
    "d_logit",
    "warning",
)
MUTUAL_KNN_K = 10  # Platonic Representation Hypothesis, App. A


class DegenerateRepresentationWarning(UserWarning):
    """A measure is undefined for this pair (collapsed embedding, tied unembeddings, NaN/inf)."""


@dataclass(frozen=True)
class CompareSettings:
    """How a pair is compared: the keywords of `compare` and `compare_prepared`, checked once.

    Both functions take exactly these keywords, with these defaults; building the object is
    where a bad value is rejected, so every code path sees validated settings.
    """

    num_samples: int = 200
    lam: float = 1e-5
    seed: int = 0
    input_set: Any = None
    y_pivot: int | None = None
    y_leave_out: int | None = None
    dist_type: str = "max"
    sum_or_max: str = "max"

    def __post_init__(self) -> None:
        check_dist_type(self.dist_type)
        check_combine(self.sum_or_max)
        if (self.y_pivot is None) != (self.y_leave_out is None):
            raise ValueError("give both y_pivot and y_leave_out, or neither")


_F = TypeVar("_F", bound=Callable[..., Any])


def _takes_settings(func: _F) -> _F:
    """Show CompareSettings' fields as the keyword-only parameters of `func` (help, inspect)."""
    sig = inspect.signature(func)
    positional = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    keywords = [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                          annotation=f.type)
        for f in fields(CompareSettings)
    ]
    func.__signature__ = sig.replace(parameters=[*positional, *keywords])  # type: ignore[attr-defined]
    return func


@dataclass(frozen=True, eq=False)
class PreparedModel:
    """One model's embeddings f (N x M), unembeddings g (K x M) and everything derived from them."""

    f: np.ndarray
    g: np.ndarray
    loglik: np.ndarray = field(repr=False)
    loglik_centred: np.ndarray = field(repr=False)
    loglik_cov: np.ndarray = field(repr=False)
    f_basis: np.ndarray = field(repr=False)
    g_basis: np.ndarray = field(repr=False)
    knn: np.ndarray | None = field(default=None, repr=False)  # sorted k-NN edge keys of f
    f_centred: np.ndarray | None = field(default=None, repr=False)
    f_gram_norm: float = 0.0
    f_svcca_kept: int = 0  # principal components explaining 99% of f's variance
    loglik_clr: np.ndarray | None = field(default=None, repr=False)
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


def prepare(f: Any, g: Any) -> PreparedModel:
    """Validate a model's representations and precompute its per-model quantities."""
    f64 = as_float64_matrix(f, "f")
    g64 = as_float64_matrix(g, "g")
    if f64.shape[1] != g64.shape[1]:
        raise ValueError(
            f"f and g must share the representation dimension M, got f {f64.shape} and g {g64.shape}"
        )
    if f64.shape[0] < 2:
        raise ValueError(f"need at least 2 inputs, got f of shape {f64.shape}")
    problems = []
    if not np.isfinite(f64).all():
        problems.append("non-finite values in the embeddings f")
    if not np.isfinite(g64).all():
        problems.append("non-finite values in the unembeddings g")
    if problems:
        f64 = np.where(np.isfinite(f64), f64, np.nan)
        g64 = np.where(np.isfinite(g64), g64, np.nan)
        nan_nk = np.full((f64.shape[0], g64.shape[0]), np.nan)
        nan_kk = np.full((g64.shape[0], g64.shape[0]), np.nan)
        empty = np.zeros((0, 0))
        return PreparedModel(f64, g64, nan_nk, nan_nk, nan_kk, empty, empty,
                             problem="; ".join(problems))
    with np.errstate(over="ignore", invalid="ignore"):
        loglik = log_likelihoods(f64, g64)
    if not np.isfinite(loglik).all():
        problems.append("log-likelihoods overflow (embedding or unembedding norms too large)")
    centred = loglik - loglik.mean(axis=0, keepdims=True)
    cov = centred.T @ centred / (loglik.shape[0] - 1)
    f_centred = f64 - f64.mean(axis=0, keepdims=True)
    return PreparedModel(
        f=f64,
        g=g64,
        loglik=loglik,
        loglik_centred=centred,
        loglik_cov=cov,
        f_basis=orthonormal_basis(f64),
        g_basis=orthonormal_basis(g64),
        knn=knn_edge_keys(knn_indices(f64, MUTUAL_KNN_K)) if len(f64) > MUTUAL_KNN_K else None,
        f_centred=f_centred,
        f_gram_norm=float(np.linalg.norm(f_centred.T @ f_centred)),
        f_svcca_kept=components_for_variance(f64),
        loglik_clr=centred_log_probs(loglik),
        problem="; ".join(problems),
    )


@lru_cache(maxsize=32)
def _cached_candidates(n_inputs: int, rep_dim: int, num_samples: int, seed: int) -> np.ndarray:
    rows = input_candidates(n_inputs, rep_dim, num_samples, seed)
    rows.setflags(write=False)
    return rows


def _check_pair(m1: PreparedModel, m2: PreparedModel) -> None:
    if m1.f.shape != m2.f.shape:
        raise ValueError(
            f"embeddings must be of the same inputs and dimension: {m1.f.shape} vs {m2.f.shape}"
        )
    if m1.g.shape != m2.g.shape:
        raise ValueError(
            f"unembeddings must be of the same labels and dimension: {m1.g.shape} vs {m2.g.shape}"
        )
    label_sets(m1.num_labels, m1.rep_dim)  # raises if K - 2 < M


def _in_key_order(values: dict[str, Any]) -> dict[str, Any]:
    """The result dict in RESULT_KEYS order: the one place that says what a result holds."""
    missing = set(RESULT_KEYS) - set(values)
    assert not missing, f"result lacks {sorted(missing)}"
    return {key: values[key] for key in RESULT_KEYS}


def _nan_result(m1: PreparedModel, reason: str) -> dict[str, Any]:
    """Every measure NaN (indices -1), with the reason: a model's representations are unusable."""
    n_sets = len(label_sets(m1.num_labels, m1.rep_dim))
    not_nan = {
        "y_pivot": -1,
        "y_leave_out": -1,
        "input_set": [-1] * (m1.rep_dim + 1),
        "m_svd_f": [float("nan")] * n_sets,
        "warning": reason,
    }
    return {key: not_nan.get(key, float("nan")) for key in RESULT_KEYS}


def extra_measures(m1: PreparedModel, m2: PreparedModel) -> dict[str, float]:
    """The measures beyond the paper (linear CKA, SVCCA, mutual k-NN of f; d_logit)."""
    knn = (
        mutual_knn_from_keys(m1.knn, m2.knn, m1.n_inputs, MUTUAL_KNN_K)
        if m1.knn is not None and m2.knn is not None
        else float("nan")
    )
    return {
        "cka_f": linear_cka_centred(m1.f_centred, m2.f_centred, m1.f_gram_norm, m2.f_gram_norm),
        "svcca_f": svcca_from_bases(m1.f_basis, m2.f_basis, m1.f_svcca_kept, m2.f_svcca_kept),
        "mutual_knn_f": knn,
        "d_logit": d_logit_from_clr(m1.loglik_clr, m2.loglik_clr),
    }


@_takes_settings
def compare_prepared(m1: PreparedModel, m2: PreparedModel, **settings: Any) -> dict[str, Any]:
    """All measures between two prepared models; see `compare` for the meaning of the arguments."""
    return compare_with_settings(m1, m2, CompareSettings(**settings))


def compare_with_settings(
    m1: PreparedModel, m2: PreparedModel, settings: CompareSettings
) -> dict[str, Any]:
    """`compare_prepared` with its keywords already gathered in a CompareSettings."""
    _check_pair(m1, m2)
    problems = [f"model {i}: {m.problem}" for i, m in ((1, m1), (2, m2)) if m.problem]
    if problems:
        reason = "; ".join(problems)
        warnings.warn(reason, DegenerateRepresentationWarning, stacklevel=3)
        return _nan_result(m1, reason)

    s = settings
    reasons: list[str] = []
    n, m = m1.n_inputs, m1.rep_dim

    # Label side: pivot/leave-out by the covariance objective, terms recomputed exactly.
    cache: dict[int, PivotTerms] = {}
    y_pivot, y_leave_out = s.y_pivot, s.y_leave_out
    if y_pivot is None:
        cov_12 = m1.loglik_centred.T @ m2.loglik_centred / (n - 1)
        objective = pivot_objective(m1.loglik_cov, m2.loglik_cov, cov_12, s.dist_type)
        y_pivot, y_leave_out = choose_pivot_and_leave_out(
            objective, m1.loglik_centred, m2.loglik_centred, s.dist_type, cache
        )
    assert y_leave_out is not None
    y_pivot, y_leave_out = int(y_pivot), int(y_leave_out)
    check_label_pair(m1.num_labels, y_pivot, y_leave_out)
    if y_pivot not in cache:
        cache[y_pivot] = pivot_terms(m1.loglik_centred, m2.loglik_centred, y_pivot)
    terms = cache[y_pivot]
    labels = label_terms(
        m1.loglik_centred, m2.loglik_centred, y_pivot, y_leave_out, s.dist_type, terms
    )

    # Input side: the given diversity set, or the scan over seeded candidates.
    if s.input_set is None:
        rows = _cached_candidates(n, m, int(s.num_samples), int(s.seed))
    else:
        rows = np.asarray(s.input_set, dtype=np.intp).reshape(1, -1)
        if rows.shape[1] != m + 1 or rows.min() < 0 or rows.max() >= n:
            raise ValueError(
                f"input_set must hold M+1 = {m + 1} indices in [0, {n}), got {s.input_set}"
            )
    scan = input_terms(m1.loglik[rows], m2.loglik[rows], s.dist_type)
    chosen_row = rows[scan.chosen]
    t2 = float(scan.scores[scan.chosen])
    t4 = float(scan.t4[scan.chosen])

    d_llv = combine_terms(labels.t1, t2, labels.t3, t4, s.lam, s.sum_or_max)
    if np.isnan(d_llv):
        reasons.append(
            "d_LLV undefined: a log-odds variance is zero (collapsed embedding or tied unembeddings)"
        )

    with np.errstate(invalid="ignore", divide="ignore"):
        svd_f = m_svd_f(m1.loglik_centred, m2.loglik_centred, y_pivot, y_leave_out, m, terms)
        svd_g = m_svd_g(m1.f, m1.g, m2.f, m2.g, chosen_row)
    dist_fg = d_fg(svd_f, svd_g)
    if np.isnan(dist_fg):
        reasons.append("d_SVD undefined: a standardised log-odds column has zero variance")

    mcca_f, why_f = mean_cca_from_bases(m1.f_basis, m2.f_basis, m)
    mcca_g, why_g = mean_cca_from_bases(m1.g_basis, m2.g_basis, m)
    reasons += [f"m_CCA(f): {why_f}"] * bool(why_f) + [f"m_CCA(g): {why_g}"] * bool(why_g)

    reason = "; ".join(reasons)
    if reason:
        warnings.warn(reason, DegenerateRepresentationWarning, stacklevel=3)
    return _in_key_order({
        "kl": mean_kl(m1.loglik, m2.loglik),
        "d_llv": d_llv,
        "t1": labels.t1,
        "t2": t2,
        "t3": labels.t3,
        "t4": t4,
        "y_pivot": int(y_pivot),
        "y_leave_out": int(y_leave_out),
        "input_set": [int(i) for i in chosen_row],
        "m_svd_f": [float(v) for v in svd_f],
        "m_svd_g": svd_g,
        "d_fg": dist_fg,
        "mcca_f": mcca_f,
        "mcca_g": mcca_g,
        **extra_measures(m1, m2),
        "warning": reason,
    })


@_takes_settings
def compare(f1: Any, g1: Any, f2: Any, g2: Any, **settings: Any) -> dict[str, Any]:
    """Compare models (f1, g1) and (f2, g2): KL, d_LLV and its terms, m_SVD, d_{f,g}, m_CCA.

    f is N x M (embeddings of the same N inputs for both models), g is K x M (unembeddings of
    the K labels, in class order). num_samples candidate diversity sets of M+1 inputs are
    drawn from numpy.random.default_rng(seed); lam weighs the scale terms t3, t4. Given
    input_set ([x0, x1..xM] row indices) or y_pivot/y_leave_out, those are used instead of
    searched. Keys: see RESULT_KEYS; `warning` is "" unless a measure is undefined (then NaN).
    The keywords and their defaults are the fields of CompareSettings.
    """
    options = CompareSettings(**settings)
    return compare_with_settings(prepare(f1, g1), prepare(f2, g2), options)
