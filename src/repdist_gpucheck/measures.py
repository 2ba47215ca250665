"""Part c of `make gpu-check`: `compare` at GPT-2's shapes on the GPU, against the CPU's estimate.

The shapes are N = 10,000 inputs, K = 50,257 labels, M = 768. The GPU runs the exact pivot search
(max_pivots = K); the CPU path runs its default estimate. First, at a size where both search every
pivot, the GPU path is checked against the CPU path (equal to 1e-10). On a CPU (the toy run) the
"device" rows run the device path's torch code on the CPU."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from repdist.io.host import host_copies_guarded
from repdist.measures import prepared_cache
from repdist.measures.compare import PivotSampleWarning, compare
from repdist_dev.checkout import ROOT
from repdist_dev.family import model_family
from repdist_gpucheck.record import MeasureRow

SIZES = {"gpu": {"equal": (2_000, 2_000, 64), "gpt2": (10_000, 50_257, 768)},
         "toy": {"equal": (400, 300, 4), "gpt2": (1_000, 1_500, 8)}}
LABEL_SIDE = "kl,d_llv,t1,y_pivot"
PAPER = "kl,d_llv,t1,y_pivot,d_fg,mcca_f,mcca_g"  # the paper's five (and t1, the pivot)
compare_module = importlib.import_module("repdist.measures.compare")  # not the function
# An estimate of t1 stops early, at or above the minimum: the exact t1 must not exceed it.
EQUAL_TOL = 1e-10
CPU_EVERY_PIVOT_T1 = 8.016  # docs/measures.md: GPT-2's size, family seed 0, 349 s on 2 cores
CPU_EVERY_PIVOT_T1_TOL = 5e-4  # its printed digits
TORCH_ON_CPU = "torch-cpu"  # the toy run's device: the device path's code on the CPU


def use_torch_on_cpu() -> None:
    """Let compare's device "torch-cpu" run the device path's torch code on the CPU (the toy
    run's stand-in for a GPU)."""
    original = compare_module.compute_device

    def compute_device(device: str) -> str | None:
        return "cpu" if device == TORCH_ON_CPU else original(device)

    compare_module.compute_device = compute_device


# Each row is timed from an empty prepared-model cache (the two prepares included).
def run(name: str, size: tuple[int, int, int], models: Any, device: str, max_pivots: int | None,
        measures: str, against: dict[str, Any] | None = None,
        exact_t1: tuple[float, float] | None = None) -> tuple[MeasureRow, dict[str, Any]]:
    """One timed compare; its row, checked against `against` when given: the same every-pivot
    search (`exact_t1` None), or an estimate that the exact search must meet from below and
    whose exact t1 must equal `exact_t1` = (value, tolerance)."""
    (f1, g1), (f2, g2) = models
    n, k, m = size
    settings: dict[str, Any] = {"measures": measures, "device": device, "method": "low_rank"}
    if max_pivots is not None:
        settings["max_pivots"] = max_pivots
    prepared_cache.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        result = compare(f1, g1, f2, g2, **settings)
        seconds = time.perf_counter() - start
    proven = not any(issubclass(w.category, PivotSampleWarning) for w in caught)
    rel, passes, note = None, None, ""
    if against is not None:
        rel = max(abs(result[key] - against[key]) / max(abs(against[key]), 1e-300)
                  for key in ("kl", "t1", "d_llv"))
        if exact_t1 is None:
            passes = rel <= EQUAL_TOL and result["y_pivot"] == against["y_pivot"]
            note = "the same every-pivot search on both paths"
        else:
            passes, note = two_sided(result, against, exact_t1)
    row = MeasureRow(name=name, n=n, k=k, m=m, device=device,
                     max_pivots=settings.get("max_pivots", compare_module.MAX_PIVOTS),
                     status="ok", seconds=seconds, kl=float(result["kl"]),
                     t1=float(result["t1"]), d_llv=float(result["d_llv"]),
                     y_pivot=int(result["y_pivot"]), proven=proven, rel_diff=rel,
                     against="" if against is None else against["name"], passes=passes,
                     note=note)
    return row, {**result, "name": name}


def two_sided(exact: dict[str, Any], estimate: dict[str, Any], t1: tuple[float, float]
              ) -> tuple[bool, str]:
    """The exact search at GPT-2's shapes against the CPU's estimate: the KL (exact on both)
    equal, t1 at or below the estimate, and equal to the every-pivot t1 (value, tolerance)."""
    kl = abs(exact["kl"] - estimate["kl"]) / max(abs(estimate["kl"]), 1e-300)
    below = exact["t1"] <= estimate["t1"] * (1 + 1e-12)
    equal = abs(exact["t1"] - t1[0]) <= t1[1]
    note = (f"KL {kl:.1e} from the CPU's ({'ok' if kl <= EQUAL_TOL else 'FAILS'}); the CPU's "
            f"default estimate of t1 is {100 * (estimate['t1'] / exact['t1'] - 1):+.2f} % "
            f"from this exact one ({'ok' if below else 'FAILS: below it'}); every pivot on a "
            f"CPU gives {t1[0]:.6g} ({'ok' if equal else 'FAILS'}, within {t1[1]:.0e})")
    return kl <= EQUAL_TOL and below and equal, note


def plan(toy: bool) -> list[str]:
    """The rows in order; the toy run computes the every-pivot t1 on the CPU (cheap there)."""
    return ["equal.cpu", "equal.device", "gpt2.cpu_default",
            *(["gpt2.cpu_exact"] if toy else []), "gpt2.device_exact", "gpt2.device_paper"]


def worker(results: Path, toy: bool, device: str) -> None:
    sizes = SIZES["toy" if toy else "gpu"]
    if toy:
        use_torch_on_cpu()
        device = TORCH_ON_CPU

    def emit(event: dict[str, Any]) -> None:
        with results.open("a") as handle:
            handle.write(json.dumps(event) + "\n")

    family = {key: model_family(2, *size) for key, size in sizes.items()}
    # the device's first call (libraries, handles) is not timed
    small = model_family(2, 300, 1_100, 4)
    compare(*small[0], *small[1], measures=LABEL_SIDE, device=device, method="low_rank")
    done: dict[str, dict[str, Any]] = {}
    for name in plan(toy):
        emit({"event": "start", "name": name, "time": time.time()})
        group = name.split(".")[0]
        size, models = sizes[group], family[group]
        k = size[1]
        if name in ("equal.cpu", "gpt2.cpu_exact"):
            row, done[name] = run(name, size, models, "cpu", k, LABEL_SIDE)
        elif name == "equal.device":
            row, done[name] = run(name, size, models, device, k, LABEL_SIDE,
                                  done.get("equal.cpu"))
        elif name == "gpt2.cpu_default":
            row, done[name] = run(name, size, models, "cpu", None, LABEL_SIDE)
        elif name == "gpt2.device_exact":
            exact = ((done["gpt2.cpu_exact"]["t1"], EQUAL_TOL * done["gpt2.cpu_exact"]["t1"])
                     if toy else (CPU_EVERY_PIVOT_T1, CPU_EVERY_PIVOT_T1_TOL))
            row, done[name] = run(name, size, models, device, k, LABEL_SIDE,
                                  done.get("gpt2.cpu_default"), exact)
        else:
            row, done[name] = run(name, size, models, device, k, PAPER)
        print(f"gpu-check: {name}: {row.seconds:.2f} s, t1 {row.t1:.6g}", flush=True)
        emit({"event": "done", "row": dataclasses.asdict(row)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--toy", action="store_true")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    with host_copies_guarded(str(ROOT)):  # values leave the GPU by to_host only
        worker(args.results, args.toy, args.device)


if __name__ == "__main__":
    main()
