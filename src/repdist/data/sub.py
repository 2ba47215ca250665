"""SUB (Bader et al., ICCV 2025: CUB birds with one attribute substituted, 33 birds, 33
attributes) as the follow-up reads it (`dsets/sub.py`, `dsets/preprocess_sub.py`): the DINOv2-base
CLS token of every image of the hub dataset `Jessica-bader/SUB`, in a torch file. Offline
stand-ins of the images and of the features file serve the quick DAG and the tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..io.hub import path_shaped
from .image_captions import cell_bytes, hub_dataset_folder, open_image

SPLIT_SEED = 42  # their random_state
# The features file (`data/SUB_dinov2_embeddings.pt`): `embeddings` (N, 768) float32, `labels` the
# birds, `attributes` the substituted attribute, `model`, `image_size`, `dataset`, `split`.
KEYS = ("embeddings", "labels", "attributes")
SUB_SPLIT = "test"  # the split it reads (SUB's only one)
COLUMNS = ("image", "bird_label", "attr_label")
IMAGE_SIZE = 512  # their preprocessing's resize, before the encoder's processor


class SubFeaturesError(ValueError):
    """A features file that is not SUB's in their format."""


class SubImagesError(ValueError):
    """SUB's images cannot be read: the message names the file, row or download."""


@dataclass(frozen=True)
class SubImages:
    """SUB's image files (parquet) and how many rows they hold; `source` says where from."""

    files: tuple[Path, ...]
    rows: int
    source: str


def sub_images(source: str, revision: str | None = None) -> SubImages:
    """SUB's test split from a folder of its parquet files, or the hub dataset `source`."""
    import pyarrow.parquet as pq

    folder = Path(source).expanduser()
    if not (folder.is_dir() or path_shaped(source)):
        folder = hub_dataset_folder(source, revision, "logit_distance.sub.images",
                                    SubImagesError)
    if not folder.is_dir():
        raise SubImagesError(f"{folder}: no such folder of SUB's parquet files")
    every = sorted(folder.rglob("*.parquet"))
    files = tuple(f for f in every if f.name.startswith(f"{SUB_SPLIT}-")) or tuple(every)
    if not files:
        raise SubImagesError(f"{folder}: no parquet files (SUB's hub layout: "
                             f"data/{SUB_SPLIT}-*.parquet with columns {', '.join(COLUMNS)})")
    for path in files:
        missing = set(COLUMNS) - set(pq.read_schema(path).names)
        if missing:
            raise SubImagesError(f"{path}: no column {', '.join(sorted(missing))} (SUB's "
                                 f"files have {', '.join(COLUMNS)})")
    rows = sum(pq.ParquetFile(path).metadata.num_rows for path in files)
    at = f"@{revision or 'main'}" if folder != Path(source).expanduser() else ""
    return SubImages(files, rows, f"{source}{at}")


def sub_batches(images: SubImages, batch_size: int, size: int | None = IMAGE_SIZE
                ) -> Iterator[tuple[list[Any], np.ndarray, np.ndarray]]:
    """(RGB images, birds, attributes) `batch_size` rows at a time (never ~40,000 images at once),
    resized to `size` x `size` (bilinear; None: as stored) as their preprocessing does."""
    import pyarrow.parquet as pq
    from PIL import Image

    for path in images.files:
        row = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size, columns=list(COLUMNS)):
            cells = batch.to_pydict()
            pictures = []
            for image in cells["image"]:
                where = f"{path} row {row}"
                picture = open_image(cell_bytes(image, where, SubImagesError), where,
                                     SubImagesError)
                pictures.append(picture if size is None
                                else picture.resize((size, size), Image.BILINEAR))
                row += 1
            yield (pictures, np.asarray(cells["bird_label"], dtype=np.int64),
                   np.asarray(cells["attr_label"], dtype=np.int64))


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
    """Their split: 30% test, stratified by bird, then the rest 80/20 into train and val."""
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
    """A stand-in features file (KEYS): random bird centres plus attribute directions plus noise."""
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


def write_sub_image_standin(folder: str | Path, per_bird: int, seed: int, birds: int = 33,
                            attributes: int = 33, size: int = 32) -> None:
    """A stand-in of SUB's test split as the hub holds it (PNG bytes, bird_label, attr_label):
    each bird one shape and colour, each image's random attribute its place and background."""
    import io as bytes_io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..io import atomic_folder
    from .image_captions import COLOURS, PLACES, SHAPES, draw_shape

    rng = np.random.default_rng(seed)
    colours, places = list(COLOURS.values()), list(PLACES.values())
    labels = np.repeat(np.arange(birds), per_bird)
    attrs = rng.integers(attributes, size=len(labels))
    cells = []
    for bird, attr in zip(labels, attrs, strict=True):
        jitter = rng.uniform(-0.04, 0.04, size=2)
        place = places[attr % len(places)]
        img = draw_shape(SHAPES[bird % len(SHAPES)], colours[bird // len(SHAPES) % len(colours)],
                         (place[0] + jitter[0], place[1] + jitter[1]), 0.12 + 0.02 * (bird % 3),
                         size, 60 + int(150 * attr / max(attributes - 1, 1)))
        buffer = bytes_io.BytesIO()
        img.save(buffer, format="PNG")
        cells.append({"bytes": buffer.getvalue(), "path": None})
    table = pa.table({"image": cells, "bird_label": labels, "attr_label": attrs})
    with atomic_folder(folder) as tmp:
        (tmp / "data").mkdir()
        pq.write_table(table, tmp / "data" / f"{SUB_SPLIT}-00000-of-00001.parquet")
