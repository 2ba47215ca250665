"""CIFAR-10 in its python-pickle format (`cifar-10-batches-py/`): fetch, load, stand-in.

The batches are pickled dicts: a uint8 `data` array (N x 3072, RGB planes) and `labels`. Pixels
are scaled to [-1, 1], no augmentation, as the paper. The stand-in, a small learnable data set in
this format, lets the CIFAR branch run offline in tests and `make quick`."""

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
CLASS_NAMES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
               "truck")
STANDIN_MARKER = "STANDIN"  # file present in a stand-in folder, so outputs can say so


class CIFAR10Error(RuntimeError):
    """CIFAR-10 is missing, corrupt or cannot be fetched; the message says what to do."""


@dataclass(frozen=True)
class CIFAR10:
    """CIFAR-10, or CIFAR-100 with its fine labels."""

    train_images: np.ndarray  # (N, 3, 32, 32) uint8
    train_labels: np.ndarray  # (N,) int64
    test_images: np.ndarray
    test_labels: np.ndarray
    class_names: tuple[str, ...]
    standin: bool


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


def missing_files(folder: str | os.PathLike[str]) -> list[str]:
    return Archive(URL, MD5, ARCHIVE, FOLDER, FILES).missing(folder)


def fetch_cifar10(resources: str | os.PathLike[str], url: str = URL, md5: str = MD5,
                  timeout: float = 30.0) -> Path:
    """Make `resources/cifar-10-batches-py/` exist and be complete; return it (`fetch_folder`)."""
    return fetch_folder(Archive(url, md5, ARCHIVE, FOLDER, FILES), resources, CIFAR10Error,
                        "or set `cifar10.root` in config.yaml to an existing cifar-10-batches-py "
                        "folder; the synthetic experiments run without it: `snakemake "
                        "synthetic_all`", timeout)


def fetch_folder(archive: Archive, resources: str | os.PathLike[str],
                 error: type[Exception], instead: str, timeout: float = 30.0) -> Path:
    """Make `resources`/`archive.folder` exist and be complete (downloaded, MD5 checked, then
    extracted atomically); return it. A failed download is `error`: what to fetch, or `instead`."""
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
        raise CIFAR10Error(f"{path}: not a CIFAR-10 batch (data {data.shape}, "
                           f"{len(labels)} labels)")
    return data.reshape(-1, 3, 32, 32), labels


def read_class_names(meta_path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The class names of a `batches.meta` file, in label order."""
    with open(meta_path, "rb") as fh:
        return tuple(pickle.load(fh, encoding="latin1")["label_names"])


def load_cifar10(folder: str | os.PathLike[str]) -> CIFAR10:
    """Read a cifar-10-batches-py folder (CIFAR10Error naming the files missing)."""
    folder = Path(folder)
    missing = missing_files(folder)
    if missing:
        raise CIFAR10Error(
            f"{folder} is not a complete CIFAR-10 copy: missing {', '.join(missing)}. Point "
            "`cifar10.root` at a cifar-10-batches-py folder, or leave it empty to download")
    parts = [_read_batch(folder / name) for name in TRAIN_BATCHES]
    return CIFAR10(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                   *_read_batch(folder / TEST_BATCH), read_class_names(folder / META),
                   standin=(folder / STANDIN_MARKER).exists())


def normalise(images: np.ndarray) -> np.ndarray:
    """uint8 (N, 3, 32, 32) -> float32 in [-1, 1]: ToTensor then Normalize(0.5, 0.5)."""
    return (images.astype(np.float32) / 255.0 - 0.5) / 0.5


class _Py2Str(str):
    """A str pickled as Python 2's (BINSTRING), as in the real files: readers see `str` keys with
    encoding="latin1" (torchvision, us), `bytes` with encoding="bytes" (the data set's snippet)."""


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


def write_standin(folder: str | os.PathLike[str], n_train: int = 2000, n_test: int = 500,
                  seed: int = 0) -> Path:
    """A small CIFAR-10 look-alike in the real on-disk format: each class a blocky colour
    template, images template + noise (learnt in a few hundred steps). A STANDIN file marks it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    templates = rng.uniform(40, 215, size=(10, 3, 4, 4)).repeat(8, axis=2).repeat(8, axis=3)
    per_batch = np.array_split(np.arange(n_train), len(TRAIN_BATCHES))
    for i, (name, idx) in enumerate(zip(TRAIN_BATCHES, per_batch, strict=True)):
        data, labels = standin_images(rng, templates, len(idx), 45)
        names = [f"standin_{i}_{j}.png" for j in range(len(idx))]
        write_py2_pickle(folder / name, {"batch_label": f"stand-in training batch {i + 1} of 5",
                                         "labels": labels.tolist(), "data": data,
                                         "filenames": names})
    data, labels = standin_images(rng, templates, n_test, 45)
    names = [f"standin_test_{j}.png" for j in range(n_test)]
    write_py2_pickle(folder / TEST_BATCH, {"batch_label": "stand-in testing batch 1 of 1",
                                           "labels": labels.tolist(), "data": data,
                                           "filenames": names})
    write_py2_pickle(folder / META, {"label_names": list(CLASS_NAMES),
                                  "num_cases_per_batch": len(per_batch[0]), "num_vis": 3072})
    (folder / STANDIN_MARKER).write_text("synthetic stand-in for CIFAR-10, made by repdist\n")
    return folder


def standin_images(rng: np.random.Generator, templates: np.ndarray, n: int, noise: float,
                   chunk: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """n images (uint8 rows) of shuffled labels, template + N(0, noise^2), and their labels,
    `chunk` at a time (50,000 images would need 1.2 GB of float64 noise at once)."""
    labels = np.arange(n) % len(templates)
    rng.shuffle(labels)
    out = np.empty((n, 3 * 32 * 32), dtype=np.uint8)
    for start in range(0, n, chunk):
        part = labels[start : start + chunk]
        noisy = templates[part] + rng.normal(0, noise, size=(len(part), 3, 32, 32))
        out[start : start + len(part)] = np.clip(noisy, 0, 255).astype(np.uint8).reshape(
            len(part), -1)
    return out, labels


def write_standin_archive(path: str | os.PathLike[str], **kwargs) -> str:
    """The stand-in packed as cifar-10-python.tar.gz; returns its MD5 (for download tests)."""
    return pack_standin(path, FOLDER, write_standin, **kwargs)


def pack_standin(path: str | os.PathLike[str], folder: str, write, **kwargs) -> str:
    """`write(<tmp>/folder, **kwargs)` packed as the .tar.gz `path`; returns its MD5."""
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp) / folder, **kwargs)
        with atomic_path(path) as out, tarfile.open(out, "w:gz") as tar:
            tar.add(Path(tmp) / folder, arcname=folder)
    return file_digest(path, "md5")
