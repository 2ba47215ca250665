"""What a permutation null (repdist.measures.null) adds to one pair's comparison, per measure and
size: the pairs the workflow compares, at their own N inputs, K labels and width M.

For each size, each default null measure alone, d_LLV and CKNNA (drawn one comparison at a
time, asked for by name), and the default set together (null.DEFAULT_NULL_MEASURES,
config.yaml's `null.measures`), times compare() of one prepared
pair without a null and with K permutations (the default 200), the models prepared beforehand
as the pairs loop does: the ratio is what a pairs job's compare time grows by. The sizes
(`--sizes`, name:N:K:M): the synthetic grid's pairs (2,000 test inputs, 4-6 classes, M = 2),
Roeder's word model (2,000 contexts, 18 labels, M = 2), Roeder's Fig. 3 on the digits (500
test patches as labels and inputs, M = 16), a CIFAR-10 pair at the paper's size (10,000 test
images, 10 classes, M = 5) and the quick config's toy LM (200 contexts, 64 tokens, M = 16).

Usage: python benchmarks/null_cost.py [--permutations 200] [--sizes name:N:K:M ...]
                                      [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import numpy as np

from repdist.measures import CompareSettings, compare_with_settings, prepare
from repdist.measures.null import DEFAULT_NULL_MEASURES

from repdist_dev.floors import best_of

BY_NAME = ("d_llv", "cknna_f")  # drawn one comparison at a time: not on by default
SIZES = ("synthetic:2000:6:2", "roeder_words:2000:18:2", "roeder_digits:500:500:16",
         "cifar10:10000:10:5", "lm_quick:200:64:16")


def pair(n: int, k: int, m: int, seed: int = 0):
    """Two related models of one size (the second a noisy linear map of the first)."""
    rng = np.random.default_rng(seed)
    f, g = rng.normal(size=(n, m)), rng.normal(size=(k, m))
    a = rng.normal(size=(m, m)) + 2 * np.eye(m)
    return (f, g), (f @ a + 0.5 * rng.normal(size=f.shape), g @ np.linalg.inv(a).T)


def timed(m1, m2, settings: CompareSettings, repeat: int) -> float:
    return best_of(lambda: compare_with_settings(m1, m2, settings), repeat)


def measure_row(size: str, measures: list[str], permutations: int) -> dict:
    name, n, k, m = size.split(":")
    n, k, m = int(n), int(k), int(m)
    (f1, g1), (f2, g2) = pair(n, k, m)
    m1, m2 = prepare(f1, g1, measures), prepare(f2, g2, measures)
    plain = CompareSettings(measures=measures)
    with_null = CompareSettings(measures=measures,
                                null={"permutations": permutations, "measures": measures})
    base = timed(m1, m2, plain, 3)
    null = timed(m1, m2, with_null, 1)
    return {"size": name, "N": n, "K": k, "M": m, "measures": ",".join(measures),
            "compare_s": base, "with_null_s": null, "added_s": null - base,
            "per_draw_ms": 1000 * (null - base) / permutations}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--permutations", type=int, default=200)
    parser.add_argument("--sizes", nargs="+", default=list(SIZES))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        singles = [[m] for m in (*DEFAULT_NULL_MEASURES, *BY_NAME)]
        for measures in [*singles, list(DEFAULT_NULL_MEASURES)]:
            row = measure_row(size, measures, args.permutations)
            rows.append(row)
            print(f"{row['size']:<14} N={row['N']:<6} K={row['K']:<4} M={row['M']:<4} "
                  f"{row['measures'][:40]:<40} compare {row['compare_s']:8.4f} s  "
                  f"+null {row['added_s']:8.3f} s  ({row['per_draw_ms']:.2f} ms a draw)",
                  flush=True)
    if args.json:
        args.json.write_text(json.dumps({"machine": platform.processor() or platform.machine(),
                                         "permutations": args.permutations, "rows": rows},
                                        indent=1))


if __name__ == "__main__":
    main()
