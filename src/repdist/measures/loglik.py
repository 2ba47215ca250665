"""Log-likelihoods of p(y|x) = softmax_y(f(x)^T g(y)) and the mean KL between two models.

All float64 with a max-shifted logsumexp: the original code (`src/dissimilarity_measures/`)
stored log-likelihoods in float32, which gives negative KL for near-identical models."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..io.validation import representation_matrix


def logsumexp_rows(logits: np.ndarray) -> np.ndarray:
    """Row-wise log(sum(exp(.))), shifted by the row maximum so it never overflows."""
    shift = logits.max(axis=1, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    return shift + np.log(np.exp(logits - shift).sum(axis=1, keepdims=True))


def log_likelihoods(f: Any, g: Any) -> np.ndarray:
    """ell[i, k] = log p(y_k | x_i) for embeddings f (N x M) and unembeddings g (K x M); N x K."""
    f64 = representation_matrix(f, "f", "rows x M")
    g64 = representation_matrix(g, "g", "rows x M")
    if f64.shape[1] != g64.shape[1]:
        raise ValueError(f"f and g must share the representation dimension M, got f {f64.shape} "
                         f"and g {g64.shape}")
    logits = f64 @ g64.T
    return logits - logsumexp_rows(logits)


def mean_kl(loglik_1: np.ndarray, loglik_2: np.ndarray) -> float:
    """Mean over inputs of KL(p1(.|x) || p2(.|x)), both given as N x K log-likelihoods; model 1
    is the reference distribution, as in the paper's code."""
    if loglik_1.shape != loglik_2.shape:
        raise ValueError(f"log-likelihood shapes differ: {loglik_1.shape} vs {loglik_2.shape}")
    p1 = np.exp(loglik_1)
    return float(np.mean(np.sum(p1 * (loglik_1 - loglik_2), axis=1)))
