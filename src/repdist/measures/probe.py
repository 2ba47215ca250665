"""Linear probes: how much of a concept a representation holds linearly (the follow-up's
"linearly recoverable concepts"; Nielsen et al. 2026). A least-squares map with an intercept
from f to the concept, fitted on one part of the inputs and scored by R^2 on the rest."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cca import EPS, ROUNDING_FACTOR


def linear_probe_r2(f_fit: np.ndarray, z_fit: np.ndarray, f_held: np.ndarray,
                    z_held: np.ndarray) -> np.ndarray:
    """R^2 per target column on the held-out inputs of z ~ [f, 1] W fitted on the others: f_* (N,
    M), z_* (N, T) or (N,); (T,) float64. 1 is a perfect linear code, 0 the held-out mean, below
    0 worse; a held-out target of zero variance (to within rounding of its values) gives NaN."""
    f_fit, f_held = _matrix(f_fit, "f_fit"), _matrix(f_held, "f_held")
    z_fit, z_held = _matrix(z_fit, "z_fit"), _matrix(z_held, "z_held")
    if len(f_fit) != len(z_fit) or len(f_held) != len(z_held):
        raise ValueError(f"inputs and targets differ in length: {len(f_fit)} vs {len(z_fit)}, "
                         f"{len(f_held)} vs {len(z_held)}")
    if f_fit.shape[1] != f_held.shape[1] or z_fit.shape[1] != z_held.shape[1]:
        raise ValueError("the fitted and held-out parts differ in their number of columns")
    predicted = linear_map(f_fit, z_fit, f_held)
    residual = ((z_held - predicted) ** 2).sum(axis=0)
    total = ((z_held - z_held.mean(axis=0)) ** 2).sum(axis=0)
    # zero variance to within rounding of the target's own values (cca.is_constant's level)
    floor = (ROUNDING_FACTOR * EPS["float64"]) ** 2 * (z_held**2).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > floor, 1.0 - residual / total, np.nan)


def linear_map(f_fit: np.ndarray, z_fit: np.ndarray, f_apply: np.ndarray) -> np.ndarray:
    """The least-squares map z ~ [f, 1] W fitted on (f_fit, z_fit), applied to f_apply: (N_apply,
    T) float64. Roeder et al. 2021's Fig. 2c maps one model's f into another's coordinates so."""
    f_fit, z_fit, f_apply = (_matrix(a, n) for a, n in ((f_fit, "f_fit"), (z_fit, "z_fit"),
                                                         (f_apply, "f_apply")))
    weights, *_ = np.linalg.lstsq(np.hstack([f_fit, np.ones((len(f_fit), 1))]), z_fit,
                                  rcond=None)
    return np.hstack([f_apply, np.ones((len(f_apply), 1))]) @ weights


@dataclass(frozen=True)
class LinearFit:
    """Roeder's Fig. 2c for one pair: model b's f mapped by least squares (with an intercept,
    fitted on the first half of the inputs) into model a's coordinates, on the other half."""

    title: str
    f_a: np.ndarray  # (N_held, M) model a's f on the held-out half
    mapped_b: np.ndarray  # (N_held, M) model b's f there, mapped into a's coordinates
    r2: np.ndarray  # (M,) held-out R^2 per dimension of a


def linear_fit(title: str, f_a: np.ndarray, f_b: np.ndarray) -> LinearFit:
    """Fit f_a ~ [f_b, 1] W on the first half of the rows; map and score the second half."""
    f_a, f_b = np.asarray(f_a, dtype=np.float64), np.asarray(f_b, dtype=np.float64)
    if f_a.shape[0] != f_b.shape[0]:
        raise ValueError(f"f of the two models differ in inputs: {len(f_a)} vs {len(f_b)}")
    half = len(f_a) // 2
    mapped = linear_map(f_b[:half], f_a[:half], f_b[half:])
    r2 = linear_probe_r2(f_b[:half], f_a[:half], f_b[half:], f_a[half:])
    return LinearFit(title, f_a[half:], mapped, r2)


def _matrix(a: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or not len(a):
        raise ValueError(f"{name} must be a non-empty (N, columns) array, got shape {a.shape}")
    return a
