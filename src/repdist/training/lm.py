"""The training loop of the causal language models (the `lm` branch), in loop.py's phases.

A language model predicts a token at every position, which loop.py's classifier loop does not
handle; this loop shares its Adam, batch order, checkpoints and progress lines. A step does not
wait for the host. With the same seed, data, settings and thread count a run is bit-for-bit
repeatable, resumed or not."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from ..io.host import to_host
from .batches import numpy_order
from .checkpoint import load_resumable, save_checkpoint
from .loop import make_adam
from .progress import ProgressLog

LOG = logging.getLogger("repdist")


@dataclass(frozen=True)
class LMTrainConfig:
    """config.yaml's `lm.training`: exactly `steps` Adam steps of `batch_size` contexts; the
    eval loss every `eval_every` steps; checkpoint_every 0 writes no checkpoints."""

    steps: int
    batch_size: int
    lr: float
    log_every: int
    eval_every: int
    checkpoint_every: int = 0

    def identity(self) -> dict[str, Any]:
        """What changes the trained model (checkpoint spacing does not)."""
        return {k: v for k, v in asdict(self).items() if k != "checkpoint_every"}


@dataclass
class LMTrainLog:
    train_steps: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_loss: list[float] = field(default_factory=list)


@dataclass
class _Run:
    model: torch.nn.Module
    train: torch.Tensor  # (contexts, length + 1) token ids: inputs [:, :-1], targets [:, 1:]
    eval: torch.Tensor
    optimizer: torch.optim.Optimizer
    identity: dict[str, Any]
    running: torch.Tensor  # the logged window's summed losses (float64, on the device)
    log: LMTrainLog = field(default_factory=LMTrainLog)
    start_step: int = 0


def next_token_loss(model: torch.nn.Module, windows: torch.Tensor,
                    reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy of every next token of `windows` (contexts, length + 1)."""
    logits = model(windows[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                           windows[:, 1:].reshape(-1), reduction=reduction)


@torch.no_grad()
def evaluate_lm(model: torch.nn.Module, windows: torch.Tensor,
                batch_size: int = 64) -> tuple[float, float]:
    """Mean next-token NLL (nats) and top-1 accuracy over every position of `windows`."""
    was_training = model.training
    model.eval()
    nll = torch.zeros((), dtype=torch.float64, device=windows.device)
    correct = torch.zeros((), dtype=torch.float64, device=windows.device)
    for lo in range(0, len(windows), batch_size):
        batch = windows[lo : lo + batch_size]
        logits = model(batch[:, :-1])
        nll += F.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(),
                               batch[:, 1:].reshape(-1), reduction="sum")
        correct += (logits.argmax(-1) == batch[:, 1:]).sum()
    model.train(was_training)
    values = to_host(torch.stack([nll, correct]) / windows[:, 1:].numel(), np.float64)
    return float(values[0]), float(values[1])


@dataclass(frozen=True)
class LMOptions:
    """How a run executes: checkpoint file (None: none), device, what the checkpoint must match."""

    checkpoint: str | Path | None = None
    device: str | torch.device = "cpu"
    identity: Mapping[str, Any] | None = None


def train_lm(model: torch.nn.Module, train: np.ndarray, eval_windows: np.ndarray,
             cfg: LMTrainConfig, seed: int,
             options: LMOptions = LMOptions()) -> tuple[LMTrainLog, dict[str, Any]]:
    """Train `model` in place on token windows (contexts, length + 1); return its curves and
    final eval metrics. `seed` orders the batches (the caller seeds the initialisation too)."""
    run = _setup(model, train, eval_windows, cfg, seed, options)
    _resume(run, cfg, options.checkpoint)
    started = time.time()
    _loop(run, cfg, seed, options.checkpoint)
    return run.log, _finals(run, cfg, time.time() - started)


def _setup(model: torch.nn.Module, train: np.ndarray, eval_windows: np.ndarray,
           cfg: LMTrainConfig, seed: int, options: LMOptions) -> _Run:
    """Token windows on the device once; the checkpoint identity (model, data, training, seed)."""
    device = torch.device(options.device)
    model.to(device).train()

    def on_device(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64)).to(device)

    ident = {**(options.identity or {}), "training": cfg.identity(), "seed": int(seed)}
    running = torch.zeros((), dtype=torch.float64, device=device)
    return _Run(model, on_device(train), on_device(eval_windows), make_adam(model, cfg.lr), ident,
                running)


def _resume(run: _Run, cfg: LMTrainConfig, checkpoint: str | Path | None) -> None:
    state = load_resumable(checkpoint, run.identity, cfg.steps, map_location=run.train.device)
    if state is None:
        return
    run.model.load_state_dict(state["model"])
    run.optimizer.load_state_dict(state["optimizer"])
    run.log = LMTrainLog(**state["log"])
    run.running.fill_(float(state["running"]))
    run.start_step = int(state["step"])
    LOG.info("resuming from step %d (%s)", run.start_step, checkpoint)


def _loop(run: _Run, cfg: LMTrainConfig, seed: int, checkpoint: str | Path | None) -> None:
    progress = ProgressLog(cfg.steps, run.start_step)
    order = numpy_order(len(run.train), cfg.batch_size, cfg.steps, seed)
    batches = order.on_device(run.train.device)  # the run's one copy of its batch order
    for step in range(run.start_step, cfg.steps):  # a resumed run starts at its checkpoint
        idx = batches[slice(*order.bounds(step))]
        if step % cfg.eval_every == 0:
            run.log.eval_steps.append(step)
            run.log.eval_loss.append(evaluate_lm(run.model, run.eval)[0])
        loss = next_token_loss(run.model, run.train[idx])
        run.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        run.optimizer.step()
        done = step + 1
        run.running += loss.detach().double()  # summed in float64, as Python floats would be
        if done % cfg.log_every == 0:
            mean = _window(run) / cfg.log_every  # a log point: the sum leaves the device
            run.log.train_steps.append(done)
            run.log.train_loss.append(mean)
            run.running.zero_()
            progress.report(done, mean)
        elif progress.due():
            progress.report(done, _window(run) / max(done % cfg.log_every, 1))
        due = cfg.checkpoint_every and done % cfg.checkpoint_every == 0 and done < cfg.steps
        if checkpoint is not None and due:
            save_checkpoint(checkpoint, run.identity, done, cfg.steps,
                            model=run.model.state_dict(), optimizer=run.optimizer.state_dict(),
                            log=asdict(run.log), running=_window(run))


def _window(run: _Run) -> float:
    """The logged window's loss sum on the host (a sync point)."""
    return float(to_host(run.running))


def _finals(run: _Run, cfg: LMTrainConfig, wall: float) -> dict[str, Any]:
    eval_loss, eval_acc = evaluate_lm(run.model, run.eval)
    return {"eval_loss": eval_loss, "eval_accuracy": eval_acc, "wall_time_s": wall,
            "steps_total": cfg.steps, "steps_run": cfg.steps - run.start_step}
