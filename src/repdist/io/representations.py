"""A model's representations on disk: f (N x M) over evaluation inputs, g (K x M) over labels,
in our tables or anyone's .npz or .pt. Rows are matched by identity (`index`, `label`), never by
position. Duplicates, gaps and foreign columns are ModelInputError naming the first one."""

from __future__ import annotations

import functools
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .host import is_tensor, to_host
from .validation import (InputError, check_finite, check_magnitude, check_widths,
                         representation_matrix)


def embeddings_frame(f: np.ndarray, labels: np.ndarray, preds: np.ndarray) -> pd.DataFrame:
    # every column at once: inserting M columns one by one fragments the frame (pandas warns
    # from M = 100 on)
    return pd.DataFrame({"index": np.arange(len(f), dtype=np.int64),
                         "label": np.asarray(labels, dtype=np.int64),
                         "pred": np.asarray(preds, dtype=np.int64),
                         **{f"f_{j}": f[:, j] for j in range(f.shape[1])}})


def unembeddings_frame(g: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"label": np.arange(len(g), dtype=np.int64),
                         **{f"g_{j}": g[:, j] for j in range(g.shape[1])}})


def columns_of(frame: pd.DataFrame, prefix: str) -> np.ndarray:
    """The matrix f_0..f_{M-1} (or g_...) of a frame, its rows as they are."""
    cols = sorted((c for c in frame.columns if _matrix_column(str(c), prefix) is not None),
                  key=lambda c: int(str(c)[len(prefix):]))
    if not cols:
        raise ValueError(f"no '{prefix}*' columns in table with columns {list(frame.columns)}")
    return frame[cols].to_numpy(dtype=np.float64)


EMBEDDINGS = ("embeddings.parquet", "embeddings_test.parquet")  # first one present is used
UNEMBEDDINGS = "unembeddings.parquet"


class ModelInputError(InputError):
    """A model file or folder that cannot be compared (unreadable, incomplete, mismatched)."""


@dataclass(frozen=True)
class Table:
    """A kind of representation table: its identity column, matrix prefix and other columns."""

    name: str
    identity: str
    prefix: str
    others: tuple[str, ...]


EMBEDDINGS_TABLE = Table("embeddings", "index", "f_", ("label", "pred"))
UNEMBEDDINGS_TABLE = Table("unembeddings", "label", "g_", ())


def _matrix_column(name: str, prefix: str) -> int | None:
    """j for a column named `prefix`j (j written without leading zeros), else None."""
    digits = name[len(prefix):]
    if not name.startswith(prefix) or not (digits.isascii() and digits.isdigit()):
        return None
    return int(digits) if digits == str(int(digits)) else None


def _check_columns(frame: pd.DataFrame, table: Table, source: object) -> None:
    """Only the table's own columns, and its matrix columns numbered 0..M-1 once each."""
    numbers = []
    for column in map(str, frame.columns):
        if column == table.identity or column in table.others:
            continue
        j = _matrix_column(column, table.prefix)
        if j is None:
            own = ", ".join((table.identity, *table.others,
                             f"{table.prefix}0..{table.prefix}<M-1>"))
            raise ModelInputError(f"{source}: column {column!r} does not belong in an "
                                  f"{table.name} table (its columns: {own})")
        numbers.append(j)
    if not numbers:
        raise ModelInputError(f"{source}: no '{table.prefix}*' columns (columns: "
                              f"{list(map(str, frame.columns))})")
    if len(set(map(str, frame.columns))) < len(frame.columns):
        raise ModelInputError(f"{source}: a column name appears twice")
    missing = sorted(set(range(len(numbers))) - set(numbers))
    if missing:
        raise ModelInputError(f"{source}: {len(numbers)} columns {table.prefix}* should be "
                              f"{table.prefix}0..{table.prefix}{len(numbers) - 1}, but "
                              f"{table.prefix}{missing[0]} is missing")


def identities(values: Any, what: str, source: object, gaps: bool = False) -> np.ndarray:
    """Row identities (`what`) as int64, each once, none negative; unless `gaps`, exactly 0..n-1."""
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ModelInputError(f"{source}: {what} must be a column of integers, got "
                              f"{arr.dtype} of shape {arr.shape}")
    ids = arr.astype(np.int64)
    seen = pd.Series(ids)
    twice = seen[seen.duplicated()]
    if len(twice):
        first = int(twice.iloc[0])
        raise ModelInputError(f"{source}: {what} {first} appears {int((ids == first).sum())} "
                              "times; each row's identity must appear once")
    if len(ids) and ids.min() < 0:
        raise ModelInputError(f"{source}: {what} {int(ids.min())} is negative")
    if not gaps and len(ids) and ids.max() >= len(ids):
        absent = np.setdiff1d(np.arange(len(ids)), ids)
        raise ModelInputError(
            f"{source}: {what} should run 0..{len(ids) - 1}, but {int(absent[0])} is missing "
            f"({len(absent)} missing; the largest present is {int(ids.max())}); to compare "
            "only the rows every model has, match them with --match intersect")
    return ids


def ordered(frame: pd.DataFrame, table: Table, source: object,
            gaps: bool = False) -> pd.DataFrame:
    """A representation table checked, its rows in the order of its identity column (if any)."""
    _check_columns(frame, table, source)
    if table.identity not in frame.columns:
        return frame.reset_index(drop=True)
    ids = identities(frame[table.identity].to_numpy(), table.identity, source, gaps)
    return frame.iloc[np.argsort(ids, kind="stable")].reset_index(drop=True)


def read_embeddings(path: str | Path, gaps: bool = False) -> pd.DataFrame:
    """An embeddings table (index, label, pred, f_0..), checked, its rows ordered by index."""
    return ordered(pd.read_parquet(path), EMBEDDINGS_TABLE, path, gaps)


def read_unembeddings(path: str | Path, gaps: bool = False) -> pd.DataFrame:
    """An unembeddings table (label, g_0..), checked, its rows ordered by label."""
    return ordered(pd.read_parquet(path), UNEMBEDDINGS_TABLE, path, gaps)


def load_representations(embeddings: str | Path,
                         unembeddings: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(f, g) as float64 from a model's two parquet tables, rows ordered by index and label."""
    return (columns_of(read_embeddings(embeddings), "f_"),
            columns_of(read_unembeddings(unembeddings), "g_"))


@dataclass(frozen=True)
class LoadedModel:
    """One model: f, g and each row's identity (`index`, `label`, else its position), ascending."""

    path: Path
    f: np.ndarray
    g: np.ndarray
    inputs: np.ndarray
    labels: np.ndarray

    @property
    def shape_text(self) -> str:
        (n, m), k = self.f.shape, self.g.shape[0]
        return f"N={n} inputs, K={k} labels, M={m}"


@dataclass(frozen=True)
class _Read:
    f: Any
    g: Any
    inputs: Any = None
    labels: Any = None


def load_model(path: str | Path, gaps: bool = False) -> LoadedModel:
    """f and g of one model from a folder, .npz or .pt file, rows ordered by identity."""
    path = Path(path)
    if not path.exists():
        raise ModelInputError(f"{path}: no such file or folder")
    try:
        if path.is_dir():
            read = _read_folder(path, gaps)
        elif path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                read = _pick(path, {name: data[name] for name in data.files})
        elif path.suffix in (".pt", ".pth"):
            read = _read_torch(path)
        else:
            raise ModelInputError(f"{path}: unknown model format {path.suffix!r}; give a folder "
                                  f"with {EMBEDDINGS[0]} and {UNEMBEDDINGS}, an .npz or a .pt file")
        return _model(path, read, gaps)
    except InputError:
        raise
    except Exception as err:  # any reader failure is the file's problem
        raise ModelInputError(f"{path}: cannot read it ({type(err).__name__}: {err})") from err


def _model(path: Path, read: _Read, gaps: bool) -> LoadedModel:
    """The model with its rows in the order of their identities (given, or positions)."""
    f, g = _matrix(path, "f", read.f), _matrix(path, "g", read.g)
    rows = []
    for name, matrix, given in (("index", f, read.inputs), (NPZ_LABELS, g, read.labels)):
        if given is None:
            rows.append(np.arange(len(matrix), dtype=np.int64))
            continue
        ids = identities(given, name, path, gaps)
        if len(ids) != len(matrix):
            raise ModelInputError(f"{path}: {name} holds {len(ids)} identities for "
                                  f"{len(matrix)} rows")
        rows.append(ids)
    order_f, order_g = (np.argsort(ids, kind="stable") for ids in rows)
    return LoadedModel(path, f[order_f], g[order_g], rows[0][order_f], rows[1][order_g])


def _read_folder(folder: Path, gaps: bool) -> _Read:
    embeddings = next((folder / name for name in EMBEDDINGS if (folder / name).is_file()), None)
    missing = [name for name, there in ((EMBEDDINGS[0], embeddings),
                                        (UNEMBEDDINGS, (folder / UNEMBEDDINGS).is_file()))
               if not there]
    if missing:
        raise ModelInputError(f"{folder}: no {' and no '.join(missing)} (a model folder holds "
                              f"{EMBEDDINGS[0]} and {UNEMBEDDINGS})")
    assert embeddings is not None
    emb = read_embeddings(embeddings, gaps)
    unemb = read_unembeddings(folder / UNEMBEDDINGS, gaps)
    return _Read(columns_of(emb, "f_"), columns_of(unemb, "g_"),
                 emb["index"].to_numpy() if "index" in emb else None,
                 unemb["label"].to_numpy() if "label" in unemb else None)


# The optional arrays of an .npz or .pt that name f's rows (inputs) and g's rows (labels).
NPZ_INDEX, NPZ_LABELS = "index", "g_label"


def _read_torch(path: Path) -> _Read:
    try:
        import torch
    except ImportError as err:
        raise ModelInputError(f"{path}: reading .pt files needs torch (pip install torch); "
                              "without it, save f and g in an .npz") from err
    try:
        data = torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as err:
        raise ModelInputError(
            f"{path}: it holds objects other than tensors (numpy arrays, say), which are not "
            "read from .pt files; save tensors, torch.save({'f': torch.as_tensor(f), 'g': "
            "torch.as_tensor(g)}), or the arrays in an .npz") from err
    if not isinstance(data, Mapping):
        raise ModelInputError(f"{path}: expected a dict with tensors 'f' and 'g' (torch.save("
                              f"{{'f': f, 'g': g}})), got {type(data).__name__}")
    read = _pick(path, data)
    ids = [to_host(v) if is_tensor(v) else v for v in (read.inputs, read.labels)]
    return _Read(read.f, read.g, *ids)


def _pick(path: Path, arrays: Mapping[str, Any]) -> _Read:
    missing = [name for name in ("f", "g") if name not in arrays]
    if missing:
        found = ", ".join(sorted(map(str, arrays))) or "nothing"
        raise ModelInputError(f"{path}: no array {' or '.join(map(repr, missing))} "
                              f"(found: {found}); it needs f (N x M) and g (K x M)")
    return _Read(arrays["f"], arrays["g"], arrays.get(NPZ_INDEX), arrays.get(NPZ_LABELS))


def _matrix(path: Path, name: str, value: Any) -> np.ndarray:
    rows = "N x M" if name == "f" else "K x M"
    try:
        return representation_matrix(value, f"{path}: {name}", rows)
    except InputError as err:
        raise ModelInputError(str(err)) from err
    except (TypeError, ValueError) as err:
        raise ModelInputError(f"{path}: {name} is not a numeric array ({err})") from err


def check_models(models: Sequence[LoadedModel]) -> None:
    """ModelInputError unless every model is well-formed and has the same N inputs and K labels,
    K >= M + 2 (m_SVD), finite values float64 can square. Widths M may differ (m_SVD, d_fg NaN)."""
    if len(models) < 2:
        raise ModelInputError(f"need at least two models to compare, got {len(models)}")
    for model in models:
        (n, m), k = model.f.shape, model.g.shape[0]
        check_widths(model.f, model.g, str(model.path))
        if k < m + 2:
            raise ModelInputError(f"{model.path}: K={k} labels is below M + 2 = {m + 2}: m_SVD "
                                  "needs K - 2 >= M labels besides the pivot and the left-out "
                                  "label")
        if n < 2:
            raise ModelInputError(f"{model.path}: need at least 2 inputs, got N={n}")
        for name, arr in (("f", model.f), ("g", model.g)):
            check_finite(arr, f"{model.path}: {name}")
        check_magnitude(model.f, model.g, str(model.path))
    first = models[0]
    for model in models[1:]:
        if model.f.shape[0] != first.f.shape[0] or not np.array_equal(model.inputs,
                                                                       first.inputs):
            raise ModelInputError(
                f"{model.path}: f is {model.f.shape[0]} x {model.f.shape[1]} (N x M), but "
                f"{first.path} has f {first.f.shape[0]} x {first.f.shape[1]}"
                f"{_first_difference(model.inputs, first.inputs, 'index')}: every model must "
                "embed the same N inputs (widths M may differ; --match intersect compares the "
                "inputs they share)")
        if model.g.shape[0] != first.g.shape[0] or not np.array_equal(model.labels,
                                                                       first.labels):
            raise ModelInputError(
                f"{model.path}: g has K={model.g.shape[0]} labels, but {first.path} has "
                f"K={first.g.shape[0]}{_first_difference(model.labels, first.labels, 'label')}"
                ": every model must have the same labels (--match intersect compares the "
                "labels they share)")


def _first_difference(ids: np.ndarray, reference: np.ndarray, what: str) -> str:
    """", and <what> 17 is in one only" where the two sets of identities differ."""
    only = np.setxor1d(ids, reference)
    return f", and {what} {int(only[0])} is in one only" if len(only) else ""


def match_models(models: Sequence[LoadedModel]) -> tuple[list[LoadedModel], list[str]]:
    """Each model cut to the inputs and labels all models share, and what was dropped, in words."""
    kept: dict[str, np.ndarray] = {}
    notes = []
    for side in ("inputs", "labels"):
        ids = [getattr(m, side) for m in models]
        common = functools.reduce(np.intersect1d, ids)
        if len(common) < 2:
            raise ModelInputError(f"--match intersect: the models share {len(common)} "
                                  f"{side}; at least 2 are needed")
        kept[side] = common
        dropped = [len(i) - len(common) for i in ids]
        if any(dropped):
            each = ", ".join(f"{m.path.name} {d}" for m, d in zip(models, dropped, strict=True))
            extra = (" (p(y|x) is then the softmax over the shared labels)"
                     if side == "labels" else "")
            notes.append(f"matched by identity: {len(common)} {side} every model has; dropped "
                         f"{each}{extra}")
    out = []
    for m in models:
        rows = np.isin(m.inputs, kept["inputs"])
        labels = np.isin(m.labels, kept["labels"])
        out.append(LoadedModel(m.path, m.f[rows], m.g[labels], m.inputs[rows],
                               m.labels[labels]))
    return out, notes


def model_names(paths: Sequence[Path]) -> list[str]:
    """A short, unique name per model: the stem or folder name, all lengthened by the same number of
    parent folders while two collide (w16/seed0 and w32/seed2, never beside a bare seed2)."""
    parts = [Path(p).resolve().parts for p in paths]
    stems = [Path(p).stem if Path(p).is_file() else Path(p).resolve().name for p in paths]
    names = list(stems)
    depth = 1
    distinct = len(set(parts))
    while len(set(names)) < distinct and depth < max(map(len, parts)):
        names = ["/".join([*part[max(0, len(part) - 1 - depth):-1], stem])
                 for part, stem in zip(parts, stems, strict=True)]
        depth += 1
    if len(set(names)) < len(names):
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            seen[name] = seen.get(name, 0) + 1
            names[i] = name if seen[name] == 1 else f"{name}#{seen[name]}"
    return names
