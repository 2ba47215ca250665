"""The speed matrix of `make gpu-check`: each candidate way of training the paper's jobs on a GPU.
repdist_gpucheck.check runs it in worker processes. Each candidate gets numerical checks against
its family's reference path, and its steps/s over a timed window. `--child` runs one of several
concurrent processes of a job (the slots-per-GPU candidates).

Everything runs under the host-copy guard (repdist.io.host), so the toy run on a CPU fails where a
GPU run would: on a tensor reaching numpy other than through to_host."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

import repdist.training.loop as loop_module
from repdist.data.cifar10 import normalise
from repdist.data.radial import label_codes, make_radial
from repdist.experiments.cifar.training import CifarModelConfig, cifar_stack, resolve_bn_momentum
from repdist.io.host import host_copies_guarded
from repdist.measures.compare import compare
from repdist.models.extract import extract
from repdist.models.mlp import build_synthetic_model
from repdist.models.stacked import StackedModelClass
from repdist.training.devices import set_cuda_float32, set_cudnn_benchmark
from repdist.training.loop import RunOptions, TrainData, train
from repdist_dev.checkout import ROOT, train_config
from repdist_gpucheck.record import Candidate, Check, GraphSize

# The families, each one training job as the pipeline runs it on a GPU (GPU_SIZE): synthetic, the
# four length-fixing variants x 20 seeds (80 MLPs) stacked; cifar, the 10 seeds of an M stacked.
# A synthetic step is launch-bound (about the same at every width), so the paper's grid (1,360
# models) extrapolates as 20 such jobs; cifar's 30 models from the model-steps/s.
PAPER = {"cifar_models": 30, "cifar_steps": 20_319, "grid_jobs": 20, "grid_models": 1_360,
         "grid_steps": 15_072}
TOY_PROCESSES = 2  # the toy run's concurrent processes at most (a CPU of few cores)
TOY_SLACK = 4.0  # the toy run's slices are this many times a GPU's (a shared CPU is slow)
ROUNDING_FACTOR = 3.0  # a candidate within 3x the rounding baseline is "no farther"
FLOAT64_TOL = 1e-10  # relative, after the float64 check's steps
VARIANTS = ((0, 0), (0, 20), (20, 0), (20, 20))  # (fix_g, fix_f) of the grid
REP_DIMS = (2, 3, 5)  # the paper's M: the CIFAR jobs of the three M, the stack across them


@dataclass(frozen=True)
class Size:
    """One family's job, its checks and warm-up, at GPU or toy scale."""

    synthetic: dict[str, Any]
    cifar: dict[str, Any]
    skip: int  # warm-up steps before the timed window


GPU_SIZE = Size(
    synthetic={"K": 18, "width": 128, "variants": VARIANTS, "seeds": 20, "n_train": 20_000,
               "n_test": 2_000, "check_steps": 100, "check64": {"steps": 30}},
    cifar={"seeds": 10, "base_width": 64, "batch_size": 32, "n_train": 50_000, "n_test": 512,
           "check_steps": 30, "quality_steps": 200,
           "check64": {"seeds": 2, "base_width": 16, "steps": 8}},
    skip=30)
TOY_SIZE = Size(
    synthetic={"K": 4, "width": 8, "variants": VARIANTS[::3], "seeds": 2, "n_train": 2_000,
               "n_test": 200, "check_steps": 20, "check64": {"steps": 10}},
    cifar={"seeds": 3, "base_width": 2, "batch_size": 8, "n_train": 128, "n_test": 48,
           "check_steps": 3, "quality_steps": 6,
           "check64": {"seeds": 2, "base_width": 2, "steps": 2}},
    skip=2)
WRONG_LR = 1.02  # `wrong:NAME`: a negative control its checks must mark FAILS (lr x 1.02)


@dataclass(frozen=True)
class Spec:
    """A candidate: how it differs from its family's reference (`options`), what config key
    selects it, whether its arithmetic is the reference's (then a float64 check too), how it is
    judged (`rounding`, or `measures` for a precision of its own), which part runs it (`speed`,
    or `compile`: a second command, its minutes of compiling apart)."""

    name: str
    family: str
    key: str
    options: dict[str, Any] = field(default_factory=dict)
    processes: int = 1
    exact: bool = False
    extra_s: float = 25.0  # its time slice beyond the timed window (checks, start, warm-up)
    part: str = "speed"
    judge: str = "rounding"

    @property
    def reference(self) -> str:
        return "" if self.is_reference else REFERENCES[self.family]

    @property
    def is_reference(self) -> bool:
        return self.name == REFERENCES[self.family]

    @property
    def needs_graph(self) -> bool:
        return bool(self.options.get("cuda_graph"))


REFERENCES = {"synthetic": "synthetic.eager", "cifar": "cifar.stacked"}  # today's paths
GRAPH = {"cuda_graph": True}
# In the order they run, as the part's slice cuts the end first: the references, the CUDA graphs
# (a launch-bound step), what no record has decided yet by what it can gain, then what the first
# record decided. torch.compile's minutes of compiling are the second command's (`--parts
# compile`). The options of UNDECIDED have no config key: their specs turn them on.
SPECS = [
    Spec("synthetic.eager", "synthetic", "", extra_s=20),
    Spec("cifar.stacked", "cifar", "", extra_s=30),
    Spec("synthetic.cuda_graph", "synthetic", "synthetic.cuda_graph: true", GRAPH, exact=True,
         extra_s=20),
    Spec("cifar.cuda_graph", "cifar", "cifar10.cuda_graph: true", GRAPH, exact=True),
    Spec("cifar.stack30", "cifar", "cifar10.stack_across_m: true (the three M's 30 models), "
         "graphed", {"stack_across_m": True, **GRAPH}, exact=True, extra_s=30),
    Spec("cifar.cudnn_benchmark", "cifar", "cudnn_benchmark (no key yet), graphed",
         {"cudnn_benchmark": True, **GRAPH}, extra_s=30),
    Spec("cifar.fp16", "cifar", "fp16 with loss scaling (no key yet), graphed",
         {"fp16": True, **GRAPH}, extra_s=40, judge="measures"),
    Spec("synthetic.slots4", "synthetic", "gpu_slots_per_gpu: 4", processes=4, extra_s=30),
    Spec("synthetic.cuda_graph.slots4", "synthetic",
         "synthetic.cuda_graph: true, gpu_slots_per_gpu: 4", GRAPH, processes=4, extra_s=30),
    Spec("cifar.jobs3", "cifar", "gpu_slots_per_gpu: 3 (the three M at once)", processes=3,
         extra_s=35),
    Spec("synthetic.slots2", "synthetic", "gpu_slots_per_gpu: 2", processes=2),
    Spec("cifar.no_channels_last", "cifar", "cifar10.channels_last: false",
         {"channels_last": False}, exact=True),
    Spec("cifar.compile.elementwise", "cifar", "compile: elementwise (no key yet), graphed",
         {"compile": "elementwise", **GRAPH}, extra_s=110, part="compile"),
    Spec("cifar.compile.default", "cifar", "compile: default (no key yet)",
         {"compile": "default"}, extra_s=110, part="compile"),
    Spec("cifar.compile.reduce-overhead", "cifar", "compile: reduce-overhead (no key yet)",
         {"compile": "reduce-overhead"}, extra_s=110, part="compile"),
    Spec("cifar.compile.max-autotune-no-cudagraphs", "cifar",
         "compile: max-autotune-no-cudagraphs (no key yet)",
         {"compile": "max-autotune-no-cudagraphs"}, extra_s=170, part="compile"),
]
BY_NAME = {s.name: s for s in SPECS}


@dataclass(frozen=True)
class Undecided:
    """An option no record has decided: no config key holds it until one does (docs/gpu.md,
    "Options to be timed"). `candidates` are the specs that time it; `command` times it on
    a GPU machine."""

    option: str
    does: str
    candidates: tuple[str, ...]
    command: str


SPEED = "bash .gpu-bundle/run.sh check --parts speed --only cifar.stacked,cifar.cuda_graph,"
UNDECIDED = (
    Undecided("fp16", "float16 autocast for f, the loss scaled on the device", ("cifar.fp16",),
              SPEED + "cifar.fp16"),
    Undecided("compile", "torch.compile of the ResNet trunk in one of four modes",
              tuple(s.name for s in SPECS if s.part == "compile"),
              "bash .gpu-bundle/run.sh check --parts compile"),
    Undecided("cudnn_benchmark", "cuDNN times every algorithm of each convolution",
              ("cifar.cudnn_benchmark",), SPEED + "cifar.cudnn_benchmark"),
    Undecided("stack: vmap", "the follow-up's CIFAR-100 ResNets as one batched network", (),
              "python benchmarks/follow_up_stack.py --device cuda"),
)


def part_names(part: str, only: list[str] | None = None) -> list[str]:
    """The candidates a part runs, in order (`only`: those of them named); the compile part
    times its family's reference first, for its speed-ups in the same record."""
    names = [s.name for s in SPECS if s.part == part and (not only or s.name in only)]
    if part == "compile" and names:
        names.insert(0, REFERENCES["cifar"])
    return names


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@lru_cache(maxsize=4)
def synthetic_data(k: int, n_train: int, n_test: int) -> TrainData:
    train_d, test_d = make_radial(n_train, k, 0), make_radial(n_test, k, 1)
    return TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels,
                     label_codes(np.arange(k), k))


@lru_cache(maxsize=2)
def cifar_data(n_train: int, n_test: int) -> TrainData:
    """Random images in CIFAR-10's format (the stand-in's kind: a step costs what it costs on
    the real images), normalised as the pipeline does."""
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n_train + n_test, 3, 32, 32), dtype=np.uint8)
    labels = rng.integers(0, 10, n_train + n_test)
    x = normalise(images)
    return TrainData(x[:n_train], labels[:n_train], x[n_train:], labels[n_train:],
                     label_codes(np.arange(10), 10))


@dataclass
class Job:
    """A family's training job, built for one run: model, data, settings."""

    model: torch.nn.Module
    data: TrainData
    options: RunOptions
    batch_size: int
    models: int  # models in the stack
    compare: int  # the first this many models are compared with the reference's
    lr_scale: float = 1.0  # WRONG_LR for the negative control, else 1

    def config(self, steps: int, family: str):
        section = "synthetic" if family == "synthetic" else "cifar10"
        lr = {"lr": train_config(section).lr * self.lr_scale} if self.lr_scale != 1 else {}
        return train_config(section, steps=steps, batch_size=self.batch_size, eval_every=10**9,
                            checkpoint_every=0, protocol="clean", **lr)


def build_job(family: str, options: dict[str, Any], size: Size, device: torch.device,
              dtype: torch.dtype = torch.float32, rep_dim: int = 2, small: bool = False) -> Job:
    """The family's job with a candidate's `options`, in `dtype` (`small`: the float64 check's
    size)."""
    graph = {"cuda_graph": True} if options.get("cuda_graph") else {}
    scaled = {"loss_scaling": True} if options.get("fp16") else {}
    scale = float(options.get("lr_scale", 1.0))
    if family == "synthetic":
        s = size.synthetic
        models = [build_synthetic_model(seed, s["K"], s["width"], 2, g, f)
                  for g, f in s["variants"] for seed in range(s["seeds"])]
        stack = StackedModelClass(models).to(dtype)
        cfg_batch = train_config("synthetic").batch_size
        return Job(stack, synthetic_data(s["K"], s["n_train"], s["n_test"]),
                   RunOptions(device=device, **graph), cfg_batch, len(models), len(models),
                   scale)
    c = size.cifar
    base, seeds = (c["check64"]["base_width"], c["check64"]["seeds"]) if small else (
        c["base_width"], c["seeds"])
    # the stack across M: M = 2, 3, 5's seeds, M-major (its first models are the reference's)
    dims = (rep_dim, *[m for m in REP_DIMS if m != rep_dim]) if options.get(
        "stack_across_m") else rep_dim
    stack, channels_last = cifar_job_stack(options, device, dtype, dims, base, seeds)
    run = RunOptions(device=device, eval_batch_size=64, channels_last=channels_last, **graph,
                     **scaled)
    return Job(stack, cifar_data(c["n_train"], c["n_test"]), run, c["batch_size"],
               stack.num_models, seeds, scale)


def cifar_job_stack(options: dict[str, Any], device: torch.device, dtype: torch.dtype,
                    rep_dim: int | tuple[int, ...], base: int, seeds: int
                    ) -> tuple[torch.nn.Module, bool]:
    """The CIFAR stack of `seeds` seeds at `rep_dim` (one M, or several: the stack across M)
    as config cifar10 builds it, with a candidate's options turned on (undecided_options);
    whether its images are channels-last."""
    on_cuda = device.type == "cuda"
    cfg = CifarModelConfig(rep_dim=rep_dim, seeds=list(range(seeds)), base_width=base,
                           g_width=128, bn_momentum="protocol", device=device.type,
                           tf32="convolutions",
                           channels_last=bool(options.get("channels_last", True)),
                           eval_batch_size=64, cuda_graph=bool(options.get("cuda_graph")))
    if on_cuda:
        set_cuda_float32(cfg.tf32)
        set_cudnn_benchmark(bool(options.get("cudnn_benchmark")))
    stack = cifar_stack(cfg, resolve_bn_momentum(cfg.bn_momentum, "paper"))
    undecided_options(stack, options, on_cuda, dtype)
    return stack.to(dtype), cfg.channels_last and on_cuda


def undecided_options(stack: StackedModelClass, options: dict[str, Any], on_cuda: bool,
                      dtype: torch.dtype) -> None:
    """Turn on in `stack` what a candidate's options ask and no config key holds (UNDECIDED):
    float16 autocast of f (`fp16`; on a CPU too, the toy run's stand-in for CUDA's), and a
    torch.compile mode of its trunk (`compile`, float32 only; on a CPU traced only)."""
    if options.get("fp16"):
        stack.f_net.autocast_dtype = torch.float16
    mode = options.get("compile", "none") if dtype == torch.float32 else "none"
    stack.f_net.compile_body(mode, backend=None if on_cuda else "eager")


class ReversedBatch(torch.nn.Module):
    """The same model with each batch's rows in reverse order: the loss, BatchNorm's batch
    statistics and every gradient are the same sums in another order (the rounding baseline)."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def nll(self, x, codes, labels):  # noqa: ANN001, ANN201
        return self.inner.nll(x.flip(0), codes, labels.flip(0))

    def log_probs(self, x, codes):  # noqa: ANN001, ANN201
        return self.inner.log_probs(x, codes)


def model_states(model: torch.nn.Module, count: int) -> list[torch.Tensor]:
    """The first `count` models' parameters and buffers, each one float64 vector on the CPU."""
    out = []
    for i in range(count):
        state = model.state_dict_of(i)
        out.append(torch.cat([v.detach().double().flatten().cpu()
                              for v in state.values() if v.is_floating_point()]))
    return out


def distance(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """The largest relative distance between corresponding models (NaN counts as infinite)."""
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        d = float((x - y).norm() / max(float(y.norm()), 1e-300))
        worst = max(worst, d if d == d else float("inf"))
    return worst


@dataclass(frozen=True)
class Run:
    """A check's training run: in `dtype`, at the float64 check's small size or not, `steps`
    (None: the check's own), each batch reversed (the rounding baseline) or not."""

    dtype: torch.dtype = torch.float32
    small: bool = False
    steps: int | None = None
    reversed_batch: bool = False

    def name(self, family: str) -> str:
        return (f"{family}-{str(self.dtype).split('.')[-1]}{'-small' if self.small else ''}"
                f"-{self.steps or 'check'}{'-reversed' if self.reversed_batch else ''}")


def trained(family: str, options: dict[str, Any], size: Size, device: torch.device,
            run: Run) -> tuple[Job, dict[str, Any]]:
    """The job trained from its initialisation as `run` says; its finals."""
    job = build_job(family, options, size, device, run.dtype, small=run.small)
    sizes = size.synthetic if family == "synthetic" else size.cifar
    steps = run.steps or (sizes["check64"]["steps"] if run.small else sizes["check_steps"])
    model = ReversedBatch(job.model) if run.reversed_batch else job.model
    _, finals = train(model, job.data, job.config(steps, family), job.options)
    sync(device)
    return job, finals


def check_run(family: str, options: dict[str, Any], size: Size, device: torch.device,
              dtype: torch.dtype, reversed_batch: bool = False) -> list[torch.Tensor]:
    """Train the check's steps from the initialisation (float64 at the small size); the
    compared models' states."""
    job, _ = trained(family, options, size, device,
                     Run(dtype, dtype == torch.float64, reversed_batch=reversed_batch))
    return model_states(job.model, job.compare)


def representations(job: Job) -> list[tuple[np.ndarray, np.ndarray]]:
    """(f, g) of each compared model on the job's held-out inputs and its labels."""
    f, g = extract(job.model, job.data.test_x, job.data.codes, job.options.eval_batch_size,
                   job.options.channels_last)
    return [(f[i], g[i]) for i in range(job.compare)]


def paper_run(job: Job, family: str, on_step: Callable[[int], bool]) -> dict[str, Any]:
    """The job trained for the paper's steps (a window's `on_step` ends it early); its
    finals."""
    total = PAPER["grid_steps"] if family == "synthetic" else PAPER["cifar_steps"]
    _, finals = train(job.model, job.data, job.config(total, family),
                      replace(job.options, on_step=on_step))
    return finals


# Steps are timed after `skip` warm-up steps (cuDNN's choices, compilation, graph capture), in the
# clean protocol, with no test passes. This is `make bench-gpu`'s baseline; the paper protocol adds
# a train-mode test pass every 2,000 steps.
def timed_rate(job: Job, family: str, device: torch.device, seconds: float, skip: int,
               barrier: Callable[[], None] | None = None) -> tuple[int, float, dict[str, Any]]:
    """Steps and seconds of a window of `seconds` after `skip` warm-up steps (synchronised at
    both ends; `barrier` is called at the window's start, e.g. to wait for other processes),
    and the run's finals (which say how each batch size's CUDA graph went)."""
    marks: dict[str, float] = {}

    def on_step(done: int) -> bool:
        if done == skip:
            sync(device)
            if barrier is not None:
                barrier()
            marks["t0"], marks["d0"] = time.perf_counter(), done
        elif "t0" in marks and time.perf_counter() - marks["t0"] >= seconds:
            sync(device)
            marks["t1"], marks["d1"] = time.perf_counter(), done
            return True  # the run ends here
        return False

    finals = paper_run(job, family, on_step)
    if "t1" not in marks:
        raise RuntimeError(f"the job ended ({finals['steps_total']} steps) before the timed "
                           "window did")
    return int(marks["d1"] - marks["d0"]), marks["t1"] - marks["t0"], finals


def paper_minutes(family: str, model_steps_per_s: float, job_steps_per_s: float) -> float:
    if family == "cifar":
        return PAPER["cifar_models"] * PAPER["cifar_steps"] / model_steps_per_s / 60
    return PAPER["grid_jobs"] * PAPER["grid_steps"] / job_steps_per_s / 60


PAPER_NOTE = {
    "cifar": "30 models x 20,319 steps at these model-steps/s",
    "synthetic": "the grid's 20 jobs x 15,072 steps at this job's steps/s (a step costs about "
                 "the same at every width on a GPU)",
}


class InvalidBaseline(ValueError):
    """The family's rounding baseline is not finite and > 0: no rounding check is judged."""


class References:
    """The reference runs' states (and held-out representations), computed once per family and
    run, kept on disk so that a worker started again after a candidate overran finds them."""

    def __init__(self, folder: Path, size: Size, device: torch.device) -> None:
        self.folder, self.size, self.device = folder, size, device

    def get(self, family: str, run: Run) -> list[torch.Tensor]:
        path = self.folder / f"{run.name(family)}.pt"
        if path.exists():
            return torch.load(path)
        job, _ = trained(family, {}, self.size, self.device, run)
        states = model_states(job.model, job.compare)
        torch.save(states, path)
        return states

    def representations(self, family: str, steps: int) -> list[tuple[np.ndarray, np.ndarray]]:
        path = self.folder / f"{Run(steps=steps).name(family)}-representations.pt"
        if path.exists():
            return torch.load(path, weights_only=False)
        job, _ = trained(family, {}, self.size, self.device, Run(steps=steps))
        reps = representations(job)
        torch.save(reps, path)
        return reps

    def baseline(self, family: str) -> float:
        return distance(self.get(family, Run(reversed_batch=True)), self.get(family, Run()))


def faults() -> dict[str, set[str]]:
    """REPDIST_GPU_CHECK_INJECT ("capture:NAME,wrong:NAME"): the candidates broken on purpose."""
    out: dict[str, set[str]] = {"capture": set(), "wrong": set()}
    for item in filter(None, os.environ.get("REPDIST_GPU_CHECK_INJECT", "").split(",")):
        kind, _, name = item.partition(":")
        if kind not in out or name not in BY_NAME:
            raise ValueError(f"--inject {item!r}: expected capture:NAME or wrong:NAME with a "
                             f"candidate's name")
        out[kind].add(name)
    return out


@contextmanager
def injected(spec: Spec) -> Iterator[Spec]:
    """`spec` as the injected faults make it: `wrong` raises its learning rate, `capture` makes
    every CUDA-graph capture fail while it runs."""
    found = faults()
    if spec.name in found["wrong"]:
        spec = replace(spec, options={**spec.options, "lr_scale": WRONG_LR})
    if spec.name not in found["capture"]:
        yield spec
        return

    def refuse(step: Callable[[], None], stream: Any) -> Callable[[], None]:
        raise RuntimeError("capture refused on purpose (--inject capture)")

    real, loop_module.capture_step = loop_module.capture_step, refuse
    try:
        yield spec
    finally:
        loop_module.capture_step = real


def new_row(spec: Spec, status: str, note: str = "") -> Candidate:
    """The candidate's row before anything is measured."""
    return Candidate(name=spec.name, family=spec.family, key=spec.key, reference=spec.reference,
                     status=status, seconds=0.0, processes=spec.processes, models_per_job=0,
                     steps_timed=None, seconds_timed=None, steps_per_s=None,
                     model_steps_per_s=None, paper_minutes=None,
                     paper_note=PAPER_NOTE[spec.family], note=note)


def run_spec(spec: Spec, size: Size, device: torch.device, refs: References, seconds: float,
             toy: bool) -> Candidate:
    """Check and time one candidate; its record row."""
    start = time.perf_counter()
    row, notes = new_row(spec, "ok"), toy_notes(spec, toy)
    try:
        row.checks, finals = checks_of(spec, size, device, refs)
    except InvalidBaseline as err:
        row.status, row.checks, finals = "invalid", [], []
        notes.append(str(err))
    if spec.processes == 1:
        job = build_job(spec.family, spec.options, size, device)
        steps, wall, timed = timed_rate(job, spec.family, device, seconds, size.skip)
        rate, aggregate_jobs, models = steps / wall, steps / wall, job.models
        graph_finals = [timed]
        del job
    else:
        steps, wall, rate, aggregate_jobs, models, graph_finals = concurrent(
            spec, size, device, seconds, toy)
    if spec.needs_graph:
        graph_outcome(row, [*graph_finals, *finals], device, notes)
    row.models_per_job, row.steps_timed, row.seconds_timed = models, steps, wall
    row.steps_per_s = rate
    row.model_steps_per_s = aggregate_jobs * models
    row.paper_minutes = paper_minutes(spec.family, row.model_steps_per_s, aggregate_jobs)
    row.note = "; ".join(notes)
    row.seconds = time.perf_counter() - start
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return row


def toy_notes(spec: Spec, toy: bool) -> list[str]:
    """What the toy run on a CPU does instead of a GPU's."""
    notes = []
    if toy and spec.options.get("compile", "none") != "none":
        notes.append("toy: traced with backend eager, not compiled")
    if toy and spec.options.get("fp16"):
        notes.append("toy: float16 autocast on the CPU, the loss scaled there")
    if toy and spec.options.get("cudnn_benchmark"):
        notes.append("toy: no cuDNN on a CPU (the reference's arithmetic)")
    if toy and spec.processes > TOY_PROCESSES:
        notes.append(f"toy: {TOY_PROCESSES} processes, not {spec.processes}")
    return notes


def graph_outcome(row: Candidate, finals: list[dict[str, Any]], device: torch.device,
                  notes: list[str]) -> None:
    """A CUDA-graph row's captures: each batch size of the timed run (the first process's), and
    `fallback` when any run's capture failed or, on CUDA, a batch size was never captured."""
    timed = finals[0].get("step_graph_sizes", {})
    row.graphs = {size: GraphSize(**v) for size, v in timed.items()}
    errors = [f["step_graph_error"] for f in finals if f.get("step_graph_error")]
    never = [size for size, g in row.graphs.items() if not g.captured]
    if errors:
        row.status, row.capture_error = "fallback", errors[0]
        notes.append("a capture failed: the eager step was timed, not the graph")
    elif device.type == "cuda" and never:
        row.status = "fallback"
        notes.append(f"batch size {', '.join(never)} never captured: not the graph's timing")
    elif device.type != "cuda":
        notes.append("toy: nothing is captured on a CPU (the graph-ready step ran eagerly)")


# The checks, from the same initialisation on the same batches. `rounding` compares parameters
# after `check_steps` steps with the reference's, within ROUNDING_FACTOR times the rounding
# baseline: the reference again with each batch's rows reversed (the same sums in another order).
# `float64`, for a candidate with the reference's arithmetic: the same at a small size.
def checks_of(spec: Spec, size: Size, device: torch.device, refs: References
              ) -> tuple[list[Check], list[dict[str, Any]]]:
    """The candidate's checks, and the finals of its own check runs (a CUDA-graph candidate's
    captures). InvalidBaseline where the baseline is not finite and > 0."""
    sizes = size.synthetic if spec.family == "synthetic" else size.cifar
    steps32, steps64 = sizes["check_steps"], sizes["check64"]["steps"]
    if spec.judge == "measures":
        return [*measures_checks(spec, size, device, refs)], []
    baseline = refs.baseline(spec.family)
    if not (math.isfinite(baseline) and baseline > 0):
        raise InvalidBaseline(f"the rounding baseline is {baseline:g}, not finite and > 0: "
                              "no rounding check of this family can be judged")
    if spec.is_reference:
        refs.get(spec.family, Run(torch.float64, small=True))
        return [Check("baseline", steps32, None, baseline, None, None,
                      "this reference against itself with each batch reversed")], []
    if spec.processes > 1:
        return [Check("none", 0, None, None, None, None,
                      "each process runs the reference's own job")], []
    job, finals = trained(spec.family, spec.options, size, device, Run())
    d = distance(model_states(job.model, job.compare), refs.get(spec.family, Run()))
    tol = ROUNDING_FACTOR * baseline
    out, runs = [Check("rounding", steps32, d, baseline, tol, d <= tol)], [finals]
    if spec.exact:
        run64 = Run(torch.float64, small=True)
        job, finals = trained(spec.family, spec.options, size, device, run64)
        d = distance(model_states(job.model, job.compare), refs.get(spec.family, run64))
        out.append(Check("float64", steps64, d, None, FLOAT64_TOL, d <= FLOAT64_TOL))
        runs.append(finals)
    return out, runs


def measures_checks(spec: Spec, size: Size, device: torch.device, refs: References
                    ) -> list[Check]:
    """A precision of its own (fp16: reordering noise is no yardstick), judged by what a user
    of the models sees: each seed trained `quality_steps` by the candidate against the same seed
    by the reference (KL, d_LLV, m_CCA of f on held-out inputs) beside the nearest two seeds of
    the reference; and how far it lands from float64 at the small size beside float32
    (informational)."""
    steps = (size.synthetic if spec.family == "synthetic" else size.cifar)["quality_steps"]
    ours, _ = trained(spec.family, spec.options, size, device, Run(steps=steps))
    cand, ref = representations(ours), refs.representations(spec.family, steps)
    wanted = "kl,d_llv,mcca_f"
    same = [compare(*cand[i], *ref[i], measures=wanted) for i in range(len(ref))]
    seeds = [compare(*ref[i], *ref[j], measures=wanted)
             for i, j in itertools.combinations(range(len(ref)), 2)]
    values = {"kl": max(r["kl"] for r in same), "d_llv": max(r["d_llv"] for r in same),
              "mcca_f": min(r["mcca_f"] for r in same),
              "kl_seeds": min(r["kl"] for r in seeds),
              "d_llv_seeds": min(r["d_llv"] for r in seeds),
              "mcca_f_seeds": max(r["mcca_f"] for r in seeds)}
    passes = values["kl"] < values["kl_seeds"] and values["d_llv"] < values["d_llv_seeds"]
    judged = Check("measures", steps, values["d_llv"], values["d_llv_seeds"],
                   values["d_llv_seeds"], passes, f"{len(ref)} seeds, {len(seeds)} seed pairs",
                   {k: float(v) for k, v in values.items()})
    small64, small32 = Run(torch.float64, small=True), Run(small=True)
    job, _ = trained(spec.family, spec.options, size, device, small32)
    exact = refs.get(spec.family, small64)
    sizes = size.synthetic if spec.family == "synthetic" else size.cifar
    informational = Check(
        "float64", sizes["check64"]["steps"],
        distance(model_states(job.model, job.compare), exact),
        distance(refs.get(spec.family, small32), exact), None, None,
        "its distance from float64 at the small size, beside float32's (informational)")
    return [judged, informational]


def concurrent(spec: Spec, size: Size, device: torch.device, seconds: float, toy: bool
               ) -> tuple[int, float, float, float, int, list[dict[str, Any]]]:
    """`spec.processes` processes of the job at once (for CIFAR, the three M = 2, 3, 5), each
    timed over the same window; (steps, seconds, mean steps/s a process, job-steps/s of all
    together, models a job, each process's graph finals)."""
    folder = Path(os.environ.get("REPDIST_GPU_CHECK_STATE", "/tmp"))
    gate = folder / f"gate-{spec.name}-{os.getpid()}"
    gate.mkdir(parents=True, exist_ok=True)
    procs, count = [], min(spec.processes, TOY_PROCESSES) if toy else spec.processes
    for i in range(count):
        rep_dim = REP_DIMS[i % 3] if spec.family == "cifar" else 2
        args = {"spec": spec.name, "index": i, "count": count, "gate": str(gate),
                "rep_dim": rep_dim, "seconds": seconds, "toy": toy, "device": str(device)}
        procs.append(subprocess.Popen([sys.executable, "-m", __spec__.name, "--child",
                                       json.dumps(args)],
                                      stdout=subprocess.PIPE, text=True))
    results = []
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"a concurrent process of {spec.name} failed (exit "
                               f"{p.returncode})")
        results.append(json.loads(out.strip().splitlines()[-1]))
    rates = [r["steps"] / r["seconds"] for r in results]
    return (sum(r["steps"] for r in results), max(r["seconds"] for r in results),
            float(np.mean(rates)), float(sum(rates)), results[0]["models"],
            [r["graphs"] for r in results])


def child(args: dict[str, Any]) -> None:
    """One of several concurrent processes: build, warm up, wait for the others, time."""
    size = TOY_SIZE if args["toy"] else GPU_SIZE
    device = torch.device(args["device"])
    with injected(BY_NAME[args["spec"]]) as spec:
        job = build_job(spec.family, spec.options, size, device, rep_dim=args["rep_dim"])
        gate = Path(args["gate"])

        def barrier() -> None:
            (gate / f"ready-{args['index']}").touch()
            deadline = time.time() + 300
            while len(list(gate.glob("ready-*"))) < args["count"]:
                if time.time() > deadline:
                    raise RuntimeError("the other processes never became ready")
                time.sleep(0.01)

        steps, wall, finals = timed_rate(job, spec.family, device, args["seconds"], size.skip,
                                         barrier)
    graphs = {k: finals[k] for k in ("step_graph_sizes", "step_graph_error") if k in finals}
    print(json.dumps({"steps": steps, "seconds": wall, "models": job.models,
                      "graphs": graphs}), flush=True)


def worker(names: list[str], results: Path, state: Path, seconds: float, toy: bool,
           device: torch.device) -> None:
    """Run candidates in turn, appending to `results` (JSON lines) a start event before each
    and its row after it, so the caller can cut one short and go on with the rest."""
    os.environ["REPDIST_GPU_CHECK_STATE"] = str(state)
    size = TOY_SIZE if toy else GPU_SIZE
    refs = References(state, size, device)

    def emit(event: dict[str, Any]) -> None:
        with results.open("a") as handle:
            handle.write(json.dumps(event) + "\n")

    for name in names:
        emit({"event": "start", "name": name, "time": time.time()})
        try:
            with injected(BY_NAME[name]) as spec:
                row = run_spec(spec, size, device, refs, seconds, toy)
        except Exception as err:  # noqa: BLE001 - the row says what went wrong, the rest go on
            traceback.print_exc()
            row = new_row(BY_NAME[name], "failed", f"{type(err).__name__}: {str(err)[:400]}")
        print(f"gpu-check: {name}: {row.status}, {row.steps_per_s or 0:.1f} steps/s",
              flush=True)
        emit({"event": "done", "candidate": dataclasses.asdict(row)})
        if row.status == "failed" and device.type == "cuda":
            sys.exit(3)  # a CUDA error can leave the context unusable: the rest in a new process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help="internal: one concurrent process (JSON arguments)")
    parser.add_argument("--names", help="comma-separated candidates to run in turn")
    parser.add_argument("--results", type=Path)
    parser.add_argument("--state", type=Path)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--toy", action="store_true")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    from repdist.pipeline.subnormals import flush_subnormals

    flush_subnormals()
    with host_copies_guarded(str(ROOT)):  # on a CPU too, values leave a device by to_host only
        if args.child:
            child(json.loads(args.child))
            return
        worker(args.names.split(","), args.results, args.state, args.seconds, args.toy,
               torch.device(args.device))


if __name__ == "__main__":
    main()
