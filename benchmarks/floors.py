"""Each benchmark beside its floor: the work it must do (FLOPs of its products and decompositions,
bytes it must move) against this machine's measured peaks, all in one run on one machine.

Peaks: float64 and float32 GEMM (numpy's BLAS on n x n matrices, on one thread and on every
core) and memory bandwidth (a triad c = a + s*b over arrays far larger than the caches, bytes
read and written). A benchmark's floor is max(FLOPs / float64 GEMM peak on every core, bytes /
bandwidth): the time it would take if every operation ran at the machine's best rate, which
small and irregular operations never do; measured / floor says how far from it a benchmark is.

Benchmarks (`--parts`, all by default):
- bar: the bar workload. 190 pairs of 20 models (K = 18, N = 2,000, M = 2, 200 candidate input
  sets) by the paper's five measures (KL, d_LLV, m_SVD of f and g, m_CCA of f and g), each model
  `prepare()`d for them inside the timed loop; with --original, the authors' code on the same
  pairs (repdist_retrace.measures), timed in the same run.
- gpt2: one compare() at GPT-2's shapes (N = 10,000, K = 50,257, M = 768), every measure at
  compare()'s defaults, from the arrays (benchmarks/measures_scale.py's models and steps).
- null: one draw of the default permutation null (null.DEFAULT_NULL_MEASURES) of a synthetic
  pair (N = 2,000, K = 6, M = 2), from 200 draws.
- synthetic: one step of a stack of the synthetic grid (20 seeds x 4 variants, K = 6, batch 128,
  the paper protocol, Adam) at each of --widths, eager, on one thread.

Work is counted by formulas of the shapes (repdist_dev.floors, each function's docstring names
its terms).

Usage: python benchmarks/floors.py [--parts bar gpt2 null synthetic]
           [--original ../shared/authors-code] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import platform
import resource
import statistics
import time
from pathlib import Path

import torch

from repdist.measures import (
    CompareSettings,
    compare,
    compare_with_settings,
    prepare,
    prepared_cache,
)
from repdist.measures.null import DEFAULT_NULL_MEASURES
from repdist.measures.pairs import compare_pairs

from repdist_dev.checkout import paper_config
from repdist_dev.family import model_family
from repdist_dev.floors import (
    PAPER_MEASURES,
    best_of,
    floor_s,
    gpt2_work,
    null_draw_work,
    paper_pair_work,
    peaks,
    prepare_work,
    synthetic_step_work,
)

BAR = {"models": 20, "n": 2000, "k": 18, "m": 2, "num_samples": 200}
GPT2 = {"n": 10_000, "k": 50_257, "m": 768}
NULL = {"n": 2000, "k": 6, "m": 2, "permutations": 200}
MEASURE_SETTINGS = {key: paper_config()["measures"][key] for key in ("lam", "dist_type",
                                                                     "sum_or_max")}


# ----- the benchmarks ---------------------------------------------------------------------------

def bar(original: Path | None, repeats: int) -> dict:
    """repdist's bar workload, prepare() timed in; the original's on the same pairs."""
    models = model_family(BAR["models"], BAR["n"], BAR["k"], BAR["m"])
    pairs = list(itertools.combinations(range(len(models)), 2))
    settings = CompareSettings(measures=PAPER_MEASURES, num_samples=BAR["num_samples"], seed=0,
                               **MEASURE_SETTINGS)

    def ours() -> None:  # as a pairs job: each model prepared, then the one loop over pairs
        prepared_cache.clear()
        compare_pairs([prepare(f, g, measures=PAPER_MEASURES) for f, g in models], settings,
                      pairs, quiet=True)

    ours()  # imports and the BLAS's threads
    times = [best_of(ours, 1) for _ in range(repeats)]
    row = {"pairs": len(pairs), **BAR, "measured_s": statistics.median(times),
           "measured_min_s": min(times)}
    flops, bytes_ = paper_pair_work(BAR["n"], BAR["k"], BAR["m"], BAR["num_samples"])
    p_flops, p_bytes = prepare_work(BAR["n"], BAR["k"], BAR["m"])
    row["flops"] = len(pairs) * flops + len(models) * p_flops
    row["bytes"] = len(pairs) * bytes_ + len(models) * p_bytes
    if original is not None:
        from repdist_retrace.measures import import_original_measures, original_pair

        code = import_original_measures(original)
        theirs = {**MEASURE_SETTINGS, "num_samples": BAR["num_samples"]}
        start = time.perf_counter()
        for i, j in pairs:
            original_pair(code, *models[i], *models[j], theirs)
        row["original_s"] = time.perf_counter() - start
        row["speedup"] = row["original_s"] / row["measured_s"]
    return row


def gpt2() -> dict:
    """One compare() from the arrays at GPT-2's shapes, every measure at its defaults."""
    (f1, g1), (f2, g2) = model_family(2, GPT2["n"], GPT2["k"], GPT2["m"])
    gc.collect()
    prepared_cache.clear()
    start = time.perf_counter()
    result = compare(f1, g1, f2, g2)
    seconds = time.perf_counter() - start
    flops, bytes_ = gpt2_work(GPT2["n"], GPT2["k"], GPT2["m"], result["m_svd_label_sets"])
    return {**GPT2, "label_sets": result["m_svd_label_sets"], "measured_s": seconds,
            "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "flops": flops, "bytes": bytes_}


def null_draw() -> dict:
    """One draw of the default null, from a compare() with NULL permutations less one without."""
    (f1, g1), (f2, g2) = model_family(2, NULL["n"], NULL["k"], NULL["m"])
    measures = DEFAULT_NULL_MEASURES
    m1, m2 = prepare(f1, g1, measures), prepare(f2, g2, measures)
    plain = CompareSettings(measures=measures)
    with_null = CompareSettings(measures=measures, null={"permutations": NULL["permutations"],
                                                         "measures": measures})
    compare_with_settings(m1, m2, with_null)
    base = best_of(lambda: compare_with_settings(m1, m2, plain), 5)
    drawn = best_of(lambda: compare_with_settings(m1, m2, with_null), 3)
    flops, bytes_ = null_draw_work(NULL["n"], NULL["k"], NULL["m"])
    return {**NULL, "measures": ",".join(measures),
            "measured_s": (drawn - base) / NULL["permutations"], "flops": flops,
            "bytes": bytes_}


def synthetic_step(width: int, steps: int) -> dict:
    """One step of a stack of the synthetic grid at `width`, eager on one thread."""
    from synthetic_training import synthetic_job  # benchmarks/ (this script's folder)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        job = synthetic_job("cpu", False, steps, width=width)
    finally:
        torch.set_num_threads(threads)
    flops, bytes_ = synthetic_step_work(width, 6, job["models"])
    return {"width": width, "models": job["models"], "measured_s": 1 / job["steps_per_s"],
            "flops": flops, "bytes": bytes_, "peak_key": "gemm_f32_1thread_gflops"}


def with_floor(name: str, row: dict, peak: dict[str, float]) -> dict:
    key = row.pop("peak_key", "gemm_f64_gflops")
    floor = floor_s(row["flops"], row["bytes"], peak, key)
    return {"benchmark": name, **row, "peak": key, "floor_s": floor,
            "fraction_of_floor": floor / row["measured_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["bar", "gpt2", "null", "synthetic"],
                        choices=["bar", "gpt2", "null", "synthetic"])
    parser.add_argument("--original", type=Path, help="the authors' code: time it on the bar")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--widths", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--steps", type=int, default=1000, help="synthetic: nominal steps")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    peak = peaks()
    print("peaks: " + ", ".join(f"{k} {v:.1f}" for k, v in peak.items()), flush=True)
    rows = []
    if "bar" in args.parts:
        rows.append(with_floor("bar workload", bar(args.original, args.repeats), peak))
    if "gpt2" in args.parts:
        rows.append(with_floor("GPT-2 shapes", gpt2(), peak))
    if "null" in args.parts:
        rows.append(with_floor("null draw", null_draw(), peak))
    if "synthetic" in args.parts:
        rows += [with_floor(f"synthetic step, width {w}", synthetic_step(w, args.steps), peak)
                 for w in args.widths]
    for row in rows:
        extra = (f"; the original {row['original_s']:.1f} s ({row['speedup']:.0f}x)"
                 if "original_s" in row else "")
        print(f"{row['benchmark']}: {row['flops'] / 1e9:.3g} GFLOP, {row['bytes'] / 1e6:.3g} MB;"
              f" floor {row['floor_s'] * 1e3:.3g} ms, measured {row['measured_s'] * 1e3:.4g} ms,"
              f" {100 * row['fraction_of_floor']:.2g} % of the floor{extra}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"machine": platform.processor() or platform.machine(),
                                         "peaks": peak, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
