"""The synthetic 2-D "radial classification" data set (the original's
`src/data/radial_classification.py`), vectorised: labels equal the original's per-point loop.
Points below the x-axis are reflected through the origin, so opposite sectors share a class."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INPUT_STD = 3.0  # a standard deviation (the original's docstring says "N(0,3)")


@dataclass(frozen=True)
class RadialData:
    x: np.ndarray  # (N, 2) float32
    labels: np.ndarray  # (N,) int64 in [0, K)
    num_classes: int


def radial_labels(x: np.ndarray, num_classes: int) -> np.ndarray:
    """Wedge index of each point's angle in [0, pi] after point reflection of x2 < 0."""
    x = np.asarray(x, dtype=np.float32)
    reflected = np.where(x[:, 1:2] < 0, -x, x).astype(np.float64)
    angle = np.arctan2(reflected[:, 1], reflected[:, 0])  # in [0, pi]
    wedge = np.floor(angle / (np.pi / num_classes)).astype(np.int64)
    return np.minimum(wedge, num_classes - 1)


def make_radial(n_points: int, num_classes: int, seed: int) -> RadialData:
    """`numpy.random.default_rng(seed).normal(0, 3, (N, 2))` as float32, labelled."""
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}")
    x = np.random.default_rng(seed).normal(0.0, INPUT_STD, (n_points, 2)).astype(np.float32)
    return RadialData(x=x, labels=radial_labels(x, num_classes), num_classes=num_classes)


def label_codes(labels: np.ndarray, num_classes: int) -> np.ndarray:
    """Truncated one-hot code that g takes: e_k of length K-1 for k < K-1, zeros for k = K-1."""
    eye = np.eye(num_classes, num_classes - 1, dtype=np.float32)  # last row is all zeros
    return eye[np.asarray(labels)]
