"""Benchmark of the measures: all pairs of a set of models, as the pipelines compute them.

Cases (issue #2): 190 pairs of 20 models at K=18, M=2, N=2000, num_samples=200; 45 pairs of
10 models at K=10, M=2, N=10,000. Timed end to end: per-model preparation plus every pair,
both as pipelines do it (`prepare` once per model, `compare_prepared` per pair) and as a user's
plain loop of `compare(f_i, g_i, f_j, g_j)` does it (the content-keyed cache of prepared models
is what makes the two cost the same; it is cleared before each timed loop).
With --reference-pairs R it also times R pairs of the literal loop transcription of the spec
(repdist_dev.reference: per-class loops, pivot loops, sklearn PLSSVD per label set) for scale.

Usage: python benchmarks/measures.py [--repeats 5] [--reference-pairs 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from pathlib import Path

import numpy as np

from repdist.measures import (
    compare,
    compare_prepared,
    prepare,
    prepared_cache,
)
from repdist.measures.llv import input_candidates
from repdist_dev import reference
from repdist_dev.family import model_family


def all_pairs(models, num_samples: int) -> float:
    start = time.perf_counter()
    prepared = [prepare(f, g) for f, g in models]
    for i, j in itertools.combinations(range(len(prepared)), 2):
        compare_prepared(prepared[i], prepared[j], num_samples=num_samples, seed=0)
    return time.perf_counter() - start


def plain_loop(models, num_samples: int) -> float:
    """All pairs through plain `compare` calls on the arrays, starting from an empty cache."""
    prepared_cache.clear()
    start = time.perf_counter()
    for i, j in itertools.combinations(range(len(models)), 2):
        compare(*models[i], *models[j], num_samples=num_samples, seed=0)
    return time.perf_counter() - start


def reference_pairs(models, num_samples: int, n_pairs: int) -> float:
    pairs = list(itertools.combinations(range(len(models)), 2))[:n_pairs]
    start = time.perf_counter()
    for i, j in pairs:
        (f1, g1), (f2, g2) = [(f.astype(np.float64), g.astype(np.float64)) for f, g in
                              (models[i], models[j])]
        cands = input_candidates(f1.shape[0], f1.shape[1], num_samples, 0)
        r = reference.d_llv(f1, g1, f2, g2, cands)
        reference.kl(f1, g1, f2, g2)
        reference.m_svd_f(f1, g1, f2, g2, r["y_pivot"], r["y_leave_out"])
        reference.m_svd_g(f1, g1, f2, g2, r["input_set"])
    return (time.perf_counter() - start) / max(len(pairs), 1)


CASES = [
    {"name": "K18_N2000_20models", "n_models": 20, "n_inputs": 2000, "num_labels": 18},
    {"name": "K10_N10000_10models", "n_models": 10, "n_inputs": 10_000, "num_labels": 10},
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--num-samples", type=int, default=200)
    parser.add_argument("--reference-pairs", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = []
    for case in CASES:
        models = model_family(case["n_models"], case["n_inputs"], case["num_labels"], 2)
        n_pairs = case["n_models"] * (case["n_models"] - 1) // 2
        all_pairs(models[:3], args.num_samples)  # warm-up (imports, BLAS threads)
        times, plain = [], []
        for _ in range(args.repeats):  # interleaved, so load from elsewhere hits both alike
            times.append(all_pairs(models, args.num_samples))
            plain.append(plain_loop(models, args.num_samples))
        row = {
            **case,
            "pairs": n_pairs,
            "median_s": statistics.median(times),
            "min_s": min(times),
            "max_s": max(times),
            "plain_loop_median_s": statistics.median(plain),
            "plain_loop_min_s": min(plain),
        }
        if args.reference_pairs:
            per_pair = reference_pairs(models, args.num_samples, args.reference_pairs)
            row["reference_s_per_pair"] = per_pair
            row["reference_pairs_timed"] = args.reference_pairs
        results.append(row)
        line = (f"{case['name']}: {n_pairs} pairs in {row['median_s']:.3f} s median "
                f"(min {row['min_s']:.3f}, max {row['max_s']:.3f}; {args.repeats} repeats) with "
                f"prepare once per model; plain compare() loop {row['plain_loop_median_s']:.3f} s "
                f"median (min {row['plain_loop_min_s']:.3f})")
        if args.reference_pairs:
            line += (f"; literal reference {row['reference_s_per_pair']:.3f} s/pair over "
                     f"{args.reference_pairs} pairs")
        print(line, flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
