"""CIFAR-100 (`cifar-100-python/`, the 100 fine labels) as the follow-up reads it: fetch, load,
stand-in as in `cifar10`. Pixels become floats in [0, 1] and nothing else (their `ToTensor()`)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np

from .cifar10 import (CIFAR10, STANDIN_MARKER, Archive, fetch_folder, pack_standin,
                      standin_images, write_py2_pickle)

ARCHIVE = Archive(url="https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
                  md5="eb9058c3a382ffc7106e4002c42a8d85", name="cifar-100-python.tar.gz",
                  folder="cifar-100-python", files=("train", "test", "meta"))
NUM_CLASSES = 100
COARSE_CLASSES = 20


class CIFAR100Error(RuntimeError):
    """CIFAR-100 is missing, corrupt or cannot be fetched; the message says what to do."""


def fetch_cifar100(resources: str | os.PathLike[str], url: str = ARCHIVE.url,
                   md5: str = ARCHIVE.md5, timeout: float = 30.0) -> Path:
    """Make `resources/cifar-100-python/` exist and be complete; return it."""
    archive = Archive(url, md5, ARCHIVE.name, ARCHIVE.folder, ARCHIVE.files)
    return fetch_folder(archive, resources, CIFAR100Error,
                        "or set `logit_distance.cifar100.root` to an existing cifar-100-python "
                        "folder; the spirals and SUB run without it", timeout)


def _read_part(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with open(path, "rb") as fh:
        part = pickle.load(fh, encoding="latin1")
    data = np.asarray(part["data"], dtype=np.uint8)
    labels = np.asarray(part["fine_labels"], dtype=np.int64)
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(labels) != len(data) or (
            len(labels) and not 0 <= labels.min() <= labels.max() < NUM_CLASSES):
        raise CIFAR100Error(f"{path}: not a CIFAR-100 file (data {data.shape}, "
                            f"{len(labels)} fine labels)")
    return data.reshape(-1, 3, 32, 32), labels


def load_cifar100(folder: str | os.PathLike[str]) -> CIFAR10:
    """Read a cifar-100-python folder, fine labels (CIFAR100Error naming what is missing)."""
    folder = Path(folder)
    missing = ARCHIVE.missing(folder)
    if missing:
        raise CIFAR100Error(
            f"{folder} is not a complete CIFAR-100 copy: missing {', '.join(missing)}. Point "
            "`logit_distance.cifar100.root` at a cifar-100-python folder, or leave it empty "
            "to download")
    train_images, train_labels = _read_part(folder / "train")
    test_images, test_labels = _read_part(folder / "test")
    with open(folder / "meta", "rb") as fh:
        names = tuple(pickle.load(fh, encoding="latin1")["fine_label_names"])
    return CIFAR10(train_images, train_labels, test_images, test_labels, names,
                   standin=(folder / STANDIN_MARKER).exists())


def to_unit(images: np.ndarray) -> np.ndarray:
    """uint8 (N, 3, 32, 32) -> float32 in [0, 1]: their ToTensor()."""
    return images.astype(np.float32) / 255.0


def write_standin(folder: str | os.PathLike[str], n_train: int = 1000, n_test: int = 200,
                  seed: int = 0) -> Path:
    """A small CIFAR-100 look-alike as `cifar10.write_standin`; coarse label: fine // 5."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    templates = rng.uniform(40, 215, size=(NUM_CLASSES, 3, 4, 4)).repeat(8, 2).repeat(8, 3)

    def part(n: int, name: str) -> dict:
        data, fine = standin_images(rng, templates, n, 30)
        return {"filenames": [f"standin_{name}_{j}.png" for j in range(n)],
                "batch_label": f"stand-in {name}ing batch 1 of 1",
                "fine_labels": fine.tolist(), "coarse_labels": (fine // 5).tolist(), "data": data}

    write_py2_pickle(folder / "train", part(n_train, "train"))
    write_py2_pickle(folder / "test", part(n_test, "test"))
    write_py2_pickle(folder / "meta", {
        "fine_label_names": [f"standin_class_{k:02d}" for k in range(NUM_CLASSES)],
        "coarse_label_names": [f"standin_superclass_{k:02d}" for k in range(COARSE_CLASSES)]})
    (folder / STANDIN_MARKER).write_text("synthetic stand-in for CIFAR-100, made by repdist\n")
    return folder


def write_standin_archive(path: str | os.PathLike[str], **kwargs) -> str:
    """The stand-in packed as cifar-100-python.tar.gz; returns its MD5 (for download tests)."""
    return pack_standin(path, ARCHIVE.folder, write_standin, **kwargs)
