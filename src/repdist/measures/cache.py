"""A small LRU cache of PreparedModels keyed by the content of (f, g), for `compare` in loops.

The key is a SHA-256 of the arrays' bytes, dtype and shape (cheap beside a prepare:
benchmarks/measures.py). An array mutated in place is prepared afresh, never served stale; the
cached model holds its own read-only copy. Bounded in models and in bytes."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from ..io.host import to_host
from .conventions import AlignmentConventions
from .prepared import DEFAULT_CONVENTIONS, PreparedModel, prepare

MAX_MODELS = 32
MAX_BYTES = 1 << 30  # 1 GiB of prepared models; the two most recent are always kept


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    models: int
    nbytes: int


def content_key(*arrays: Any) -> tuple[Any, ...] | None:
    """(dtype, shape, SHA-256 of the bytes) of each array; None if one cannot be hashed."""
    key: list[Any] = []
    for a in arrays:
        arr = np.ascontiguousarray(to_host(a))
        if arr.dtype.hasobject:
            return None
        data = memoryview(arr).cast("B") if arr.size else b""  # an empty array is refused later
        digest = hashlib.sha256(data).digest()[:16]
        key.append((arr.dtype.str, arr.shape, digest))
    return tuple(key)


def model_nbytes(model: PreparedModel) -> int:
    """Bytes held by a prepared model's arrays (those computed so far), its views' included
    (a view's f is counted only where it is not the model's own)."""
    held = {id(v): v for part in (model, *model.views.values()) for v in vars(part).values()
            if isinstance(v, np.ndarray)}
    return sum(v.nbytes for v in held.values())


class PreparedCache:
    """LRU of PreparedModels by content key; thread-safe; `max_models = 0` disables it."""

    def __init__(self, max_models: int = MAX_MODELS, max_bytes: int = MAX_BYTES) -> None:
        self.max_models, self.max_bytes = max_models, max_bytes
        self._models: OrderedDict[tuple[Any, ...], PreparedModel] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = self._misses = 0

    def get(self, f: Any, g: Any, measures: Iterable[str] | str | None = None,
            conventions: AlignmentConventions = DEFAULT_CONVENTIONS,
            method: str = "auto") -> PreparedModel:
        """The prepared model of (f, g), from the cache when the same content was seen, warmed
        for these measures (the alignment measures' under `conventions`, by `method`'s path)."""
        key = content_key(f, g) if self.max_models > 0 else None
        if key is not None:
            with self._lock:
                model = self._models.get(key)
                if model is not None:
                    self._models.move_to_end(key)
                    self._hits += 1
            if model is not None:
                return model.warm(measures, conventions, method)
        model = prepare(f, g, measures, conventions, method)
        with self._lock:
            self._misses += 1
            if key is not None:
                self._models[key] = model
                self._evict()
        return model

    def _evict(self) -> None:
        while len(self._models) > self.max_models:
            self._models.popitem(last=False)
        total = sum(model_nbytes(m) for m in self._models.values())
        while len(self._models) > 2 and total > self.max_bytes:
            _, dropped = self._models.popitem(last=False)
            total -= model_nbytes(dropped)

    def clear(self) -> None:
        with self._lock:
            self._models.clear()
            self._hits = self._misses = 0

    def info(self) -> CacheInfo:
        with self._lock:
            nbytes = sum(model_nbytes(m) for m in self._models.values())
            return CacheInfo(self._hits, self._misses, len(self._models), nbytes)


prepared_cache = PreparedCache()
