"""Linear probes: how much of a concept a representation holds linearly (the follow-up's
"linearly recoverable concepts"; Nielsen et al. 2026). A least-squares map with an intercept
from f to the concept, fitted on one part of the inputs and scored by R^2 on the rest."""

from __future__ import annotations

import numpy as np


def linear_probe_r2(f_fit: np.ndarray, z_fit: np.ndarray, f_held: np.ndarray,
                    z_held: np.ndarray) -> np.ndarray:
    """R^2 per target column on the held-out inputs of z ~ [f, 1] W fitted on the others.

    f_* are (N, M), z_* are (N, T) or (N,); returns (T,) float64. 1 is a perfect linear code,
    0 no better than the held-out mean, and it can fall below 0 (a worse fit than the mean).
    A held-out target of zero variance gives NaN.
    """
    f_fit, f_held = _matrix(f_fit, "f_fit"), _matrix(f_held, "f_held")
    z_fit, z_held = _matrix(z_fit, "z_fit"), _matrix(z_held, "z_held")
    if len(f_fit) != len(z_fit) or len(f_held) != len(z_held):
        raise ValueError(f"inputs and targets differ in length: {len(f_fit)} vs {len(z_fit)}, "
                         f"{len(f_held)} vs {len(z_held)}")
    if f_fit.shape[1] != f_held.shape[1] or z_fit.shape[1] != z_held.shape[1]:
        raise ValueError("the fitted and held-out parts differ in their number of columns")
    design = np.hstack([f_fit, np.ones((len(f_fit), 1))])
    weights, *_ = np.linalg.lstsq(design, z_fit, rcond=None)
    predicted = np.hstack([f_held, np.ones((len(f_held), 1))]) @ weights
    residual = ((z_held - predicted) ** 2).sum(axis=0)
    total = ((z_held - z_held.mean(axis=0)) ** 2).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 1.0 - residual / total, np.nan)


def _matrix(a: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or not len(a):
        raise ValueError(f"{name} must be a non-empty (N, columns) array, got shape {a.shape}")
    return a
