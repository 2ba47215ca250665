"""scikit-learn's bundled 8 x 8 handwritten digits (1,797 images, grey levels 0-16): the offline,
CPU-sized stand-in for CIFAR-10 in Roeder et al.'s contrastive experiment."""

from __future__ import annotations

import numpy as np

DIGITS_LEVELS = 16.0  # the largest grey level


def load_digit_images() -> np.ndarray:
    """Every image as float32 (1797, 1, 8, 8) in [0, 1], in the data set's order."""
    from sklearn.datasets import load_digits

    images = load_digits().images
    return (images / DIGITS_LEVELS).astype(np.float32)[:, None]
