"""A model's representations on disk: f (N x M) over evaluation inputs, g (K x M) over labels.

The tables this pipeline writes, once per model so that pairwise steps never rerun a network:
embeddings (index, label, pred, f_0..f_{M-1}), unembeddings (label, g_0..g_{M-1}). And what
`repdist compare` reads, so that it works on our outputs and on anyone's arrays:
- a folder holding our `embeddings.parquet` (for CIFAR folders `embeddings_test.parquet` when
  there is no `embeddings.parquet`) and `unembeddings.parquet`;
- an `.npz` with arrays `f` and `g`;
- a `.pt` / `.pth` dict of tensors `f` and `g` (torch.save), read with weights_only=True; torch
  is imported only for these, so the other formats work without it.
Problems are ModelInputError (a ValueError) naming the file and the numbers involved, raised
before any measure is computed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .host import is_tensor, to_host


def embeddings_frame(f: np.ndarray, labels: np.ndarray, preds: np.ndarray) -> pd.DataFrame:
    # every column at once: inserting M columns one by one fragments the frame (pandas warns
    # from M = 100 on)
    return pd.DataFrame(
        {
            "index": np.arange(len(f), dtype=np.int64),
            "label": np.asarray(labels, dtype=np.int64),
            "pred": np.asarray(preds, dtype=np.int64),
            **{f"f_{j}": f[:, j] for j in range(f.shape[1])},
        }
    )


def unembeddings_frame(g: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"label": np.arange(len(g), dtype=np.int64),
                         **{f"g_{j}": g[:, j] for j in range(g.shape[1])}})


def columns_of(frame: pd.DataFrame, prefix: str) -> np.ndarray:
    """The representation matrix f_0..f_{M-1} (or g_...) of a frame, in column order."""
    cols = sorted((c for c in frame.columns if c.startswith(prefix)), key=lambda c: int(c[2:]))
    if not cols:
        raise ValueError(f"no '{prefix}*' columns in table with columns {list(frame.columns)}")
    return frame[cols].to_numpy(dtype=np.float64)


def load_representations(embeddings: str | Path, unembeddings: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(f, g) as float64 from a model's two parquet tables."""
    return (columns_of(pd.read_parquet(embeddings), "f_"),
            columns_of(pd.read_parquet(unembeddings), "g_"))


EMBEDDINGS = ("embeddings.parquet", "embeddings_test.parquet")  # first one present is used
UNEMBEDDINGS = "unembeddings.parquet"


class ModelInputError(ValueError):
    """A model file or folder that cannot be compared (unreadable, incomplete, mismatched)."""


@dataclass(frozen=True)
class LoadedModel:
    path: Path
    f: np.ndarray
    g: np.ndarray

    @property
    def shape_text(self) -> str:
        (n, m), k = self.f.shape, self.g.shape[0]
        return f"N={n} inputs, K={k} labels, M={m}"


def load_model(path: str | Path) -> LoadedModel:
    """f and g of one model, as float64 arrays, from a folder, .npz or .pt file."""
    path = Path(path)
    if not path.exists():
        raise ModelInputError(f"{path}: no such file or folder")
    try:
        if path.is_dir():
            f, g = _read_folder(path)
        elif path.suffix == ".npz":
            f, g = _read_npz(path)
        elif path.suffix in (".pt", ".pth"):
            f, g = _read_torch(path)
        else:
            raise ModelInputError(
                f"{path}: unknown model format {path.suffix!r}; give a folder with "
                f"{EMBEDDINGS[0]} and {UNEMBEDDINGS}, an .npz or a .pt file"
            )
    except ModelInputError:
        raise
    except Exception as err:  # any reader failure is the file's problem
        raise ModelInputError(f"{path}: cannot read it ({type(err).__name__}: {err})") from err
    return LoadedModel(path, _matrix(path, "f", f), _matrix(path, "g", g))


def _read_folder(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    embeddings = next((folder / name for name in EMBEDDINGS if (folder / name).is_file()), None)
    missing = [name for name, there in ((EMBEDDINGS[0], embeddings),
                                        (UNEMBEDDINGS, (folder / UNEMBEDDINGS).is_file()))
               if not there]
    if missing:
        raise ModelInputError(
            f"{folder}: no {' and no '.join(missing)} (a model folder holds "
            f"{EMBEDDINGS[0]} and {UNEMBEDDINGS})"
        )
    assert embeddings is not None
    return (columns_of(pd.read_parquet(embeddings), "f_"),
            columns_of(pd.read_parquet(folder / UNEMBEDDINGS), "g_"))


def _read_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return _pick(path, {name: data[name] for name in data.files})


def _read_torch(path: Path) -> tuple[Any, Any]:
    try:
        import torch
    except ImportError as err:
        raise ModelInputError(f"{path}: reading .pt files needs torch (pip install torch); "
                              "without it, save f and g in an .npz") from err
    data = torch.load(path, weights_only=True, map_location="cpu")
    if not isinstance(data, Mapping):
        raise ModelInputError(
            f"{path}: expected a dict with tensors 'f' and 'g' (torch.save({{'f': f, 'g': g}})), "
            f"got {type(data).__name__}"
        )
    f, g = _pick(path, data)
    return _from_tensor(f), _from_tensor(g)


def _from_tensor(value: Any) -> Any:
    """A tensor of any dtype (bfloat16 too) as float64 on the host."""
    return to_host(value, np.float64) if is_tensor(value) else value


def _pick(path: Path, arrays: Mapping[str, Any]) -> tuple[Any, Any]:
    missing = [name for name in ("f", "g") if name not in arrays]
    if missing:
        found = ", ".join(sorted(map(str, arrays))) or "nothing"
        raise ModelInputError(f"{path}: no array {' or '.join(map(repr, missing))} "
                              f"(found: {found}); it needs f (N x M) and g (K x M)")
    return arrays["f"], arrays["g"]


def _matrix(path: Path, name: str, value: Any) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ModelInputError(f"{path}: {name} is not a numeric array ({err})") from err
    rows = "N x M" if name == "f" else "K x M"
    if arr.ndim != 2 or 0 in arr.shape:
        raise ModelInputError(f"{path}: {name} must be a non-empty 2-D array ({rows}), "
                              f"got shape {arr.shape}")
    return arr


def check_models(models: Sequence[LoadedModel]) -> None:
    """Every model well-formed and comparable with every other: the same N inputs, the same K
    labels, K >= M + 2 (m_SVD), finite values. Widths M may differ (then a pair's m_SVD and
    d_fg are NaN, with the reason). Raises ModelInputError otherwise."""
    if len(models) < 2:
        raise ModelInputError(f"need at least two models to compare, got {len(models)}")
    for model in models:
        _check_one(model)
    first = models[0]
    for model in models[1:]:
        if model.f.shape[0] != first.f.shape[0]:
            raise ModelInputError(
                f"{model.path}: f is {model.f.shape[0]} x {model.f.shape[1]} (N x M), but "
                f"{first.path} has f {first.f.shape[0]} x {first.f.shape[1]}: every model must "
                "embed the same N inputs, in the same order (widths M may differ)"
            )
        if model.g.shape[0] != first.g.shape[0]:
            raise ModelInputError(
                f"{model.path}: g has K={model.g.shape[0]} labels, but {first.path} has "
                f"K={first.g.shape[0]}: every model must have the same labels"
            )


def _check_one(model: LoadedModel) -> None:
    (n, m), (k, m_g) = model.f.shape, model.g.shape
    if m != m_g:
        raise ModelInputError(
            f"{model.path}: f has M={m} columns but g has {m_g}: f is N x M, g is K x M"
        )
    if k < m + 2:
        raise ModelInputError(
            f"{model.path}: K={k} labels is below M + 2 = {m + 2}: m_SVD needs K - 2 >= M "
            "labels besides the pivot and the left-out label"
        )
    if n < 2:
        raise ModelInputError(f"{model.path}: need at least 2 inputs, got N={n}")
    for name, arr in (("f", model.f), ("g", model.g)):
        bad = ~np.isfinite(arr)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise ModelInputError(
                f"{model.path}: {name} has {int(bad.sum())} NaN or infinite values "
                f"(the first at row {row}, column {col})"
            )


def model_names(paths: Sequence[Path]) -> list[str]:
    """A short, unique name per model: the file's stem or the folder's name, every name
    lengthened by the same number of parent folders while two collide (seed0/model.npz vs
    seed1/model.npz; w16/seed0 and w32/seed2, never w16/seed0 beside a bare seed2), else
    numbered."""
    parts = [Path(p).resolve().parts for p in paths]
    stems = [Path(p).stem if Path(p).is_file() else Path(p).resolve().name for p in paths]
    names = list(stems)
    depth = 1
    distinct = len(set(parts))  # the same path given twice is numbered below, not lengthened
    while len(set(names)) < distinct and depth < max(map(len, parts)):
        names = ["/".join([*part[max(0, len(part) - 1 - depth):-1], stem])
                 for part, stem in zip(parts, stems, strict=True)]
        depth += 1
    if len(set(names)) < len(names):  # the same path given twice
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            seen[name] = seen.get(name, 0) + 1
            names[i] = name if seen[name] == 1 else f"{name}#{seen[name]}"
    return names
