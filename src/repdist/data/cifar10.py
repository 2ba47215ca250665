"""CIFAR-10 in its python-pickle format (`cifar-10-batches-py/`): fetch, load, stand-in.

No torchvision needed: the batches are pickled dicts with a uint8 `data` array (N x 3072, RGB
planes) and `labels`. Pixels are scaled to [-1, 1] (mean 0.5, std 0.5 per channel), no
augmentation, as the paper. The stand-in writer produces a small learnable data set in exactly
this format so the whole CIFAR branch runs offline in tests and `make quick`.
"""

from __future__ import annotations

import os
import pickle
import struct
import tarfile
import tempfile
import urllib.error
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..io import atomic_folder, atomic_path, file_digest
from ..io.download import download, verify_checksum

URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
MD5 = "c58f30108f718f92721af3b95e74349a"
ARCHIVE = "cifar-10-python.tar.gz"
FOLDER = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
META = "batches.meta"
FILES = (*TRAIN_BATCHES, TEST_BATCH, META)  # what a complete cifar-10-batches-py folder holds
CLASS_NAMES = (
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
)
STANDIN_MARKER = "STANDIN"  # file present in a stand-in folder, so outputs can say so


class CIFAR10Error(RuntimeError):
    """CIFAR-10 is missing, corrupt or cannot be fetched; the message says what to do."""


@dataclass(frozen=True)
class CIFAR10:
    train_images: np.ndarray  # (N, 3, 32, 32) uint8
    train_labels: np.ndarray  # (N,) int64
    test_images: np.ndarray
    test_labels: np.ndarray
    class_names: tuple[str, ...]
    standin: bool


def missing_files(folder: str | os.PathLike[str]) -> list[str]:
    folder = Path(folder)
    return [n for n in FILES if not (folder / n).is_file()]


def fetch_cifar10(
    resources: str | os.PathLike[str], url: str = URL, md5: str = MD5, timeout: float = 30.0
) -> Path:
    """Make `resources/cifar-10-batches-py/` exist and be complete; return it (`fetch_folder`)."""
    return fetch_folder(Archive(url, md5, ARCHIVE, FOLDER, FILES), resources, CIFAR10Error,
                        "or set `cifar10.root` in config.yaml to an existing cifar-10-batches-py "
                        "folder; the synthetic experiments run without it: `snakemake "
                        "synthetic_all`", timeout)


@dataclass(frozen=True)
class Archive:
    """A data set shipped as one .tar.gz holding one folder (CIFAR-10's, CIFAR-100's)."""

    url: str
    md5: str
    name: str  # the archive's file name
    folder: str  # the folder inside it
    files: tuple[str, ...]  # what a complete folder holds

    def missing(self, folder: str | os.PathLike[str]) -> list[str]:
        """The files a complete folder holds that `folder` lacks."""
        return [n for n in self.files if not (Path(folder) / n).is_file()]


def fetch_folder(archive: Archive, resources: str | os.PathLike[str],
                 error: type[Exception], instead: str, timeout: float = 30.0) -> Path:
    """Make `resources`/`archive.folder` exist and be complete; return it.

    Downloads the archive if absent, verifies its MD5, extracts into a temporary folder and
    renames it into place, so an interrupted run never leaves a half-extracted data set. Where
    the download fails, `error` says what to download and where, then `instead`.
    """
    resources = Path(resources)
    folder = resources / archive.folder
    if not archive.missing(folder):
        return folder
    path = resources / archive.name
    if not path.exists():
        try:
            download(archive.url, path, timeout=timeout)
        except (urllib.error.URLError, OSError, TimeoutError) as err:
            raise error(
                f"{archive.folder} is not in {resources} and could not be downloaded from "
                f"{archive.url} ({err}). Either download {archive.name} (MD5 {archive.md5}) "
                f"into {resources}/ yourself, {instead}") from err
    verify_checksum(path, f"md5:{archive.md5}")  # an archive put there by hand is checked too
    with atomic_folder(folder) as tmp:
        with tarfile.open(path, "r:gz") as tar:
            tar.extractall(tmp, filter="data")
        if archive.missing(tmp / archive.folder):
            raise error(f"{path} does not contain a complete {archive.folder}/ folder")
        for extracted in (tmp / archive.folder).iterdir():  # the archive's one folder
            os.replace(extracted, tmp / extracted.name)
        (tmp / archive.folder).rmdir()
    return folder


def _read_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with open(path, "rb") as fh:
        batch = pickle.load(fh, encoding="latin1")
    data = np.asarray(batch["data"], dtype=np.uint8)
    labels = np.asarray(batch["labels"], dtype=np.int64)
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(labels) != len(data):
        raise CIFAR10Error(f"{path}: not a CIFAR-10 batch (data {data.shape}, {len(labels)} labels)")
    return data.reshape(-1, 3, 32, 32), labels


def read_class_names(meta_path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The class names of a `batches.meta` file, in label order."""
    with open(meta_path, "rb") as fh:
        return tuple(pickle.load(fh, encoding="latin1")["label_names"])


def load_cifar10(folder: str | os.PathLike[str]) -> CIFAR10:
    """Read all batches of a cifar-10-batches-py folder (raises CIFAR10Error naming missing files)."""
    folder = Path(folder)
    missing = missing_files(folder)
    if missing:
        raise CIFAR10Error(
            f"{folder} is not a complete CIFAR-10 copy: missing {', '.join(missing)}. Point "
            "`cifar10.root` at a cifar-10-batches-py folder, or leave it empty to download"
        )
    parts = [_read_batch(folder / name) for name in TRAIN_BATCHES]
    test_images, test_labels = _read_batch(folder / TEST_BATCH)
    return CIFAR10(
        train_images=np.concatenate([p[0] for p in parts]),
        train_labels=np.concatenate([p[1] for p in parts]),
        test_images=test_images,
        test_labels=test_labels,
        class_names=read_class_names(folder / META),
        standin=(folder / STANDIN_MARKER).exists(),
    )


def normalise(images: np.ndarray) -> np.ndarray:
    """uint8 (N, 3, 32, 32) -> float32 in [-1, 1]: ToTensor then Normalize(0.5, 0.5)."""
    return (images.astype(np.float32) / 255.0 - 0.5) / 0.5


class _Py2Str(str):
    """A str pickled as Python 2 pickled its str (BINSTRING), as the real CIFAR-10 files are.

    Readers then see exactly what they see in the real batches: `str` keys with
    encoding="latin1" (torchvision, us), `bytes` keys with encoding="bytes" (the data set's
    own reading snippet).
    """


class _Py2Pickler(pickle._Pickler):  # the pure-Python pickler accepts per-type savers
    dispatch = pickle._Pickler.dispatch.copy()

    def save_py2_str(self, obj: _Py2Str) -> None:
        data = obj.encode("latin1")
        if len(data) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(data)]) + data)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(data)) + data)
        self.memoize(obj)

    dispatch[_Py2Str] = save_py2_str


def _py2(obj):
    if isinstance(obj, str):
        return _Py2Str(obj)
    if isinstance(obj, dict):
        return {_py2(k): _py2(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_py2(v) for v in obj]
    return obj


def write_py2_pickle(path: Path, obj: dict) -> None:
    """`obj` pickled as the CIFAR files are (protocol 2, Python 2 strings), atomically."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        _Py2Pickler(fh, protocol=2).dump(_py2(obj))


def write_standin(
    folder: str | os.PathLike[str], n_train: int = 2000, n_test: int = 500, seed: int = 0
) -> Path:
    """A small CIFAR-10 look-alike in the real on-disk format, with learnable class structure.

    Each class has a smooth random colour template; images are template + noise, so a small
    network separates the classes in a few hundred steps. A STANDIN marker file labels it.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    coarse = rng.uniform(40, 215, size=(10, 3, 4, 4))
    templates = coarse.repeat(8, axis=2).repeat(8, axis=3)  # (10, 3, 32, 32) blocky patterns

    def images(n: int, chunk: int = 2000) -> tuple[np.ndarray, list[int]]:
        """n images, made `chunk` at a time (a full-size 50,000-image stand-in would need 1.2 GB
        of float64 noise at once)."""
        labels = np.arange(n) % 10
        rng.shuffle(labels)
        out = np.empty((n, 3 * 32 * 32), dtype=np.uint8)
        for start in range(0, n, chunk):
            part = labels[start : start + chunk]
            noisy = templates[part] + rng.normal(0, 45, size=(len(part), 3, 32, 32))
            out[start : start + len(part)] = np.clip(noisy, 0, 255).astype(np.uint8).reshape(
                len(part), -1)
        return out, labels.tolist()

    per_batch = np.array_split(np.arange(n_train), len(TRAIN_BATCHES))
    for i, (name, idx) in enumerate(zip(TRAIN_BATCHES, per_batch, strict=True)):
        data, labels = images(len(idx))
        write_py2_pickle(folder / name, {"batch_label": f"stand-in training batch {i + 1} of 5",
                                      "labels": labels, "data": data,
                                      "filenames": [f"standin_{i}_{j}.png" for j in range(len(idx))]})
    data, labels = images(n_test)
    write_py2_pickle(folder / TEST_BATCH, {"batch_label": "stand-in testing batch 1 of 1",
                                        "labels": labels, "data": data,
                                        "filenames": [f"standin_test_{j}.png" for j in range(n_test)]})
    write_py2_pickle(folder / META, {"label_names": list(CLASS_NAMES),
                                  "num_cases_per_batch": len(per_batch[0]), "num_vis": 3072})
    (folder / STANDIN_MARKER).write_text("synthetic stand-in for CIFAR-10, made by repdist\n")
    return folder


def write_standin_archive(path: str | os.PathLike[str], **kwargs) -> str:
    """The stand-in packed as cifar-10-python.tar.gz; returns its MD5 (for download tests)."""
    return pack_standin(path, FOLDER, write_standin, **kwargs)


def pack_standin(path: str | os.PathLike[str], folder: str, write, **kwargs) -> str:
    """`write(<tmp>/folder, **kwargs)` packed as the .tar.gz `path` (the folder its one entry,
    as the real archives are); returns its MD5."""
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp) / folder, **kwargs)
        with atomic_path(path) as out, tarfile.open(out, "w:gz") as tar:
            tar.add(Path(tmp) / folder, arcname=folder)
    return file_digest(path, "md5")
