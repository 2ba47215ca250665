"""SUB (Bader, Girrbach, Alaniz, Akata, ICCV 2025: CUB birds with one attribute substituted, 33
birds and 33 attributes), as the follow-up reads it (their `dsets/sub.py`,
`dsets/preprocess_sub.py`): the DINOv2-base CLS token of every image, saved by their
preprocessing as a torch file (`data/SUB_dinov2_embeddings.pt`: `embeddings` (N, 768) float32,
`labels` the birds, `attributes` the substituted attribute, `model`, `image_size`, `dataset`,
`split`). Split as theirs: train_test_split(test_size=0.3, random_state=42, stratify=birds), then
the rest 80/20 (train, validation) the same way.

A stand-in in the same format, made here (offline, for the quick DAG and the tests): each bird a
random centre in 768 dimensions, each attribute a random direction added to it, Gaussian noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

SPLITS = ("train", "val", "test")
SPLIT_SEED = 42  # their random_state
KEYS = ("embeddings", "labels", "attributes")


class SubFeaturesError(ValueError):
    """A features file that is not SUB's in their format."""


@dataclass(frozen=True)
class SubData:
    """Per split: the features (N, D) float32, the birds (N,) and the attributes (N,), int64."""

    x: dict[str, np.ndarray]
    labels: dict[str, np.ndarray]
    concepts: dict[str, np.ndarray]
    num_classes: int
    num_concepts: int


def load_sub_features(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features, birds, attributes) from a features file in their format."""
    import torch

    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unreadable file: say which
        raise SubFeaturesError(f"{path}: not a torch file of SUB's features: {err}") from err
    missing = [k for k in KEYS if not isinstance(data, dict) or k not in data]
    if missing:
        raise SubFeaturesError(f"{path}: no {missing}: their dsets/preprocess_sub.py writes "
                               "embeddings, labels and attributes")
    from ..io.host import to_host

    x = np.asarray(to_host(data["embeddings"], np.float32), dtype=np.float32)
    birds, attributes = (np.asarray(to_host(data[k])).reshape(-1).astype(np.int64)
                         for k in ("labels", "attributes"))
    if x.ndim != 2 or not len(x) == len(birds) == len(attributes):
        raise SubFeaturesError(f"{path}: embeddings {x.shape}, {len(birds)} labels and "
                               f"{len(attributes)} attributes do not match")
    return x, birds, attributes


def split_sub(x: np.ndarray, birds: np.ndarray, attributes: np.ndarray,
              split_seed: int = SPLIT_SEED) -> SubData:
    """Their split (module docstring)."""
    from sklearn.model_selection import train_test_split

    x_rest, x_test, a_rest, a_test, y_rest, y_test = train_test_split(
        x, attributes, birds, test_size=0.3, random_state=split_seed, stratify=birds)
    x_train, x_val, a_train, a_val, y_train, y_val = train_test_split(
        x_rest, a_rest, y_rest, test_size=0.2, random_state=split_seed, stratify=y_rest)
    return SubData({"train": x_train, "val": x_val, "test": x_test},
                   {"train": y_train, "val": y_val, "test": y_test},
                   {"train": a_train, "val": a_val, "test": a_test},
                   int(birds.max()) + 1, int(attributes.max()) + 1)


def write_sub_standin(path: str | Path, per_bird: int, seed: int, birds: int = 33,
                      attributes: int = 33, dim: int = 768) -> None:
    """A stand-in features file in their format (module docstring), written atomically."""
    import torch

    from ..io import atomic_path

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(birds, dim)) * 1.5
    directions = rng.normal(size=(attributes, dim))
    labels = np.repeat(np.arange(birds), per_bird)
    attrs = rng.integers(attributes, size=len(labels))
    x = centres[labels] + directions[attrs] + rng.normal(size=(len(labels), dim))
    data = {"embeddings": torch.as_tensor(x, dtype=torch.float32),
            "labels": torch.as_tensor(labels), "attributes": torch.as_tensor(attrs),
            "model": "stand-in (not DINOv2)", "image_size": 0, "dataset": "SUB stand-in",
            "split": "test"}
    with atomic_path(path) as tmp:
        torch.save(data, tmp)
