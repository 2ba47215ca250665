"""The `lm` branch's data, without torch (its job runs in the measures environment): a BPE
tokenizer trained on the standard library's text, and both splits' token windows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...data.bpe import BPETokenizer, train_bpe
from ...data.stdlib_text import contexts, read_stdlib_text
from ...io import provenance, write_json, write_npz


@dataclass(frozen=True)
class LMDataConfig:
    """config.yaml's `lm.data`: windows of `context` input tokens plus the next, at most
    `train_contexts` (0: all) and exactly `eval_contexts` of them."""

    max_bytes: int
    eval_fraction: float
    vocab_size: int
    context: int
    train_contexts: int
    eval_contexts: int


def make_tokens(cfg: LMDataConfig, tokenizer_path: str | Path, train_path: str | Path,
                eval_path: str | Path, run_config: Mapping[str, Any]) -> dict[str, Any]:
    """Train the tokenizer; write it and both splits' int32 windows; return what they were."""
    text = read_stdlib_text(cfg.max_bytes, cfg.eval_fraction)
    tokenizer = train_bpe(text.train, cfg.vocab_size)
    width = cfg.context + 1
    train = contexts(tokenizer.encode(text.train), width, cfg.train_contexts or None)
    evals = contexts(tokenizer.encode(text.eval), width, cfg.eval_contexts)
    if len(evals) < cfg.eval_contexts:
        raise ValueError(f"the eval text gives {len(evals)} windows of {width} tokens, fewer than "
                         f"lm.data.eval_contexts = {cfg.eval_contexts}: raise lm.data.max_bytes "
                         "or lm.data.eval_fraction")
    info = {**text.info, "vocab_size": tokenizer.vocab_size, "merges": len(tokenizer.merges),
            "contexts_train": len(train), "contexts_eval": len(evals), "window": width}
    meta = provenance(run_config, experiment="lm", data=asdict(cfg), **info)
    write_json(tokenizer_path, {**tokenizer.to_json(), "provenance": meta})
    for path, windows in ((train_path, train), (eval_path, evals)):
        write_npz(path, {"tokens": np.asarray(windows, dtype=np.int32)}, meta)
    return info


def read_tokens(path: str | Path) -> np.ndarray:
    with np.load(path, allow_pickle=False) as data:
        return data["tokens"].astype(np.int64)


def read_tokenizer(path: str | Path) -> BPETokenizer:
    return BPETokenizer.load(path)
