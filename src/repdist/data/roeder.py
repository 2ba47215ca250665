"""Roeder et al. (2021) §5.1's simulation data: K-way classification by the angle of a 2-D
Gaussian point over the full circle (unlike `radial.py`, opposite wedges are different classes).
App. A.2's noise dimensions (the text leaves their law open) are drawn like the signal, so that
their scale does not tell them apart."""

from __future__ import annotations

import numpy as np

from .radial import INPUT_STD, RadialData

ROEDER_CLASSES = 18  # Roeder et al. 2021, §5.1: K >= dim f(x) + 1 with room to spare


def angle_labels(x: np.ndarray, num_classes: int) -> np.ndarray:
    """Wedge of the angle of (x1, x2) in [0, 2 pi), K from the x1 axis; other columns ignored."""
    x = np.asarray(x, dtype=np.float64)
    angle = np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * np.pi)
    wedge = np.floor(angle / (2 * np.pi / num_classes)).astype(np.int64)
    return np.minimum(wedge, num_classes - 1)  # an angle that rounds to 2 pi is the last wedge


def make_roeder(n_points: int, seed: int, num_classes: int = ROEDER_CLASSES,
                noise_dims: int = 0) -> RadialData:
    """N points x ~ N(0, 3^2 I_2), labelled by angle, then `noise_dims` N(0, 3^2) columns
    appended (drawn after the signal, so the first two columns do not depend on noise_dims)."""
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}")
    if noise_dims < 0:
        raise ValueError(f"noise_dims must be >= 0, got {noise_dims}")
    rng = np.random.default_rng(seed)
    signal = rng.normal(0.0, INPUT_STD, (n_points, 2))
    noise = rng.normal(0.0, INPUT_STD, (n_points, noise_dims))
    x = np.concatenate([signal, noise], axis=1).astype(np.float32)
    return RadialData(x=x, labels=angle_labels(x, num_classes), num_classes=num_classes)
