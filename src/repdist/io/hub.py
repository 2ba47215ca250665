"""The Hugging Face hub as this machine sees it, without torch or transformers: path or hub
id, HF_HUB_OFFLINE, a model's file from its folder or the cache, a tokenizer's identity: one
digest of its vocabulary and merges (tokenizer.json, or vocab.json and merges.txt) or of a
sentencepiece tokenizer.model, which the DAG and the jobs both compute."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HUB_URL = "https://huggingface.co"  # probed before a run needs a model
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")  # either: the cache only
# name or owner/name: huggingface_hub's rule less its length and '--' limits (the hub reports them)
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer.model")


def hub_offline() -> bool:
    """Whether HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set now (huggingface_hub reads it
    once, at import)."""
    return any(os.environ.get(v, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for v in OFFLINE_VARIABLES)


def path_shaped(name: str) -> bool:
    """Whether `name` can only mean a path, never a hub id: absolute, starting with `~`, `./` or
    `../`, or with separators no hub id has (`a/b/c`, `models/`). `gpt2` or `owner/name` is a hub
    id unless such a folder is here; `./models/gpt2` always means a folder."""
    if name in (".", "..") or name.startswith("~") or os.path.isabs(name):
        return True
    separators = [sep for sep in ("/", os.sep, os.altsep) if sep]
    if any(name.startswith(f"{dots}{sep}") for dots in (".", "..") for sep in separators):
        return True
    return any(sep in name for sep in separators) and HUB_ID.fullmatch(name) is None


def hub_file(source: str, filename: str, revision: str | None = None) -> Path | None:
    """A model's or tokenizer's file from its folder or the cache at `revision`, else None."""
    folder = Path(source).expanduser()
    if folder.is_dir():
        path = folder / filename
        return path if path.is_file() else None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(source, filename, revision=revision)
    except ValueError:  # not a valid repo id
        return None
    return Path(found) if isinstance(found, str) else None


def tokenizer_digest(source: str, revision: str | None = None) -> str | None:
    """The tokenizer's identity (see the module's text); None when none of its files is here."""
    fast = hub_file(source, "tokenizer.json", revision)
    if fast is not None:
        data = json.loads(fast.read_text(encoding="utf-8")).get("model", {})
        return _digest(data.get("vocab"), data.get("merges"))
    vocab, merges = hub_file(source, "vocab.json", revision), hub_file(source, "merges.txt",
                                                                         revision)
    if vocab is not None:
        lines = merges.read_text(encoding="utf-8").splitlines() if merges else None
        return _digest(json.loads(vocab.read_text(encoding="utf-8")),
                       [m for m in lines if m and not m.startswith("#version")] if lines else None)
    spm = hub_file(source, "tokenizer.model", revision)
    return "sentencepiece:" + hashlib.sha256(spm.read_bytes()).hexdigest() if spm else None


def _digest(vocab: Any, merges: Sequence[Any] | None) -> str:
    """Merges as "a b" strings (tokenizer.json holds them as strings or as pairs)."""
    pairs = [m if isinstance(m, str) else " ".join(m) for m in merges or []]
    text = json.dumps({"vocab": vocab, "merges": pairs}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
