"""The training loop of every model here: synthetic MLPs and CIFAR ResNets, seeds stacked.

Adam, loss = mean NLL with f evaluated once per batch, under one of two protocols
(`training.protocol`): `paper` retraces the original's runs (whole epochs, its DataLoader's
batch order, train-mode test passes after the update), `clean` runs exactly the nominal steps.
All seeds share one batch order, as in the original. Data lives on the training device.
Checkpoints record their configuration and are written atomically every `checkpoint_every`
steps; a run finding its own checkpoint resumes to the same result as an uninterrupted run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .batches import dataloader_batches, numpy_batches
from .checkpoint import load_resumable, save_checkpoint
from .memory import keep_freed_memory
from .progress import ProgressLog
from .protocol import Protocol, batches_per_epoch, protocol, steps_to_run

LOG = logging.getLogger("repdist")


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 15_000  # nominal; the paper protocol runs whole epochs covering them
    batch_size: int = 128
    lr: float = 1e-4
    data_seed: int = 0
    log_every: int = 500
    eval_every: int = 2_000
    checkpoint_every: int = 0  # 0: no checkpoints
    protocol: str = "paper"

    @property
    def rules(self) -> Protocol:
        return protocol(self.protocol)

    def steps_for(self, n_train: int) -> int:
        """Steps actually run on n_train examples (15,072 for the paper's synthetic runs)."""
        return steps_to_run(self.steps, n_train, self.batch_size, self.rules)

    def identity(self) -> dict[str, Any]:
        """What changes the trained models (checkpoint spacing does not)."""
        return {k: v for k, v in asdict(self).items() if k != "checkpoint_every"}


@dataclass
class TrainLog:
    """Loss curves of every model in a stack (lists of per-model lists)."""

    train_steps: list[int] = field(default_factory=list)
    train_loss: list[list[float]] = field(default_factory=list)
    test_steps: list[int] = field(default_factory=list)
    test_loss: list[list[float]] = field(default_factory=list)


def batch_order(cfg: TrainConfig, n: int) -> Iterator[np.ndarray]:
    """The index batches of a run, by its protocol."""
    rules = cfg.rules
    if rules.dataloader_order:
        epochs = cfg.steps_for(n) // batches_per_epoch(n, cfg.batch_size)
        return dataloader_batches(n, cfg.batch_size, epochs, cfg.data_seed,
                                  lambda step: step % cfg.eval_every == 0)
    return numpy_batches(n, cfg.batch_size, cfg.steps, cfg.data_seed)


def per_model_nll(log_probs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean NLL per model: log_probs (..., B, K) float64, labels (B,) -> (...,)."""
    idx = labels.expand(*log_probs.shape[:-1]).unsqueeze(-1)
    return -log_probs.gather(-1, idx).squeeze(-1).mean(dim=-1)


def batch_nll(model: torch.nn.Module, x: torch.Tensor, codes: torch.Tensor,
              labels: torch.Tensor) -> torch.Tensor:
    """Mean NLL per model of one batch: a stack's fused loss where it has one, else from the
    model's (..., B, K) log-probabilities."""
    nll = getattr(model, "nll", None)
    if nll is None:
        return per_model_nll(model.log_probs(x, codes), labels)
    return nll(x, codes, labels)


@torch.no_grad()
def evaluate(
    model: torch.nn.Module,
    x: torch.Tensor,
    labels: torch.Tensor,
    codes: torch.Tensor,
    batch_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-model mean NLL and accuracy over all of x, in eval mode, `batch_size` rows at a time."""
    was_training = model.training
    model.eval()
    step = batch_size or len(x)
    nll_sum, correct = 0.0, 0.0
    for start in range(0, len(x), step):
        xb, yb = x[start : start + step], labels[start : start + step]
        log_probs = model.log_probs(xb, codes)
        nll_sum = nll_sum + per_model_nll(log_probs, yb).double() * len(xb)
        correct = correct + (log_probs.argmax(dim=-1) == yb).double().sum(dim=-1)
    model.train(was_training)
    loss = (nll_sum / len(x)).cpu().numpy()
    acc = (correct / len(x)).cpu().numpy()
    return np.atleast_1d(loss), np.atleast_1d(acc)


@torch.no_grad()
def train_mode_test_loss(
    model: torch.nn.Module, x: torch.Tensor, labels: torch.Tensor, codes: torch.Tensor,
    batch_size: int,
) -> np.ndarray:
    """The original's test loss: train mode (BatchNorm on batch statistics, its running
    statistics updated), the test set in order in batches of `batch_size`, the mean of the
    per-batch mean NLLs (the last, short batch weighs as much as the others)."""
    was_training = model.training
    model.train()
    total, batches = 0.0, 0
    for start in range(0, len(x), batch_size):
        total = total + batch_nll(model, x[start : start + batch_size], codes,
                                  labels[start : start + batch_size]).double()
        batches += 1
    model.train(was_training)
    return np.atleast_1d((total / batches).cpu().numpy())


def make_adam(model: torch.nn.Module, lr: float) -> torch.optim.Adam:
    """Adam with the fused kernel where torch has one (CPU since 2.4: ~6x faster than foreach)."""
    try:
        return torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(model.parameters(), lr=lr, foreach=True)


def _as_list(t: torch.Tensor | np.ndarray) -> list[float]:
    return [float(v) for v in np.atleast_1d(np.asarray(t))]


def train(
    model: torch.nn.Module,
    train_x: np.ndarray,
    train_labels: np.ndarray,
    test_x: np.ndarray,
    test_labels: np.ndarray,
    codes: np.ndarray,
    cfg: TrainConfig,
    checkpoint: str | Path | None = None,
    device: str | torch.device = "cpu",
    eval_batch_size: int | None = None,
    channels_last: bool = False,
    final_train_eval: bool = False,
    on_step: Callable[[int], None] | None = None,
    identity: Mapping[str, Any] | None = None,
) -> tuple[TrainLog, dict[str, Any]]:
    """Train `model` (a ModelClass or a StackedModelClass) in place; return curves and finals.

    `codes` is the K x (K-1) truncated one-hot code of every class (the inputs of g). Data is
    moved to `device` once; eval-mode evaluation runs `eval_batch_size` inputs at a time (None:
    all). `identity` describes the run for its checkpoint (the training settings are added);
    a checkpoint of another configuration is set aside, not resumed. `on_step(done)` is called
    before training (done = 0) and after every optimisation step.
    """
    device = torch.device(device)
    keep_freed_memory()  # no page faults on every step's fresh buffers (see training.memory)
    float_dtype = next(model.parameters()).dtype  # float32, or float64 for exactness tests
    rules = cfg.rules

    def on_device(a: np.ndarray, dtype) -> torch.Tensor:
        t = torch.from_numpy(np.ascontiguousarray(a, dtype=dtype)).to(device)
        if t.is_floating_point():
            t = t.to(float_dtype)
        if channels_last and t.dim() == 4:
            t = t.contiguous(memory_format=torch.channels_last)
        return t

    x, tx = on_device(train_x, np.float32), on_device(test_x, np.float32)
    y, ty = on_device(train_labels, np.int64), on_device(test_labels, np.int64)
    all_codes = on_device(codes, np.float32)
    model.to(device)
    if channels_last:
        model.to(memory_format=torch.channels_last)
    optimizer = make_adam(model, cfg.lr)
    total = cfg.steps_for(len(x))
    run_identity = {**(identity or {}), "training": cfg.identity()}
    log = TrainLog()
    running: torch.Tensor | None = None
    start_step = 0
    state = load_resumable(checkpoint, run_identity, total, map_location=device)
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        log = TrainLog(**state["log"])
        running = state["running"]
        start_step = int(state["step"])
        LOG.info("resuming from step %d of %d (%s)", start_step, total, checkpoint)
    model.train()
    if on_step is not None and start_step == 0:
        on_step(0)

    def record_test_loss(step: int) -> None:
        if rules.train_mode_test_loss:
            loss = train_mode_test_loss(model, tx, ty, all_codes, cfg.batch_size)
        else:
            loss, _ = evaluate(model, tx, ty, all_codes, eval_batch_size)
        log.test_steps.append(step)
        log.test_loss.append(_as_list(loss))

    progress = ProgressLog(total, start_step)
    started = time.time()
    for step, idx_np in enumerate(batch_order(cfg, len(x))):
        if step < start_step:
            continue  # replay the batch order up to the checkpoint
        evaluate_now = step % cfg.eval_every == 0
        if evaluate_now and not rules.test_pass_after_update:
            record_test_loss(step)
        idx = torch.from_numpy(idx_np).to(device)
        loss = batch_nll(model, x[idx], all_codes, y[idx])
        optimizer.zero_grad(set_to_none=True)
        loss.sum().backward()
        optimizer.step()
        if evaluate_now and rules.test_pass_after_update:
            record_test_loss(step)
        detached = loss.detach()
        done = step + 1
        running = detached if running is None else running + detached
        logged = _log_train_loss(log, rules, cfg.log_every, step, running)
        if logged is not None:
            running = torch.zeros_like(detached)
            progress.report(done, float(logged))
        elif progress.due():
            # steps summed in `running` since the last entry (see _log_train_loss)
            ends_at_step = rules.loss_window_ends_at_step
            window = (step if ends_at_step else done) % cfg.log_every
            progress.report(done, float(running.mean()) / max(window, 1))
        if on_step is not None:
            on_step(done)
        due = cfg.checkpoint_every and done % cfg.checkpoint_every == 0 and done < total
        if checkpoint is not None and due:
            save_checkpoint(checkpoint, run_identity, done, total, model=model.state_dict(),
                            optimizer=optimizer.state_dict(), log=asdict(log), running=running)
    wall = time.time() - started
    progress.report(total, float(np.mean(log.train_loss[-1])) if log.train_loss else None)
    test_loss_eval, test_acc = evaluate(model, tx, ty, all_codes, eval_batch_size)
    final_test = log.test_loss[-1] if rules.train_mode_test_loss else _as_list(test_loss_eval)
    finals: dict[str, Any] = {
        "test_loss": list(final_test),
        "test_loss_eval": _as_list(test_loss_eval),
        "test_accuracy": _as_list(test_acc),
        "wall_time_s": wall,
        "steps_total": total,
        "steps_run": total - start_step,
    }
    if final_train_eval:
        train_loss, train_acc = evaluate(model, x, y, all_codes, eval_batch_size)
        finals["train_loss_eval"] = _as_list(train_loss)
        finals["train_accuracy"] = _as_list(train_acc)
    return log, finals


def _log_train_loss(log: TrainLog, rules: Protocol, every: int, step: int,
                    running: torch.Tensor) -> torch.Tensor | None:
    """Append a training-loss entry when one is due; return the stack's mean of it.

    paper: at step i with i % every == 0, the mean over steps i - every + 1 .. i (step 0: its
    own loss), as the original; clean: at done = i + 1 with done % every == 0, the mean over
    the `every` steps before it, plus step 0's loss at 0.
    """
    if rules.loss_window_ends_at_step:
        if step % every:
            return None
        value, label = (running if step == 0 else running / every), step
    else:
        if step == 0:
            log.train_steps.append(0)
            log.train_loss.append(_as_list(running))
        if (step + 1) % every:
            return None
        value, label = running / every, step + 1
    log.train_steps.append(label)
    log.train_loss.append(_as_list(value))
    return value.mean()
