"""Benchmark of one comparison beyond the paper's sizes: N = 100,000 inputs, K = 100 labels, M = 8.

The target (issue #16): `compare` on such a pair within a minute and 8 GiB. m_SVD_f then runs on
a seeded sample of max_label_sets of the C(98, 8) ~ 1.6e11 label sets. Prints the wall time of
each step (two prepares, the pair) and of a plain `compare` call from an empty cache, and the
process's peak resident memory (ru_maxrss, which includes Python and the libraries).
--second copy / tiny compares the first model with a copy of itself / with itself 1e-9 apart:
every pivot is then near-tied and re-scored exactly, the pivot search's worst case.

Usage: python benchmarks/measures_scale.py [--n 100000 --k 100 --m 8] [--profile] [--json out]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import resource
import sys
import time
from pathlib import Path

import numpy as np

from repdist_dev.family import model_family

from repdist.measures import compare, compare_prepared, prepare, prepared_cache


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--m", type=int, default=8)
    parser.add_argument("--max-label-sets", type=int, default=10_000)
    parser.add_argument("--second", choices=["family", "copy", "tiny"], default="family",
                        help="the second model: another of the family (default), a copy of "
                             "the first, or the first plus 1e-9 noise")
    parser.add_argument("--profile", action="store_true", help="print the top of a cProfile")
    parser.add_argument("--json", type=Path)
    return parser.parse_args()


def models(args: argparse.Namespace) -> tuple[tuple[np.ndarray, ...], float]:
    """The two models (f1, g1, f2, g2) and the seconds it took to make them."""
    start = time.perf_counter()
    (f1, g1), (f2, g2) = model_family(2, args.n, args.k, args.m)
    if args.second == "copy":
        f2, g2 = f1.copy(), g1.copy()
    elif args.second == "tiny":
        f1 = f1.astype(np.float64)
        f2, g2 = f1 + 1e-9 * np.random.default_rng(1).normal(size=f1.shape), g1.copy()
    return (f1, g1, f2, g2), time.perf_counter() - start


def timed(arrays: tuple[np.ndarray, ...], settings: dict, profiler: cProfile.Profile | None
          ) -> tuple[dict, dict[str, float]]:
    """compare_prepared after two prepares, then compare() from the arrays; the result and the
    seconds of each step."""
    f1, g1, f2, g2 = arrays
    if profiler:
        profiler.enable()
    t0 = time.perf_counter()
    m1 = prepare(f1, g1)
    t1 = time.perf_counter()
    m2 = prepare(f2, g2)
    t2 = time.perf_counter()
    r = compare_prepared(m1, m2, **settings)
    t3 = time.perf_counter()
    if profiler:
        profiler.disable()
    del m1, m2
    prepared_cache.clear()
    t4 = time.perf_counter()
    plain = compare(f1, g1, f2, g2, **settings)
    t5 = time.perf_counter()
    assert plain == r
    return r, {"prepare_1_s": t1 - t0, "prepare_2_s": t2 - t1, "compare_prepared_s": t3 - t2,
               "compare_from_arrays_s": t5 - t4}


def main() -> None:
    args = parse()
    arrays, made = models(args)
    settings = {"max_label_sets": args.max_label_sets}
    rss_models = peak_rss_gib()
    profiler = cProfile.Profile() if args.profile else None
    r, seconds = timed(arrays, settings, profiler)
    row = {
        "n": args.n, "k": args.k, "m": args.m, "max_label_sets": args.max_label_sets,
        "second": args.second, "make_models_s": made, **seconds,
        "peak_rss_gib": peak_rss_gib(), "peak_rss_after_making_models_gib": rss_models,
        "d_llv": r["d_llv"], "d_fg": r["d_fg"], "d_fg_estimate": r["d_fg_estimate"],
        "m_svd_label_sets": r["m_svd_label_sets"], "kl": r["kl"], "mcca_f": r["mcca_f"],
    }
    print(f"N={args.n} K={args.k} M={args.m} (second model: {args.second}): "
          f"prepare {row['prepare_1_s']:.2f} s + "
          f"{row['prepare_2_s']:.2f} s, pair {row['compare_prepared_s']:.2f} s; "
          f"compare() from arrays {row['compare_from_arrays_s']:.2f} s wall; "
          f"peak RSS {row['peak_rss_gib']:.2f} GiB "
          f"({row['peak_rss_after_making_models_gib']:.2f} GiB after making the models); "
          f"{r['m_svd_label_sets']} label sets (estimate: {r['d_fg_estimate']})")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    if args.json:
        args.json.write_text(json.dumps(row, indent=2))

if __name__ == "__main__":
    main()
