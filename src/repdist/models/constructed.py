"""Hand-built models with known answers (no training): paper Table 1's pair (the original's
`experiments/kl_to_zero_dissimilar_reps.py`), Fig. 16 left's evenly spaced classifiers (its
`experiments/making_constructed_models.py`) and the workshop paper's example. The original used
unseeded generators; here every draw comes from the numpy Generator passed in."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ANGLE_JITTER = np.pi / 64  # embedding angles are class angle + U(-pi/64, pi/64)
LENGTH_JITTER = 0.01  # embedding lengths are min_length + |0.01 N(0, 1)|


@dataclass(frozen=True)
class ModelPair:
    """Two models' embeddings (N x 2) and unembeddings (K x 2) on the same N inputs."""

    f1: np.ndarray
    g1: np.ndarray
    f2: np.ndarray
    g2: np.ndarray


def class_angles(num_classes: int) -> np.ndarray:
    """phi_c = 2 pi c / K: K evenly spaced directions."""
    return 2.0 * np.pi * np.arange(num_classes) / num_classes


def polar(lengths: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Stack (r cos phi, r sin phi) along a last axis of size 2."""
    return np.stack([lengths * np.cos(angles), lengths * np.sin(angles)], axis=-1)


def _jitter(rng: np.random.Generator, num_classes: int, n_per_class: int, min_length: float):
    offsets = rng.uniform(-ANGLE_JITTER, ANGLE_JITTER, size=(num_classes, n_per_class))
    lengths = min_length + np.abs(LENGTH_JITTER * rng.standard_normal((num_classes, n_per_class)))
    return offsets, lengths


def evenly_spaced_classifier(rng: np.random.Generator, num_classes: int, n_per_class: int,
                             min_f_length: float, g_length: float
                             ) -> tuple[np.ndarray, np.ndarray]:
    """(f, g) with g(c) at angle 2 pi c/K, length g_length, and n_per_class inputs per class
    (class-major order) embedded near their class direction with length ~ min_f_length."""
    phi = class_angles(num_classes)
    offsets, lengths = _jitter(rng, num_classes, n_per_class, min_f_length)
    f = polar(lengths, phi[:, None] + offsets).reshape(-1, 2)
    g = polar(np.full(num_classes, g_length), phi)
    return f, g


def kl_table_pair(rng: np.random.Generator, rho: float, num_classes: int, n_per_class: int,
                  min_f_length: float, permutation: tuple[int, ...]) -> ModelPair:
    """Table 1's pair: class c at angle phi_c in model 1, at phi_{pi(c)} in model 2 (f and g; f2
    with the offsets of row pi(c), the lengths of row c). Growing rho (g's length) sharpens both
    models' predictions, so KL -> 0, while f2 is no linear function of f1."""
    perm = np.asarray(permutation, dtype=np.intp)
    if sorted(perm.tolist()) != list(range(num_classes)):
        raise ValueError(f"permutation {permutation} is not a permutation of range({num_classes})")
    phi = class_angles(num_classes)
    offsets, lengths = _jitter(rng, num_classes, n_per_class, min_f_length)
    f1 = polar(lengths, phi[:, None] + offsets).reshape(-1, 2)
    f2 = polar(lengths, phi[perm][:, None] + offsets[perm]).reshape(-1, 2)
    g1 = polar(np.full(num_classes, float(rho)), phi)
    g2 = polar(np.full(num_classes, float(rho)), phi[perm])
    return ModelPair(f1=f1, g1=g1, f2=f2, g2=g2)


# The workshop paper's example (seed 000, §4 and App. D): two 4-label models in 2-D with
# near-zero loss and nearly equal likelihoods for the correct labels, whose embeddings are far
# from linearly related. Model ': unembeddings of length 1100 at angles 0, pi/16, 2pi/16,
# 3pi/16; 1000 embeddings per label at the label's angle + U(-pi/128, pi/128), length
# |N(0,1)| + 1. Model *: unembeddings of length 100 at 0, 2pi/6, pi, 3pi/2; the same angular
# offsets times 16 (U(-pi/8, pi/8)) around its own label directions, the same lengths.
N_PER_LABEL = 1000
PRIME_ANGLES = np.array([0.0, 1.0, 2.0, 3.0]) * np.pi / 16
STAR_ANGLES = np.array([0.0, 2 * np.pi / 6, np.pi, 3 * np.pi / 2])


@dataclass(frozen=True)
class WorkshopModels:
    f_prime: np.ndarray
    g_prime: np.ndarray
    f_star: np.ndarray
    g_star: np.ndarray
    labels: np.ndarray


def workshop_models(rng: np.random.Generator, n_per_label: int = N_PER_LABEL) -> WorkshopModels:
    offsets = rng.uniform(-np.pi / 128, np.pi / 128, size=(4, n_per_label))
    lengths = np.abs(rng.standard_normal((4, n_per_label))) + 1.0
    return WorkshopModels(
        f_prime=polar(lengths, PRIME_ANGLES[:, None] + offsets).reshape(-1, 2),
        g_prime=polar(np.full(4, 1100.0), PRIME_ANGLES),
        f_star=polar(lengths, STAR_ANGLES[:, None] + 16 * offsets).reshape(-1, 2),
        g_star=polar(np.full(4, 100.0), STAR_ANGLES), labels=np.repeat(np.arange(4), n_per_label))


def correct_label_loglik(v: np.ndarray, g_angles: np.ndarray, label: int,
                         offset: float = 0.0) -> np.ndarray:
    """The workshop paper's App. E, Eq. (56): log p(y|x) of the correct label as a function of
    v = ||f(x)|| ||g(y)||, all g of one length, f at angle g_angles[label] + offset:
    cos(f, g(y)) v - log sum_y' exp(cos(f, g(y')) v), in float64; accurate where the loss is
    tiny (log1p of the other labels' odds), so the curve does not stop at float rounding."""
    v = np.asarray(v, dtype=np.float64)[:, None]
    cosines = np.cos(np.asarray(g_angles, dtype=np.float64) - (g_angles[label] + offset))
    odds = (cosines[None, :] - cosines[label]) * v  # log-odds of each label against y
    others = np.delete(odds, label, axis=1)
    top = np.maximum(others.max(axis=1), 0.0)
    # -log p = log(1 + sum exp(others)) = top + log(exp(-top) + sum exp(others - top))
    small = np.log1p(np.exp(others).sum(axis=1))
    large = top + np.log(np.exp(-top) + np.exp(others - top[:, None]).sum(axis=1))
    return -np.where(top > 0, large, small)
