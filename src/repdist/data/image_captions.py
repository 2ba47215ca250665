"""Image-caption pairs, the inputs of the Platonic Representation Hypothesis' study (Huh et al.
2024: 1,024 Wikipedia images and captions, the hub dataset `minhuh/prh` at revision `wit_1024`),
and an offline stand-in. Every image is opened while reading, so a bad one stops a job before it
writes anything, naming the file."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..io import atomic_folder
from ..io.hub import hub_offline, path_shaped

METADATA = "metadata.jsonl"


class ImageCaptionError(ValueError):
    """Pairs that cannot be read: the message names the file or key and what is wrong."""


@dataclass(frozen=True)
class ImageCaptions:
    """N images (PIL, RGB) and their N captions, in order; `source` says where from."""

    images: Sequence[Any]
    captions: Sequence[str]
    source: str

    def __len__(self) -> int:
        return len(self.captions)


def _caption(text: Any, caption: int, where: str) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, Sequence) and not isinstance(text, bytes) and len(text) > caption:
        if isinstance(text[caption], str):
            return text[caption]
    raise ImageCaptionError(f"{where}: 'text' must be a caption or a list of captions holding "
                            f"caption {caption}, got {text!r:.80}")


def open_image(data: bytes | Path, where: str,
               error: type[ValueError] = ImageCaptionError) -> Any:
    """An image from its bytes or file, opened now as RGB (PIL); `error` naming `where` if not."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data) if isinstance(data, bytes) else data) as img:
            return img.convert("RGB")
    except (OSError, UnidentifiedImageError, ValueError) as err:
        raise error(f"{where}: the image does not open ({type(err).__name__}: {err})") from err


def cell_bytes(image: Any, where: str, error: type[ValueError] = ImageCaptionError) -> bytes:
    """The bytes of a hub parquet file's `image` cell ({bytes, path}); `error` where none."""
    data = image.get("bytes") if isinstance(image, dict) else None
    if not data:
        raise error(f"{where}: the image holds no bytes")
    return data


def _from_metadata(folder: Path, caption: int) -> ImageCaptions:
    images, captions = [], []
    lines = (folder / METADATA).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{folder / METADATA} line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ImageCaptionError(f"{where}: not JSON ({err})") from err
        if not isinstance(row, dict) or "file_name" not in row or "text" not in row:
            raise ImageCaptionError(f"{where}: each line needs 'file_name' and 'text' (the "
                                    "caption)")
        path = folder / str(row["file_name"])
        if not path.is_file():
            raise ImageCaptionError(f"{where}: no image {path}")
        captions.append(_caption(row["text"], caption, where))
        images.append(open_image(path, str(path)))
    return ImageCaptions(images, captions, str(folder))


def _from_parquet(files: Sequence[Path], caption: int, source: str) -> ImageCaptions:
    import pyarrow.parquet as pq

    images, captions = [], []
    for path in files:
        table = pq.read_table(path)
        missing = {"image", "text"} - set(table.column_names)
        if missing:
            raise ImageCaptionError(f"{path}: no column {', '.join(sorted(missing))} (a pairs "
                                    "file has 'image' and 'text')")
        for row, (image, text) in enumerate(zip(table.column("image").to_pylist(),
                                                table.column("text").to_pylist(), strict=True)):
            where = f"{path} row {row}"
            data = cell_bytes(image, where)
            captions.append(_caption(text, caption, where))
            images.append(open_image(data, where))
    return ImageCaptions(images, captions, source)


def read_folder(folder: str | Path, caption: int = 0) -> ImageCaptions:
    """The pairs of a folder: images beside a `metadata.jsonl` of `file_name` and `text` (a caption
    or a list: `caption` picks one), or parquet files with columns `image` and `text`."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise ImageCaptionError(f"{folder}: no such folder of image-caption pairs")
    if (folder / METADATA).is_file():
        pairs = _from_metadata(folder, caption)
    else:
        files = sorted(folder.rglob("*.parquet"))
        if not files:
            raise ImageCaptionError(f"{folder}: no captions: neither {METADATA} (with images) "
                                    "nor parquet files with 'image' and 'text' columns")
        pairs = _from_parquet(files, caption, str(folder))
    if len(pairs) < 2:
        raise ImageCaptionError(f"{folder}: {len(pairs)} pairs; the study needs at least 2")
    return pairs


def hub_dataset_folder(repo: str, revision: str | None = None,
                       instead: str = "prh.pairs.folder",
                       error: type[ValueError] = ImageCaptionError) -> Path:
    """A hub dataset's files in the local Hugging Face cache (downloaded unless HF_HUB_OFFLINE);
    else `error` saying how to fetch it, or which config key (`instead`) takes a folder."""
    try:
        from huggingface_hub import snapshot_download
        return Path(snapshot_download(repo, repo_type="dataset", revision=revision,
                                      local_files_only=hub_offline()))
    except Exception as err:  # not cached while offline, unreachable, no such repository
        at = f" --revision {revision}" if revision else ""
        raise error(
            f"the dataset {repo!r}{f' at revision {revision!r}' if revision else ''} is not in "
            f"the Hugging Face cache and could not be downloaded ({type(err).__name__}). Where "
            f"the hub is reachable: hf download {repo} --repo-type dataset{at} (then set HF_HOME "
            f"here to that cache), or give {instead} a folder of the same files") from err


def read_pairs(dataset: str | Path, revision: str | None = None, caption: int = 0
               ) -> ImageCaptions:
    """The pairs of a folder, or of a hub dataset (by id, at `revision`)."""
    name = str(dataset)
    if Path(name).expanduser().is_dir() or path_shaped(name):
        return read_folder(name, caption)
    pairs = read_folder(hub_dataset_folder(name, revision), caption)
    return ImageCaptions(pairs.images, pairs.captions, f"{name}@{revision or 'main'}")


SHAPES = ("circle", "square", "triangle", "cross")
COLOURS = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 80, 220),
           "yellow": (230, 210, 40), "purple": (150, 60, 180)}
PLACES = {"top left": (0.28, 0.28), "top right": (0.72, 0.28), "bottom left": (0.28, 0.72),
          "bottom right": (0.72, 0.72), "centre": (0.5, 0.5)}
SIZES = {"small": 0.14, "large": 0.24}


def draw_shape(shape: str, colour: tuple[int, int, int], centre: tuple[float, float],
               radius: float, size: int, background: int) -> Any:
    """One shape drawn on a square grey image of `size` pixels (a stand-in's picture)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (size, size), (background,) * 3)
    draw = ImageDraw.Draw(img)
    cx, cy, r = centre[0] * size, centre[1] * size, radius * size
    box = (cx - r, cy - r, cx + r, cy + r)
    if shape == "circle":
        draw.ellipse(box, fill=colour)
    elif shape == "square":
        draw.rectangle(box, fill=colour)
    elif shape == "triangle":
        draw.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)
    else:
        w = max(1, r / 2.5)
        draw.rectangle((cx - r, cy - w, cx + r, cy + w), fill=colour)
        draw.rectangle((cx - w, cy - r, cx + w, cy + r), fill=colour)
    return img


def standin_pairs(n: int, seed: int = 0, size: int = 32) -> tuple[list[Any], list[str]]:
    """n random shapes on grey and captions that say them, e.g. "picture 7: a small red circle at
    the top left", numbered: equal captions would tie in every neighbour search."""
    rng = np.random.default_rng(seed)
    images, captions = [], []
    for i in range(n):
        shape, colour = rng.choice(SHAPES), str(rng.choice(list(COLOURS)))
        place, big = str(rng.choice(list(PLACES))), str(rng.choice(list(SIZES)))
        jitter = rng.uniform(-0.05, 0.05, size=2)
        centre = (PLACES[place][0] + jitter[0], PLACES[place][1] + jitter[1])
        images.append(draw_shape(str(shape), COLOURS[colour], centre, SIZES[big], size,
                            int(rng.integers(90, 200))))
        where = "in the centre" if place == "centre" else f"at the {place}"
        captions.append(f"picture {i}: a {big} {colour} {shape} {where}")
    return images, captions


def write_standin_pairs(folder: str | Path, n: int, seed: int = 0, size: int = 32) -> None:
    """standin_pairs as an image folder (PNGs and metadata.jsonl), which appears whole."""
    images, captions = standin_pairs(n, seed, size)
    with atomic_folder(folder) as tmp:
        lines = []
        for i, (img, text) in enumerate(zip(images, captions, strict=True)):
            name = f"images/{i:05d}.png"
            (tmp / "images").mkdir(exist_ok=True)
            img.save(tmp / name)
            lines.append(json.dumps({"file_name": name, "text": [text]}))
        (tmp / METADATA).write_text("\n".join(lines) + "\n", encoding="utf-8")
