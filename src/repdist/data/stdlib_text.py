"""The standard library's `.py` sources: real text for the `lm` branch with no download. Whole
files go to eval by the sha256 of their path, so no file's split depends on what the byte cap
kept. The corpus differs between Python versions: `StdlibText.info` records the version."""

from __future__ import annotations

import hashlib
import platform
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STDLIB = "stdlib"  # what a corpus key says for this text (lm.corpus, roeder.words.corpus)
# not the stdlib's own source, tests, or generated tables (encodings/ would be half the text)
SKIPPED_DIRS = frozenset({"site-packages", "dist-packages", "test", "tests", "idle_test",
                          "__pycache__", "lib2to3", "ensurepip", "turtledemo", "encodings"})
HASH_BUCKETS = 10_000


@dataclass(frozen=True)
class StdlibText:
    """The train and eval text, and `info`: Python version, stdlib folder, files and bytes."""

    train: str
    eval: str
    info: dict[str, Any] = field(default_factory=dict)


def stdlib_root() -> Path:
    """This interpreter's standard-library folder."""
    return Path(sysconfig.get_paths()["stdlib"])


def stdlib_files(root: str | Path | None = None) -> list[Path]:
    """Every `.py` file of the standard library outside SKIPPED_DIRS, sorted by relative path."""
    root = Path(root) if root is not None else stdlib_root()
    files = [p for p in root.rglob("*.py")
             if p.is_file() and not SKIPPED_DIRS.intersection(p.relative_to(root).parts[:-1])]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def in_eval(relative: str, eval_fraction: float) -> bool:
    """Whether a file (by its relative path) belongs to the eval split: a hash, not an order."""
    bucket = int(hashlib.sha256(relative.encode()).hexdigest(), 16) % HASH_BUCKETS
    return bucket < eval_fraction * HASH_BUCKETS


def read_stdlib_text(max_bytes: int, eval_fraction: float,
                     root: str | Path | None = None) -> StdlibText:
    """The stdlib sources up to `max_bytes` UTF-8 bytes, split by file (see the module's text)."""
    if not 0 < eval_fraction < 1:
        raise ValueError(f"eval_fraction must be in (0, 1), got {eval_fraction}")
    root = Path(root) if root is not None else stdlib_root()
    parts: dict[str, list[str]] = {"train": [], "eval": []}
    sizes = {"train": 0, "eval": 0}
    total = 0
    for path in stdlib_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        size = len(text.encode("utf-8"))
        if total + size > max_bytes:
            continue  # whole files only: a smaller later file may still fit
        total += size
        split = "eval" if in_eval(path.relative_to(root).as_posix(), eval_fraction) else "train"
        parts[split].append(text)
        sizes[split] += size
    counts = {split: len(texts) for split, texts in parts.items()}
    if not parts["train"] or not parts["eval"]:
        raise ValueError(f"{root}: max_bytes={max_bytes} and eval_fraction={eval_fraction} leave "
                         f"{counts['train']} train and {counts['eval']} eval files; raise them")
    info = {"python_version": platform.python_version(), "stdlib": str(root),
            "files_train": counts["train"], "files_eval": counts["eval"],
            "bytes_train": sizes["train"], "bytes_eval": sizes["eval"]}
    return StdlibText("".join(parts["train"]), "".join(parts["eval"]), info)


def read_text_file(corpus: str, key: str) -> tuple[str, dict[str, Any]]:
    """A UTF-8 text file's text (config key `key`), and its path, bytes and sha256."""
    path = Path(corpus).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{key}: {corpus} is neither '{STDLIB}' nor a text file")
    text = path.read_text(encoding="utf-8")
    data = text.encode("utf-8")
    return text, {"corpus": str(path), "bytes": len(data),
                  "sha256": hashlib.sha256(data).hexdigest()}


def contexts(ids: Sequence[int], length: int, limit: int | None = None) -> list[list[int]]:
    """Non-overlapping windows of `length` tokens from the start of `ids` (at most `limit`)."""
    n = len(ids) // length if limit is None else min(len(ids) // length, limit)
    return [list(ids[i * length : (i + 1) * length]) for i in range(n)]
