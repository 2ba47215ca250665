"""Seeds of one language model (the `lm` branch): the standard library's text, a BPE tokenizer
trained on it, token windows, and small GPTs trained at several seeds, each written as every
model of this pipeline is (experiments/outputs.py), so that the seed pairs are compared by the
one pairs loop (experiments/pairs.py::compare_seeds) like the synthetic seeds.

f is the head's input at the configured positions of the eval contexts, g the head's weight
rows (K = the vocabulary), both from `repdist.extract.causal_lm_representations`, which the job
calls between `train_seed` and `write_lm_seed` (extract sits beside experiments, not below).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.bpe import BPETokenizer, train_bpe
from ..data.stdlib_text import contexts, read_stdlib_text
from ..io import provenance, read_npz_metadata, write_json, write_npz
from ..models.gpt import GPT, GPTConfig
from ..training.lm import LMOptions, LMTrainConfig, LMTrainLog, train_lm
from .outputs import SeedFiles, SeedRepresentations, write_seed


@dataclass(frozen=True)
class LMDataConfig:
    """config.yaml's `lm.data`: the stdlib text (bytes, eval share), the tokenizer's vocabulary
    and the windows: `context` tokens of input (plus the next one), at most `train_contexts`
    (0: all) and exactly `eval_contexts` of them."""

    max_bytes: int
    eval_fraction: float
    vocab_size: int
    context: int
    train_contexts: int
    eval_contexts: int


def make_tokens(cfg: LMDataConfig, tokenizer_path: str | Path, train_path: str | Path,
                eval_path: str | Path, run_config: Mapping[str, Any]) -> dict[str, Any]:
    """Train the tokenizer on the train text and write it and both splits' token windows
    ((contexts, context + 1) int32 arrays); return what they were made of."""
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


def window_labels(windows: np.ndarray, positions: str) -> np.ndarray:
    """The next token of every kept position of the input windows[:, :-1] (the windows hold it,
    where causal_lm_representations, seeing only the input, marks the last as unknown)."""
    return windows[:, -1] if positions == "last" else windows[:, 1:].reshape(-1)


def build_lm(cfg: GPTConfig, seed: int) -> GPT:
    """The model of `seed`: its initialisation drawn from torch seed `seed`."""
    torch.manual_seed(seed)
    return GPT(cfg)


@dataclass(frozen=True)
class LMRun:
    """One seed's run: the model, its training, f's positions, where it checkpoints and runs."""

    model: GPTConfig
    training: LMTrainConfig
    seed: int
    positions: str = "last"
    checkpoint: str | Path | None = None
    device: str = "cpu"


@dataclass
class LMTrained:
    """A trained seed with its curves and finals, the eval windows and the tokens' metadata."""

    model: GPT
    log: LMTrainLog
    finals: dict[str, Any]
    eval_windows: np.ndarray
    data_meta: dict[str, Any]


def train_seed(run: LMRun, tokens_train: str | Path, tokens_eval: str | Path) -> LMTrained:
    """Train one seed on the token files (resuming its checkpoint when it is this run's)."""
    train, evals = read_tokens(tokens_train), read_tokens(tokens_eval)
    data_meta = read_npz_metadata(tokens_eval)
    model = build_lm(run.model, run.seed)
    identity = {"model": asdict(run.model), "data": data_meta.get("data"),
                "contexts_train": len(train), "contexts_eval": len(evals)}
    log, finals = train_lm(model, train, evals, run.training, run.seed,
                           LMOptions(run.checkpoint, run.device, identity))
    return LMTrained(model, log, finals, evals, data_meta)


def write_lm_seed(run: LMRun, trained: LMTrained, reps: Any, files: SeedFiles,
                  run_config: Mapping[str, Any]) -> dict[str, Any]:
    """Write one seed's files (experiments/outputs.py) from its extracted `reps` (f, g and
    labels of repdist.extract.causal_lm_representations on the eval windows' inputs); return
    its metrics."""
    labels = window_labels(trained.eval_windows, run.positions)
    known = reps.labels >= 0
    if len(labels) != len(reps.f) or not np.array_equal(reps.labels[known], labels[known]):
        raise ValueError("the extracted positions are not the eval windows' (positions "
                         f"{run.positions!r}: {len(reps.f)} rows, {len(labels)} next tokens)")
    trained.model.cpu()
    keys = ("python_version", "bytes_train", "bytes_eval", "vocab_size", "window")
    cfg = run.model
    meta = {"experiment": "lm", "K": int(reps.g.shape[0]), "M": int(reps.g.shape[1]),
            "width": cfg.width, "layers": cfg.layers, "heads": cfg.heads, "context": cfg.context,
            "tied": cfg.tied, "positions": run.positions, "steps": run.training.steps,
            **{k: trained.data_meta.get(k) for k in keys}, **provenance(run_config),
            "seed": int(run.seed)}
    log, finals = trained.log, trained.finals
    metrics = {"train_loss_steps": log.train_steps, "train_loss": log.train_loss,
               "eval_loss_steps": log.eval_steps, "eval_loss_curve": log.eval_loss,
               **finals, "final_test_loss": finals["eval_loss"],
               "test_accuracy": finals["eval_accuracy"],
               "loss_note": "test = the eval contexts: mean next-token NLL over every position"}
    write_seed(files, SeedRepresentations(reps.g, {"test": reps.f}, {"test": labels}),
               meta, metrics, trained.model.state_dict())
    return metrics
