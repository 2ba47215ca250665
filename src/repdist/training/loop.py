"""The training loop of every model here: synthetic MLPs and CIFAR ResNets, seeds stacked.

Adam, loss = mean NLL with f evaluated once per batch, under one of two protocols
(`training.protocol`): `paper` retraces the original's runs (whole epochs, its DataLoader's batch
order, train-mode test passes after the update), `clean` runs exactly the nominal steps. All seeds
share one batch order, as in the original. Data lives on the training device. Checkpoints record
their configuration and are written atomically every `checkpoint_every` steps; a run finding its own
checkpoint resumes to the same result as an uninterrupted run. A step never waits for the host
(`_train_step`)."""

from __future__ import annotations

import logging
import time
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol as TypingProtocol

import numpy as np
import torch

from ..io.host import to_host
from .batches import BatchOrder, dataloader_order, numpy_order
from .checkpoint import load_resumable, save_checkpoint
from .early_stopping import EarlyStopping
from .memory import keep_freed_memory
from .progress import ProgressLog
from .protocol import Protocol, batches_per_epoch
from .settings import TrainConfig

LOG = logging.getLogger("repdist")


@dataclass
class TrainLog:
    """Loss curves of every model in a stack (lists of per-model lists)."""

    train_steps: list[int] = field(default_factory=list)
    train_loss: list[list[float]] = field(default_factory=list)
    test_steps: list[int] = field(default_factory=list)
    test_loss: list[list[float]] = field(default_factory=list)


def batch_order(cfg: TrainConfig, n: int, full_batches: bool = False,
                in_order: bool = False) -> BatchOrder:
    """The index batches of a run, by its protocol, drawn before it starts (`full_batches`:
    every batch whole, each epoch's remainder left out; `in_order`: every epoch the examples
    in their order; the clean protocol's order only)."""
    rules = cfg.rules
    if rules.dataloader_order and (full_batches or in_order):
        raise ValueError("full batches and batches in order: only the clean protocol's batch "
                         "order has them (the paper protocol replays the original's loader)")
    if rules.dataloader_order:
        epochs = cfg.steps_for(n) // batches_per_epoch(n, cfg.batch_size)
        return dataloader_order(n, cfg.batch_size, epochs, cfg.data_seed,
                                lambda step: step % cfg.eval_every == 0)
    return numpy_order(n, cfg.batch_size, cfg.steps, cfg.data_seed, full_batches, in_order)


# (model, x, codes, labels, idx) -> the batch's loss per model, (S,) or ()
Objective = Callable[[torch.nn.Module, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
                     torch.Tensor]


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
    return np.atleast_1d(to_host(nll_sum / len(x))), np.atleast_1d(to_host(correct / len(x)))


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
    return np.atleast_1d(to_host(total / batches))


def make_adam(model: torch.nn.Module, lr: float, capturable: bool = False) -> torch.optim.Adam:
    """Adam with the fused kernel where torch has one (on the CPU since torch 2.4; faster than the
    foreach kernel). `capturable`: its step may be captured in a CUDA graph (the fused kernel
    computes the same either way; torch refuses to capture it without)."""
    try:
        return torch.optim.Adam(model.parameters(), lr=lr, fused=True, capturable=capturable)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(model.parameters(), lr=lr, foreach=True, capturable=capturable)


def _as_list(t: torch.Tensor | np.ndarray) -> list[float]:
    """Per-model values for the log: the run's sync point (a loss on the device to the host)."""
    return [float(v) for v in np.atleast_1d(to_host(t))]


@dataclass(frozen=True)
class TrainData:
    """A run's data as numpy arrays: inputs and labels of both splits, and `codes`, the
    K x (K-1) truncated one-hot code of every class (the inputs of g)."""

    train_x: np.ndarray
    train_labels: np.ndarray
    test_x: np.ndarray
    test_labels: np.ndarray
    codes: np.ndarray


class Resumable(TypingProtocol):
    """State kept beside a run (e.g. its snapshots so far) that travels with its checkpoint."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class RunOptions:
    """How one run executes, beyond what it trains (TrainConfig). The defaults run on the CPU,
    eagerly, without a checkpoint; each field's comment says what it changes."""

    checkpoint: str | Path | None = None  # the checkpoint file; None: none
    device: str | torch.device = "cpu"
    eval_batch_size: int | None = None  # eval-mode batch size; None: all at once
    channels_last: bool = False  # images in channels-last memory format (CUDA)
    final_train_eval: bool = False  # an eval-mode pass over the training set at the end
    # on_step(done): called with 0 before training and after every step. A true return after
    # a step ends the run there: its finals are computed as usual, `steps_run` says how many
    # steps ran, and the checkpoint stays as last written.
    on_step: Callable[[int], bool | None] | None = None
    # What the checkpoint must match besides the training settings.
    identity: Mapping[str, Any] | None = None
    # objective(model, x, codes, labels, idx): the per-model loss of a batch. None: the NLL of
    # the labels. Distillation passes its own; `idx` indexes the training set.
    objective: Objective | None = None
    # On CUDA the step (forward, backward, Adam, the loss window) is captured in a CUDA graph,
    # one per batch size, and replayed (_StepGraphs). On a CPU the same graph-ready step runs
    # eagerly, to the same numbers.
    cuda_graph: bool = False
    # Each model of a stack stops when its test loss has not improved for that many test
    # passes (training.early_stopping), and the run stops when all have. These are the clean
    # protocol's eval-mode passes: give the run the validation set as its test data.
    early_stopping: EarlyStopping | None = None
    # State beside the run, by name, saved in its checkpoint and loaded back on resume.
    resumables: Mapping[str, Resumable] = field(default_factory=dict)
    # Every batch whole (batches.numpy_order leaves each epoch's remainder out): for a
    # contrastive model whose candidate set is its batch.
    full_batches: bool = False
    # The training examples in their order every epoch, never shuffled (the follow-up's
    # CIFAR-100 teacher: its DataLoader has no shuffle).
    in_order: bool = False
    # The loss scaled for float16 gradients (a model under float16 autocast) by
    # torch.amp.GradScaler, dynamically, on the device. The fused Adam takes the scale and the
    # found-infinity flag as tensors and skips a step whose gradients overflowed; the scale is
    # updated in place. So the step never waits for the host, and a CUDA graph captures it.
    # The scaler's state travels with the checkpoint.
    loss_scaling: bool = False
    # The learning rate of step i is lr x lr_factor(i), set between steps (the follow-up's
    # per-epoch warm-up and decay, settings.EpochSchedule). Such a run steps eagerly, never
    # from a CUDA graph: a captured step keeps the rate it was captured with.
    lr_factor: Callable[[int], float] | None = None


@dataclass
class _Run:
    """The state of a run in progress: tensors on the device (the batch order `order`, the
    loss window `running`), optimiser, curves."""

    model: torch.nn.Module
    x: torch.Tensor
    y: torch.Tensor
    tx: torch.Tensor
    ty: torch.Tensor
    codes: torch.Tensor
    optimizer: torch.optim.Optimizer
    total: int
    identity: dict[str, Any]
    batches: BatchOrder
    order: torch.Tensor
    log: TrainLog = field(default_factory=TrainLog)
    running: torch.Tensor | None = None
    start_step: int = 0
    step_graphs: int = 0
    stopper: EarlyStopping | None = None
    steps_done: int = 0
    graph_sizes: dict[str, dict[str, Any]] = field(default_factory=dict)
    graph_error: str = ""
    scaler: torch.amp.GradScaler | None = None  # RunOptions.loss_scaling


def train(model: torch.nn.Module, data: TrainData, cfg: TrainConfig,
          options: RunOptions = RunOptions()) -> tuple[TrainLog, dict[str, Any]]:
    """Train `model` (a ModelClass or a StackedModelClass) in place; return curves and finals.

    Data is moved to the device once; a checkpoint of another configuration is set aside, not
    resumed (training.checkpoint)."""
    keep_freed_memory()  # no page faults on every step's fresh buffers (see training.memory)
    run = _setup(model, data, cfg, options)
    _resume(run, options)
    model.train()
    if options.on_step is not None and run.start_step == 0:
        options.on_step(0)
    started = time.time()
    _loop(run, cfg, options)
    _stop_at_end(run, options)
    return run.log, _finals(run, cfg, options, time.time() - started)


def _setup(model: torch.nn.Module, data: TrainData, cfg: TrainConfig,
           options: RunOptions) -> _Run:
    """Tensors on the device in the model's float type (float64 for exactness tests)."""
    device = torch.device(options.device)
    float_dtype = next(model.parameters()).dtype

    def on_device(a: np.ndarray, dtype) -> torch.Tensor:
        t = torch.from_numpy(np.ascontiguousarray(a, dtype=dtype)).to(device)
        if t.is_floating_point():
            t = t.to(float_dtype)
        if options.channels_last and t.dim() == 4:
            t = t.contiguous(memory_format=torch.channels_last)
        return t

    x, tx = on_device(data.train_x, np.float32), on_device(data.test_x, np.float32)
    y, ty = on_device(data.train_labels, np.int64), on_device(data.test_labels, np.int64)
    codes = on_device(data.codes, np.float32)
    model.to(device)
    if options.channels_last:
        model.to(memory_format=torch.channels_last)
    identity = {**(options.identity or {}), "training": cfg.identity(),
                **_layout_identity(options), **_stopping_identity(cfg, options),
                **({"full_batches": True} if options.full_batches else {}),
                **({"in_order": True} if options.in_order else {}),
                **({"loss_scaling": True} if options.loss_scaling else {})}
    batches = batch_order(cfg, len(x), options.full_batches, options.in_order)
    order = batches.on_device(device)  # the run's one copy of its batch order
    optimizer = make_adam(model, cfg.lr, capturable=_graphed(options, device))
    if options.early_stopping is not None:
        options.early_stopping.attach(model)
    scaler = _loss_scaler(optimizer, device) if options.loss_scaling else None
    return _Run(model, x, y, tx, ty, codes, optimizer, cfg.steps_for(len(x)), identity, batches,
                order, stopper=options.early_stopping, scaler=scaler)


def _loss_scaler(optimizer: torch.optim.Optimizer, device: torch.device) -> torch.amp.GradScaler:
    """The run's GradScaler. Only with an optimiser that takes the scale on the device (the
    fused Adam): with another, GradScaler reads the found-infinity flag on the host every step."""
    if not getattr(optimizer, "_step_supports_amp_scaling", False):
        raise ValueError("loss_scaling needs the fused Adam (make_adam found none here): "
                         "another optimiser makes every step wait for the host")
    return torch.amp.GradScaler(device.type)


def _stopping_identity(cfg: TrainConfig, options: RunOptions) -> dict[str, Any]:
    """Early stopping's patience, recorded only when the run stops early (so a run without it
    keeps its checkpoint identity); it reads the clean protocol's eval-mode test passes."""
    if options.early_stopping is None:
        return {}
    if cfg.rules.test_pass_after_update:
        raise ValueError("early stopping reads the clean protocol's test passes (eval mode, "
                         f"before the step), not the {cfg.protocol} protocol's")
    return {"early_stopping": {"patience": options.early_stopping.patience}}


def _graphed(options: RunOptions, device: torch.device) -> bool:
    """Whether the run captures its step in CUDA graphs (never with a learning-rate schedule)."""
    return options.cuda_graph and device.type == "cuda" and options.lr_factor is None


def _layout_identity(options: RunOptions) -> dict[str, Any]:
    """The memory layout of the stored tensors: a channels-last run's weights and Adam moments
    are channels-last, and resuming them under the other layout would mix the two (CUDA's fused
    Adam refuses; a CPU kernel pairing them by memory position updates the wrong elements).
    Recorded only when channels-last, so a contiguous run's checkpoint keeps its identity."""
    return {"memory_format": "channels_last"} if options.channels_last else {}


def _resume(run: _Run, options: RunOptions) -> None:
    """Continue from the checkpoint when it is this configuration's."""
    state = load_resumable(options.checkpoint, run.identity, run.total,
                           map_location=run.x.device)
    if state is None:
        return
    run.model.load_state_dict(state["model"])
    _load_optimizer(run.optimizer, state["optimizer"])
    run.log = TrainLog(**state["log"])
    run.running = state["running"]
    run.start_step = int(state["step"])
    for name, companion in _resumables(run, options).items():
        companion.load_state_dict(state["resumables"][name])
    LOG.info("resuming from step %d of %d (%s)", run.start_step, run.total, options.checkpoint)


def _resumables(run: _Run, options: RunOptions) -> dict[str, Resumable]:
    """What a checkpoint of the run saves beside the model, optimiser and curves."""
    stopper = {"early_stopping": run.stopper} if run.stopper is not None else {}
    scaler = {"grad_scaler": run.scaler} if run.scaler is not None else {}
    return {**options.resumables, **stopper, **scaler}


def _load_optimizer(optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """Load Adam's state, keeping this run's `capturable` (torch takes the checkpoint's): a
    checkpoint of an eager run resumes in a graphed one and back."""
    capturable = [group["capturable"] for group in optimizer.param_groups]
    optimizer.load_state_dict(state)
    for group, keep in zip(optimizer.param_groups, capturable, strict=True):
        group["capturable"] = keep
        for p in group["params"] if keep else ():
            st = optimizer.state.get(p, {})
            if "step" in st and st["step"].device != p.device:  # a foreach run's host counter
                st["step"] = st["step"].to(device=p.device, dtype=torch.float32)


def _loop(run: _Run, cfg: TrainConfig, options: RunOptions) -> None:
    """The optimisation steps, with the protocol's test passes, loss log and checkpoints."""
    rules, progress = cfg.rules, ProgressLog(run.total, run.start_step)
    step_on = _stepper(run, options)
    run.steps_done = run.start_step
    for step in range(run.start_step, run.total):
        evaluate_now = step % cfg.eval_every == 0
        if evaluate_now and not rules.test_pass_after_update:
            _record_test_loss(run, cfg, options, step)
            if run.stopper is not None and run.stopper.all_stopped:
                LOG.info("early stopping: every model stopped by step %d of %d", step, run.total)
                break
        if options.lr_factor is not None:
            _set_lr(run.optimizer, cfg.lr * options.lr_factor(step))
        start, stop = run.batches.bounds(step)
        step_on(run.order[start:stop])  # a view of the order on the device: no copy, no sync
        if evaluate_now and rules.test_pass_after_update:
            _record_test_loss(run, cfg, options, step)
        _account_loss(run, cfg, progress, step)
        done = run.steps_done = step + 1
        stop = options.on_step is not None and bool(options.on_step(done))
        due = cfg.checkpoint_every and done % cfg.checkpoint_every == 0 and done < run.total
        if options.checkpoint is not None and due and not stop:
            resumables = {k: v.state_dict() for k, v in _resumables(run, options).items()}
            save_checkpoint(options.checkpoint, run.identity, done, run.total,
                            model=run.model.state_dict(), optimizer=run.optimizer.state_dict(),
                            log=asdict(run.log), running=run.running, resumables=resumables)
        if stop:
            break
    if isinstance(step_on, _StepGraphs):
        run.step_graphs = len(step_on.replays)
        run.graph_sizes, run.graph_error = step_on.summary(), step_on.error
    progress.report(run.steps_done, float(np.mean(run.log.train_loss[-1]))
                    if run.log.train_loss else None)


def _set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """The learning rate of every parameter group (a float: the step runs eagerly)."""
    for group in optimizer.param_groups:
        group["lr"] = lr


# The batch order is drawn before the run and lives on the device with the data. The step indexes it
# there and sums its loss into the logged-loss window there, so a step never waits for the host:
# values leave the device (`to_host`) only when a log entry, a progress line, a test pass or a
# checkpoint is due. `RunOptions.cuda_graph` replays that same step from CUDA graphs
# (`_StepGraphs`); `RunOptions.loss_scaling` scales its loss for float16 (torch.amp.GradScaler with
# the fused Adam, on the device too).
def _train_step(run: _Run, objective: Objective | None, idx: torch.Tensor) -> None:
    """One optimisation step on the batch `idx` (indices on the device), its per-model loss
    summed into the window `run.running` in place: nothing leaves the device, nothing is
    allocated that a CUDA graph could not replay (the graph-ready step, graphed or not)."""
    x, y = run.x[idx], run.y[idx]
    if objective is None:
        loss = batch_nll(run.model, x, run.codes, y)
    else:
        loss = objective(run.model, x, run.codes, y, idx)
    if run.stopper is not None:
        loss = run.stopper.mask(loss)  # a stopped model's gradient is cut, its loss still logged
    run.optimizer.zero_grad(set_to_none=True)
    if run.scaler is None:
        loss.sum().backward()
        run.optimizer.step()
    else:  # on the device: the fused Adam unscales, skips an overflow, the scale updates
        run.scaler.scale(loss.sum()).backward()
        run.scaler.step(run.optimizer)
        run.scaler.update()
    loss = loss.detach()
    if run.running is None:
        run.running = torch.zeros_like(loss)
    run.running.add_(loss)


def _stepper(run: _Run, options: RunOptions) -> Callable[[torch.Tensor], None]:
    """The step of a run: eager, or replayed from CUDA graphs (`options.cuda_graph`)."""
    if not options.cuda_graph:
        return lambda idx: _train_step(run, options.objective, idx)
    if options.lr_factor is not None:
        LOG.info("cuda_graph: off: the learning-rate schedule changes the rate between steps")
        return lambda idx: _train_step(run, options.objective, idx)
    device = run.x.device
    if device.type == "cuda":
        LOG.info("cuda_graph: the step is captured after %d eager steps of each batch size and "
                 "replayed", GRAPH_WARMUP)
    else:
        LOG.info("cuda_graph: nothing to capture on %s; the graph-ready step runs eagerly",
                 device)
    return _StepGraphs(lambda idx: _train_step(run, options.objective, idx), run.optimizer,
                       device)


GRAPH_WARMUP = 3  # eager steps of each batch size before its capture (on the capture stream)


def capture_step(step: Callable[[], None], stream: Any) -> Callable[[], None]:
    """`step` captured in a CUDA graph on `stream`, returned as its replay. On a CPU (`stream`
    None) nothing is captured: the replay is `step` itself, which then reads the same static
    buffers a graph would (so a CPU run checks what a replay sees)."""
    if stream is None:
        return step
    graph = torch.cuda.CUDAGraph()
    # the outer context puts the current stream back when a capture fails: torch.cuda.graph
    # leaves its capture stream current if ending the capture raises
    with torch.cuda.stream(torch.cuda.current_stream(stream.device)):
        with torch.cuda.graph(graph, stream=stream):
            step()
    return graph.replay


class _StepGraphs:
    """The training step replayed from CUDA graphs, one per batch size (the paper protocol's
    short last batch of each epoch has its own), the standard way: the batch's indices copied
    into a static buffer of its size on the device, the first GRAPH_WARMUP steps of each size
    run eagerly on the side stream that then captures it (Adam capturable, its state made by
    then), every later step a replay. A capture that fails leaves one log line and the eager
    step for the rest of the run (nothing of a failed capture ran: the step runs again)."""

    def __init__(self, step: Callable[[torch.Tensor], None], optimizer: torch.optim.Optimizer,
                 device: torch.device) -> None:
        self.step, self.optimizer = step, optimizer
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self.static: dict[int, torch.Tensor] = {}
        self.replays: dict[int, Callable[[], None]] = {}
        self.eager_steps: Counter[int] = Counter()
        self.replayed: Counter[int] = Counter()  # steps through `replays` (a graph on CUDA)
        self.failed = False
        self.error = ""  # the failed capture's error, "Type: first line"

    def __call__(self, idx: torch.Tensor) -> None:
        size = idx.shape[0]
        static = self.static.get(size)
        if static is None:
            static = self.static[size] = torch.empty_like(idx)
        static.copy_(idx)  # on the device: no sync
        replay = self.replays.get(size)
        if replay is None and not self.failed and self.eager_steps[size] >= GRAPH_WARMUP:
            replay = self._capture(size, static)
        if replay is not None:
            replay()
            self.replayed[size] += 1
        else:
            self.eager_steps[size] += 1
            self._eager(static)

    def _capture(self, size: int, static: torch.Tensor) -> Callable[[], None] | None:
        self.optimizer.zero_grad(set_to_none=True)  # the graph's backward makes its own
        try:
            replay = capture_step(lambda: self.step(static), self.stream)
        except Exception as error:  # noqa: BLE001 (whatever refused the capture: run eagerly)
            self.failed = True
            while error.__context__ is not None:  # the first error, not ending the capture's
                error = error.__context__
            reason = (str(error).strip().splitlines() or [""])[0]
            self.error = f"{type(error).__name__}: {reason}"
            LOG.warning("cuda_graph: capturing the step failed (%s: %s); the eager step from "
                        "here on", type(error).__name__, reason)
            return None
        self.replays[size] = replay
        if self.stream is not None:
            LOG.info("cuda_graph: the step of batch size %d captured", size)
        return replay

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per batch size: whether a CUDA graph was captured (never on a CPU, where the
        graph-ready step runs eagerly), the steps replayed from it and the steps run eagerly
        (warm-up, after a failed capture, on a CPU)."""
        graphs = self.stream is not None
        return {str(size): {"captured": graphs and size in self.replays,
                            "replayed": self.replayed[size] if graphs else 0,
                            "eager": self.eager_steps[size] + (0 if graphs else
                                                               self.replayed[size])}
                for size in sorted(self.static)}

    def _eager(self, static: torch.Tensor) -> None:
        if self.stream is None:
            self.step(static)
            return
        current = torch.cuda.current_stream(self.stream.device)
        self.stream.wait_stream(current)
        with torch.cuda.stream(self.stream), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*capturable=True.*")
            self.step(static)
        current.wait_stream(self.stream)


def _record_test_loss(run: _Run, cfg: TrainConfig, options: RunOptions, step: int) -> None:
    if cfg.rules.train_mode_test_loss:
        loss = train_mode_test_loss(run.model, run.tx, run.ty, run.codes, cfg.batch_size)
    else:
        loss, _ = evaluate(run.model, run.tx, run.ty, run.codes, options.eval_batch_size)
    run.log.test_steps.append(step)
    run.log.test_loss.append(_as_list(loss))
    if run.stopper is not None:
        stopped = run.stopper.update(step, loss, run.model, run.optimizer)
        for i in stopped:
            LOG.info("early stopping: model %d stopped at step %d, set back to its best test "
                     "pass (step %d, loss %.4f)", i, step, run.stopper.best_step[i],
                     run.stopper.best_loss[i])


def _stop_at_end(run: _Run, options: RunOptions) -> None:
    """Early stopping's last test pass after the run's last step: the models still training
    set back to their best pass."""
    if run.stopper is None or run.stopper.all_stopped:
        return
    loss, _ = evaluate(run.model, run.tx, run.ty, run.codes, options.eval_batch_size)
    run.stopper.finish(run.steps_done, loss, run.model, run.optimizer)


def _account_loss(run: _Run, cfg: TrainConfig, progress: ProgressLog, step: int) -> None:
    """Log an entry of the loss window (the step summed its loss into it) or a progress line
    when due: the loop's sync points; otherwise nothing leaves the device."""
    rules = cfg.rules
    logged = _log_train_loss(run.log, rules, cfg.log_every, step, run.running)
    if logged is not None:
        run.running.zero_()  # in place: a graph's replays add into this tensor
        progress.report(step + 1, logged)
    elif progress.due():
        # steps summed in `running` since the last entry (see _log_train_loss)
        window = (step if rules.loss_window_ends_at_step else step + 1) % cfg.log_every
        progress.report(step + 1, float(to_host(run.running.mean())) / max(window, 1))


def _finals(run: _Run, cfg: TrainConfig, options: RunOptions, wall: float) -> dict[str, Any]:
    """Final losses and accuracies (the protocol's test loss, and eval mode on the test set)."""
    test_loss_eval, test_acc = evaluate(run.model, run.tx, run.ty, run.codes,
                                        options.eval_batch_size)
    paper = cfg.rules.train_mode_test_loss
    finals: dict[str, Any] = {
        "test_loss": list(run.log.test_loss[-1] if paper else _as_list(test_loss_eval)),
        "test_loss_eval": _as_list(test_loss_eval),
        "test_accuracy": _as_list(test_acc),
        "wall_time_s": wall,
        "steps_total": run.total,
        "steps_run": run.steps_done - run.start_step,
        # the step's graphs, one per batch size (0: eager); on a CPU none is captured, the
        # graph-ready step runs in its place (step_graph_sizes' `captured` says which)
        "step_graphs": run.step_graphs,
    }
    if options.cuda_graph:  # each batch size's capture and its steps; the failed capture's error
        finals["step_graph_sizes"], finals["step_graph_error"] = run.graph_sizes, run.graph_error
    if run.scaler is not None:  # the loss scale and steps since its last overflow
        finals["loss_scaler"] = run.scaler.state_dict()
    if run.stopper is not None:  # per model: best test pass, its loss, the pass it stopped at
        finals["early_stopping"] = {**run.stopper.summary(), "steps_done": run.steps_done}
    if options.final_train_eval:
        train_loss, train_acc = evaluate(run.model, run.x, run.y, run.codes,
                                         options.eval_batch_size)
        finals["train_loss_eval"] = _as_list(train_loss)
        finals["train_accuracy"] = _as_list(train_acc)
    return finals


def _log_train_loss(log: TrainLog, rules: Protocol, every: int, step: int,
                    running: torch.Tensor) -> float | None:
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
    return float(np.mean(log.train_loss[-1]))
