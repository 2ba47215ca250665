"""Seeds of one language model (the `lm` branch): small GPTs trained on tokens.py's windows.
The job extracts f and g (repdist.extract, beside experiments, not below) between `train_seed`
and `write_lm_seed`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...io import provenance, read_npz_metadata
from ...models.gpt import GPT, GPTConfig
from ...training.lm import LMOptions, LMTrainConfig, LMTrainLog, train_lm
from .tokens import read_tokens
from ..outputs import SeedFiles, SeedRepresentations, write_seed


def window_labels(windows: np.ndarray, positions: str) -> np.ndarray:
    """The next token of every kept position of the input windows[:, :-1] (known here, where
    causal_lm_representations marks the last as unknown)."""
    return windows[:, -1] if positions == "last" else windows[:, 1:].reshape(-1)


def build_lm(cfg: GPTConfig, seed: int) -> GPT:
    """The model initialised from torch seed `seed`."""
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
    """Write one seed's files from its extracted `reps` (f, g, labels); return its metrics."""
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
