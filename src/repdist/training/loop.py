"""The training loop of every model here: synthetic MLPs and CIFAR ResNets, seeds stacked.

Adam on the mean NLL, under a protocol of `training.protocol`. All seeds share one batch order, as
in the original. A run resumed from its checkpoint ends as an uninterrupted one. Data, the batch
order and the loss window live on the device: values leave it (`to_host`) only when a log entry,
progress line, test pass or checkpoint is due, so a step never waits for the host."""

from __future__ import annotations

import functools
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
    """The index batches of a run, by its protocol; `full_batches`, `in_order`: clean only."""
    if cfg.rules.dataloader_order:
        if full_batches or in_order:
            raise ValueError("full batches and batches in order: only the clean protocol's batch "
                             "order has them (the paper protocol replays the original's loader)")
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
    """Mean NLL per model of one batch: a stack's fused `nll` where it has one, else log_probs'."""
    nll = getattr(model, "nll", None)
    if nll is None:
        return per_model_nll(model.log_probs(x, codes), labels)
    return nll(x, codes, labels)


@torch.no_grad()
def evaluate(model: torch.nn.Module, x: torch.Tensor, labels: torch.Tensor, codes: torch.Tensor,
             batch_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
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
def train_mode_test_loss(model: torch.nn.Module, x: torch.Tensor, labels: torch.Tensor,
                         codes: torch.Tensor, batch_size: int) -> np.ndarray:
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
    """How one run executes beyond what it trains; the defaults: CPU, eager, no checkpoint."""

    checkpoint: str | Path | None = None  # the checkpoint file; None: none
    device: str | torch.device = "cpu"
    eval_batch_size: int | None = None  # eval-mode batch size; None: all at once
    channels_last: bool = False  # images in channels-last memory format (CUDA)
    final_train_eval: bool = False  # an eval-mode pass over the training set at the end
    # on_step(done): called with 0 before training and after every step; a true return ends the
    # run there (finals as usual, `steps_run` says how many ran, the checkpoint as last written).
    on_step: Callable[[int], bool | None] | None = None
    identity: Mapping[str, Any] | None = None  # what the checkpoint must match besides cfg
    # objective(model, x, codes, labels, idx): a batch's per-model loss, `idx` indexing the
    # training set; None: the NLL of the labels.
    objective: Objective | None = None
    cuda_graph: bool = False  # replayed from CUDA graphs (_StepGraphs); a CPU runs it eagerly
    # Per-model early stopping on the clean protocol's test passes (give it the validation set).
    early_stopping: EarlyStopping | None = None
    resumables: Mapping[str, Resumable] = field(default_factory=dict)  # saved with checkpoints
    full_batches: bool = False  # every batch whole: a contrastive model's candidates are its batch
    in_order: bool = False  # never shuffled (the follow-up's CIFAR-100 teacher's DataLoader)
    # The loss scaled for float16 gradients by torch.amp.GradScaler, on the device: the fused
    # Adam takes the scale as a tensor and skips an overflowed step, so no host sync.
    loss_scaling: bool = False
    # lr x lr_factor(i) at step i (settings.EpochSchedule); such a run steps eagerly, since a
    # captured step keeps the rate it was captured with.
    lr_factor: Callable[[int], float] | None = None


@dataclass
class _Run:
    """A run in progress: its tensors on the device, optimiser, batch order and curves."""

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
    A checkpoint of another configuration is set aside, not resumed (training.checkpoint)."""
    keep_freed_memory()  # no page faults on every step's fresh buffers (see training.memory)
    run = _setup(model, data, cfg, options)
    _resume(run, options)
    model.train()
    if options.on_step is not None and run.start_step == 0:
        options.on_step(0)
    started = time.time()
    _loop(run, cfg, options)
    if run.stopper is not None and not run.stopper.all_stopped:  # the models still training
        loss, _ = evaluate(run.model, run.tx, run.ty, run.codes, options.eval_batch_size)
        run.stopper.finish(run.steps_done, loss, run.model, run.optimizer)  # set back to best
    return run.log, _finals(run, cfg, options, time.time() - started)


def _setup(model: torch.nn.Module, data: TrainData, cfg: TrainConfig, options: RunOptions) -> _Run:
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
    # Options recorded only when on, keeping other runs' identity. Channels-last state resumed
    # contiguous would mix layouts (a CPU kernel pairing tensors by memory updates wrong elements).
    flags = ("full_batches", "in_order", "loss_scaling")
    identity = {**(options.identity or {}), "training": cfg.identity(),
                **({"memory_format": "channels_last"} if options.channels_last else {}),
                **_stopping_identity(cfg, options),
                **{flag: True for flag in flags if getattr(options, flag)}}
    batches = batch_order(cfg, len(x), options.full_batches, options.in_order)
    order = batches.on_device(device)  # the run's one copy of its batch order
    graphed = options.cuda_graph and device.type == "cuda" and options.lr_factor is None
    optimizer = make_adam(model, cfg.lr, capturable=graphed)
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
    """Early stopping's patience, for the checkpoint identity (only when the run stops early)."""
    if options.early_stopping is None:
        return {}
    if cfg.rules.test_pass_after_update:
        raise ValueError("early stopping reads the clean protocol's test passes (eval mode, "
                         f"before the step), not the {cfg.protocol} protocol's")
    return {"early_stopping": {"patience": options.early_stopping.patience}}


def _resume(run: _Run, options: RunOptions) -> None:
    state = load_resumable(options.checkpoint, run.identity, run.total, map_location=run.x.device)
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
    stopper = {"early_stopping": run.stopper} if run.stopper is not None else {}
    scaler = {"grad_scaler": run.scaler} if run.scaler is not None else {}
    return {**options.resumables, **stopper, **scaler}


def _load_optimizer(optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """Load Adam's state, keeping this run's `capturable` (torch would take the checkpoint's),
    so an eager run's checkpoint resumes in a graphed run and back."""
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
            for group in run.optimizer.param_groups:  # a float: the step runs eagerly
                group["lr"] = cfg.lr * options.lr_factor(step)
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
    step = functools.partial(_train_step, run, options.objective)
    if options.cuda_graph and options.lr_factor is not None:
        LOG.info("cuda_graph: off: the learning-rate schedule changes the rate between steps")
    if not options.cuda_graph or options.lr_factor is not None:
        return step
    device = run.x.device
    if device.type == "cuda":
        LOG.info("cuda_graph: the step is captured after %d eager steps of each batch size and "
                 "replayed", GRAPH_WARMUP)
    else:
        LOG.info("cuda_graph: nothing to capture on %s; the graph-ready step runs eagerly", device)
    return _StepGraphs(step, run.optimizer, device)


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
    short last batch has its own): indices copied into a static buffer, GRAPH_WARMUP eager steps
    on the side stream that then captures (Adam's state made by then), later steps replayed. A
    failed capture logs once and the step runs eagerly from then on (it ran nothing)."""

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
        """Per batch size: whether a CUDA graph was captured (never on a CPU), the steps
        replayed from it and the steps run eagerly (warm-up, after a failed capture, on a CPU)."""
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
        for i in run.stopper.update(step, loss, run.model, run.optimizer):
            LOG.info("early stopping: model %d stopped at step %d, set back to its best test "
                     "pass (step %d, loss %.4f)", i, step, run.stopper.best_step[i],
                     run.stopper.best_loss[i])


def _account_loss(run: _Run, cfg: TrainConfig, progress: ProgressLog, step: int) -> None:
    """Log an entry of the loss window or a progress line when due: the loop's sync points."""
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
        "step_graphs": run.step_graphs,  # one per batch size; a CPU replays the eager step
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
    """Append a training-loss entry when one is due; return the stack's mean of it. paper: at
    step i with i % every == 0, the mean over steps i - every + 1 .. i (step 0: its own loss),
    as the original; clean: at done = i + 1 with done % every == 0, the mean over the `every`
    steps before it, plus step 0's loss at 0."""
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
