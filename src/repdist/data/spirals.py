"""The 2-D spirals of Nielsen et al. 2026, "Logit Distance Bounds Representational Similarity"
(their `dsets/synthetic.py::generate_2d_data`), generated, split and saved as theirs would be:
their code calls `quit()` before saving."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

SPLITS = ("train", "val", "test")
SPLIT_SEED = 42  # their train_test_split's random_state


@dataclass(frozen=True)
class SpiralsData:
    """The three splits: x (N, 2) float32, labels (N,) int64, as their npz holds them."""

    x: dict[str, np.ndarray]
    labels: dict[str, np.ndarray]
    num_classes: int


# Labels: per spiral, arm 0 gets label 0 and a fresh permutation labels the others. The labels
# are listed spiral-major but the points label-major, so block b of points takes block b of the
# labels (their code's order, kept: every label still covers n_spirals arms).
def spiral_points(seed: int, n_spirals: int = 4, n_labels: int = 7,
                  n_per_arm: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Every point (N, 2) float64 and label (N,) int64, drawn with numpy's legacy RNG as theirs."""
    if n_labels < 2 or n_spirals < 1 or n_per_arm < 1:
        raise ValueError(f"spirals need n_labels >= 2, n_spirals >= 1, n_per_arm >= 1, got "
                         f"{n_labels}, {n_spirals}, {n_per_arm}")
    rng = np.random.RandomState(seed)  # their np.random after np.random.seed(seed)
    arms = n_labels * n_spirals
    radius = np.linspace(1, 10, n_per_arm)
    jitter = rng.uniform(-0.75, 0.75, size=(arms, n_per_arm))  # one draw a point, in order
    arm = np.arange(arms, dtype=np.float64)[:, None]  # i * n_spirals + k
    angle = (0.2 * np.pi / n_labels * radius[None, :] / 2 + arm * 2 * np.pi / arms
             + jitter * np.pi / arms)
    x = (radius[None, :, None] * np.stack([np.cos(angle), np.sin(angle)], axis=-1)).reshape(-1, 2)
    labels = np.empty((n_spirals, n_labels), dtype=np.int64)
    for k in range(n_spirals):
        labels[k] = np.concatenate([[0], rng.permutation(np.arange(1, n_labels))]) % n_labels
    return x, np.repeat(labels.reshape(-1), n_per_arm)


def split_spirals(x: np.ndarray, labels: np.ndarray, num_classes: int,
                  split_seed: int = SPLIT_SEED) -> SpiralsData:
    """Their 50/25/25 split: train_test_split(test_size=0.5, stratify) twice, float32."""
    from sklearn.model_selection import train_test_split

    x_train, x_rest, y_train, y_rest = train_test_split(
        x, labels, test_size=0.5, random_state=split_seed, stratify=labels)
    x_val, x_test, y_val, y_test = train_test_split(
        x_rest, y_rest, test_size=0.5, random_state=split_seed, stratify=y_rest)
    xs = {"train": x_train, "val": x_val, "test": x_test}
    ys = {"train": y_train, "val": y_val, "test": y_test}
    return SpiralsData({k: v.astype(np.float32) for k, v in xs.items()},
                       {k: v.astype(np.int64) for k, v in ys.items()}, num_classes)


def make_spirals(seed: int, n_spirals: int = 4, n_labels: int = 7,
                 n_per_arm: int = 1000) -> SpiralsData:
    """The spirals of `seed`, split as theirs."""
    x, labels = spiral_points(seed, n_spirals, n_labels, n_per_arm)
    return split_spirals(x, labels, n_labels)


def save_spirals(data: SpiralsData, path: str | Path) -> None:
    """Their npz (X_train, Y_train, Z_train, X_val, ...), written atomically."""
    from ..io import atomic_path

    arrays = {}
    for split in SPLITS:
        arrays[f"X_{split}"] = data.x[split]
        arrays[f"Y_{split}"] = data.labels[split]
        arrays[f"Z_{split}"] = np.full_like(data.x[split], -1.0)  # their dummy concepts
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


def load_spirals(path: str | Path, num_classes: int | None = None) -> SpiralsData:
    """A spirals npz in their format; ValueError naming what is missing or malformed."""
    with np.load(path) as npz:
        missing = [f"{a}_{s}" for s in SPLITS for a in "XY" if f"{a}_{s}" not in npz.files]
        if missing:
            raise ValueError(f"{path}: not a spirals file in their format, no {missing}")
        xs = {s: np.asarray(npz[f"X_{s}"], dtype=np.float32) for s in SPLITS}
        ys = {s: np.asarray(npz[f"Y_{s}"]).reshape(-1).astype(np.int64) for s in SPLITS}
    for s in SPLITS:
        if xs[s].ndim != 2 or xs[s].shape[1] != 2 or len(xs[s]) != len(ys[s]):
            raise ValueError(f"{path}: X_{s} {xs[s].shape} and Y_{s} {ys[s].shape} are not "
                             "(N, 2) points with N labels")
    k = num_classes if num_classes is not None else int(max(y.max() for y in ys.values())) + 1
    return SpiralsData(xs, ys, k)
