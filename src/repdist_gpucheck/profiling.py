"""The profile part of `make gpu-check`: where the time of a CIFAR training step goes.
The time is summed by kernel name into the record's categories (`category`). "idle" is the
profiled window's wall time that no kernel covered (launches, the host's Python,
synchronisation). On a CPU (the toy run) ATen operators stand in for kernels."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from repdist.io.host import host_copies_guarded
from repdist_dev.checkout import ROOT
from repdist_gpucheck.candidates import BY_NAME, GPU_SIZE, TOY_SIZE, build_job, paper_run, sync
from repdist_gpucheck.record import PROFILE_CATEGORIES, Profile, ProfileRow

# JOB: the stacked reference with `cuda_graph` on, as config.yaml trains it; its graphs are
# captured by the end of the warm-up.
JOB = "cifar.cuda_graph"
PROFILED_STEPS = {"gpu": 10, "toy": 3}
WINDOW = "repdist.profiled_steps"  # the profiler's range around the profiled steps
TOP = 3  # the longest kernels a category names
NAME_CHARS = 70
# In order, the first that matches wins: a name's lower case containing one of the words (the
# optimiser first: its multi-tensor kernels name their functor; gradients before forward
# convolutions, whose cuDNN names share words such as implicit_gemm; BatchNorm before the
# elementwise words its kernels contain: reduce, elementwise).
RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("optimiser", ("adam", "multi_tensor_apply", "_amp_foreach_non_finite", "amp_update_scale",
                   "optimizer.", "aten::_foreach_")),
    ("weight gradient", ("wgrad", "backward_weight", "convolution_backward_weight")),
    ("data gradient", ("dgrad", "backward_input", "backward_data")),
    ("convolution backward", ("convolution_backward", "convolutionbackward",
                              "conv2d_backward", "conv_depthwise2d_backward")),
    ("BatchNorm", ("batch_norm", "batchnorm", "cudnn::bn_", "bn_fw", "bn_bw")),
    ("convolution forward", ("fprop", "convolve", "convolution", "conv2d", "winograd",
                             "fft2d_", "fft3d_", "flip_filter")),
    ("other", ("gemm", "gemv", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
               "aten::matmul", "aten::linear", "memcpy", "memset", "nchwtonhwc", "nhwctonchw")),
    ("elementwise", ("elementwise", "vectorized", "reduce_kernel", "reduce", "triton_",
                     "catarraybatchedcopy", "copy_kernel", "fill_kernel", "index_select",
                     "indexselect", "gather", "scatter", "softmax", "nll_loss",
                     "adaptive_avg_pool", "avg_pool")),
)
# ATen's elementwise operators and reductions on a CPU (aten::<name>, any trailing "_")
ATEN_ELEMENTWISE = frozenset("""
abs add addcdiv addcmul cat clamp clamp_min clone contiguous copy div exp expand_as fill
gather index index_select log log_softmax logsumexp lerp maximum mean minimum mul neg ones_like
pow relu rsqrt sigmoid sqrt sub sum tanh threshold threshold_backward to_copy where zero
zeros_like mean_backward nll_loss_forward nll_loss_backward log_softmax_backward_data
adaptive_avg_pool2d avg_pool2d amax
""".split())
AUTOGRAD_PREFIX = "autograd::engine::evaluate_function: "


def category(name: str) -> str:
    """The category (record.PROFILE_CATEGORIES, idle aside) of a CUDA kernel's or a CPU
    operator's name, as the profiler's tables give it (RULES, then ATEN_ELEMENTWISE); the
    autograd engine's wrapper of a backward by the backward it runs."""
    lower = name.removeprefix(AUTOGRAD_PREFIX).lower()
    for group, words in RULES:
        if any(word in lower for word in words):
            return group
    if lower.startswith("aten::"):
        op = lower.removeprefix("aten::").strip("_")
        if op in ATEN_ELEMENTWISE or op.rstrip("_") in ATEN_ELEMENTWISE:
            return "elementwise"
    return "other"


@dataclass(frozen=True)
class Span:
    """A kernel on the GPU (or an operator on a CPU): its name, when it ran (microseconds on
    the profiler's clock) and its own time (a CPU operator's without its children's)."""

    name: str
    start: float
    end: float
    own: float


def covered(spans: Iterable[Span], start: float, end: float) -> float:
    """Microseconds of [start, end] that some span covers (overlapping kernels of several
    streams counted once)."""
    total, reach = 0.0, start
    for s in sorted(spans, key=lambda s: s.start):
        lo, hi = max(s.start, reach), min(s.end, end)
        if hi > lo:
            total += hi - lo
        reach = max(reach, min(s.end, end))
    return total


def short(name: str) -> str:
    """A kernel's name without its template arguments and parameters, at most NAME_CHARS."""
    name = re.sub(r"^void ", "", name)
    depth, out = 0, []
    for ch in name:
        depth += ch in "<("
        if depth == 0:
            out.append(ch)
        depth -= ch in ">)" and depth > 0
    text = "".join(out).strip() or name
    return text if len(text) <= NAME_CHARS else text[:NAME_CHARS - 1] + "…"


def breakdown(spans: Sequence[Span], window: tuple[float, float], steps: int,
              on_device: bool) -> tuple[list[ProfileRow], float]:
    """Each category's time a step from the window's spans (kernels on a GPU by their length,
    operators on a CPU by their own time) and idle (the window not covered: on a GPU by any
    kernel, on a CPU by any operator), in PROFILE_CATEGORIES' order; and the busy ms a step."""
    start, end = window
    inside = [s for s in spans if s.start >= start and s.end <= end]
    wall = max(end - start, 1e-9)
    busy = covered(inside, start, end) if on_device else min(sum(s.own for s in inside), wall)
    time: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    names: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for s in inside:
        group = category(s.name)
        took = (s.end - s.start) if on_device else s.own
        time[group] += took
        count[group] += 1
        names[group][short(s.name)] += took
    time["idle"] = wall - busy
    rows = []
    for group in PROFILE_CATEGORIES:
        if group not in time:
            continue
        longest = sorted(names[group].items(), key=lambda kv: -kv[1])[:TOP]
        rows.append(ProfileRow(group, time[group] / 1e3 / steps, time[group] / wall,
                               count[group] / steps,
                               [f"{n}: {t / 1e3 / steps:.3f} ms" for n, t in longest]))
    return rows, busy / 1e3 / steps


def spans_of(events: Any, on_device: bool) -> tuple[list[Span], tuple[float, float]]:
    """The profiler's events as spans (CUDA kernels, copies and fills on a GPU; CPU operators
    on a CPU) and the window's start and end on the host. On CUDA a profiler range (the window,
    Adam's step) also shows on the GPU, as a user annotation spanning the kernels it holds: no
    kernel of its own, left out (torch's own tables leave it out of device time too)."""
    from torch.autograd import DeviceType

    window = next(e for e in events if e.name == WINDOW and e.device_type == DeviceType.CPU)
    spans = []
    for e in events:
        gpu = e.device_type == DeviceType.CUDA
        if e.name == WINDOW or (gpu and getattr(e, "is_user_annotation", False)):
            continue
        if gpu == on_device:
            own = e.time_range.elapsed_us() if gpu else e.self_cpu_time_total
            spans.append(Span(e.name, e.time_range.start, e.time_range.end, own))
    return spans, (window.time_range.start, window.time_range.end)


def profiled(options: dict[str, Any], toy: bool, device: torch.device
             ) -> tuple[list[Span], tuple[float, float], dict[str, Any]]:
    """PROFILED_STEPS steps of the CIFAR job with `options`, after the candidates' warm-up
    steps, under torch.profiler (CUDA activity on a GPU), synchronised at both ends of the
    window: its spans, the window and the run's finals."""
    from torch.profiler import ProfilerActivity, profile, record_function

    size = TOY_SIZE if toy else GPU_SIZE
    steps = PROFILED_STEPS["toy" if toy else "gpu"]
    job = build_job("cifar", options, size, device)
    on_device = device.type == "cuda"
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if on_device else [])]
    prof, window = profile(activities=activities), record_function(WINDOW)

    def on_step(done: int) -> bool:
        if done == size.skip:
            sync(device)
            prof.start()
            window.__enter__()
        elif done == size.skip + steps:
            sync(device)
            window.__exit__(None, None, None)
            prof.stop()
            return True
        return False

    finals = paper_run(job, "cifar", on_step)
    spans, bounds = spans_of(prof.events(), on_device)
    return spans, bounds, finals


def profile_job(toy: bool, device: torch.device) -> Profile:
    """The profile of JOB's steps; on CUDA, where the graph's replays showed no convolution
    kernel (CUPTI did not see into the graphs), of the eager step of the same job instead (said
    in `source`)."""
    on_device = device.type == "cuda"
    steps = PROFILED_STEPS["toy" if toy else "gpu"]
    spans, window, finals = profiled(BY_NAME[JOB].options, toy, device)
    rows, busy = breakdown(spans, window, steps, on_device)
    if not on_device:
        source = "the graph-ready step run eagerly, CPU operators (toy)"
    elif finals.get("step_graph_error"):
        source = f"the eager step, CUDA kernels: the capture failed ({finals['step_graph_error']})"
    else:
        source = "the graph's replays, CUDA kernels"
    convolutions = {"convolution forward", "data gradient", "weight gradient"}
    if on_device and not any(r.category in convolutions for r in rows):
        spans, window, _ = profiled({}, toy, device)
        rows, busy = breakdown(spans, window, steps, on_device)
        source = "the eager step, CUDA kernels: the profiled replays showed no convolution"
    wall = (window[1] - window[0]) / 1e3 / steps
    return Profile(job=JOB, source=source, device=device.type, steps=steps,
                   window_ms_per_step=wall, busy_ms_per_step=busy, rows=rows,
                   note="" if on_device else "toy: nothing is captured on a CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--toy", action="store_true")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    from repdist.pipeline.subnormals import flush_subnormals

    flush_subnormals()
    with host_copies_guarded(str(ROOT)):  # on a CPU too, values leave a device by to_host only
        found = profile_job(args.toy, torch.device(args.device))
    args.result.write_text(json.dumps(dataclasses.asdict(found)) + "\n")
    for row in found.rows:
        print(f"gpu-check: profile: {row.category}: {row.ms_per_step:.3f} ms a step "
              f"({100 * row.share:.1f} %)", flush=True)


if __name__ == "__main__":
    main()
