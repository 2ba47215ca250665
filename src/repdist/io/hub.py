"""The Hugging Face hub as this machine sees it, without torch or transformers: whether a name
is a path or a hub id, whether the hub is switched off (HF_HUB_OFFLINE), a model's file from
its folder or the local cache, and a tokenizer's identity.

The identity of a tokenizer is one digest of the files that define it: tokenizer.json's
vocabulary and merges, or vocab.json and merges.txt (the same digest for one tokenizer saved
either way), or a sentencepiece tokenizer.model's bytes. The DAG computes it before any job
(pipeline/lm_model_sources.py) and the jobs after loading the tokenizer
(experiments/lm/extraction.py), with this one function, so both speak of the same digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HUB_URL = "https://huggingface.co"  # the Hugging Face hub, probed before a run needs a model
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")  # either: the cache only
# A hub id: a name, or owner/name, each of letters, digits, '.', '_' and '-' (huggingface_hub's
# rule, less its length and '--' limits, which the hub itself reports)
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer.model")


def hub_offline() -> bool:
    """Whether HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set now, as huggingface_hub reads it
    (read at each call: huggingface_hub reads it once, at import)."""
    return any(os.environ.get(v, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for v in OFFLINE_VARIABLES)


def path_shaped(name: str) -> bool:
    """Whether `name` (a model or tokenizer as a person gives it) can only mean a path on this
    machine, never a hub id: absolute, starting with `~`, `./` or `../` (or `.`, `..` alone), or
    holding a path separator in a way a hub id cannot (`a/b/c`, `models/`, a backslash on
    Windows). A bare name (`gpt2`) or `owner/name` (`EleutherAI/pythia-70m`) is a hub id unless
    a folder of that name is here; write `./models/gpt2` to mean a folder unambiguously."""
    if name in (".", "..") or name.startswith("~") or os.path.isabs(name):
        return True
    separators = [sep for sep in ("/", os.sep, os.altsep) if sep]
    if any(name.startswith(f"{dots}{sep}") for dots in (".", "..") for sep in separators):
        return True
    return any(sep in name for sep in separators) and HUB_ID.fullmatch(name) is None


def cached_file(repo_id: str, filename: str, revision: str | None = None) -> Path | None:
    """A hub file in the local Hugging Face cache (HF_HOME, HF_HUB_CACHE), None when it is not
    there or huggingface_hub is not installed where the DAG is built."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(repo_id, filename, revision=revision)
    except ValueError:  # not a valid repo id
        return None
    return Path(found) if isinstance(found, str) else None


def hub_file(source: str, filename: str, revision: str | None = None) -> Path | None:
    """One file of a model or tokenizer: from its folder when `source` is one, else from the
    cache at `revision`; None when it is not here."""
    folder = Path(source).expanduser()
    if folder.is_dir():
        path = folder / filename
        return path if path.is_file() else None
    return cached_file(source, filename, revision)


def tokenizer_digest(source: str, revision: str | None = None) -> str | None:
    """The tokenizer's identity (see the module's text), read from its files in its folder or
    the cache; None when none of them is here."""
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
    """The same digest for tokenizer.json and vocab.json + merges.txt of one tokenizer: merges
    as "a b" strings (tokenizer.json holds them as strings or as pairs)."""
    pairs = [m if isinstance(m, str) else " ".join(m) for m in merges or []]
    text = json.dumps({"vocab": vocab, "merges": pairs}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
