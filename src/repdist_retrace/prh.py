"""repdist.measures.prh against the Platonic Representation Hypothesis' own `metrics.py`
(minyoungg/platonic-rep), imported at run time from a folder that holds it.

Their module imports torchaudio for one function, `edit_distance`; where torchaudio does not
import (here: it is not installed beside the pinned torch) a shim module stands in for it,
whose `edit_distance` is the textbook Levenshtein recursion (`repdist`'s own code is not used
for it, so the comparison stays independent). Prints each metric from both on random pairs
(their pipeline: rows L2-normalised; the outlier clamp compared separately).

Usage: python -m repdist_retrace.prh --original path/to/platonic-rep
"""

from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path

import numpy as np
import torch


from repdist.measures import prh
from repdist.measures.extra import mutual_knn


def levenshtein(a, b) -> float:
    m, n = len(a), len(b)
    d = np.zeros((m + 1, n + 1))
    d[:, 0], d[0, :] = np.arange(m + 1), np.arange(n + 1)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1,
                          d[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return float(d[m, n])


def import_theirs(folder: Path):
    try:
        import torchaudio.functional  # noqa: F401
        shim = "none"
    except ImportError:
        package = types.ModuleType("torchaudio")
        functional = types.ModuleType("torchaudio.functional")
        functional.edit_distance = levenshtein
        package.functional = functional
        sys.modules.update({"torchaudio": package, "torchaudio.functional": functional})
        shim = "torchaudio.functional.edit_distance (textbook Levenshtein)"
    sys.path.insert(0, str(folder))
    import metrics  # their module

    return metrics.AlignmentMetrics, metrics.remove_outliers, shim


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original", type=Path, required=True, help="a platonic-rep checkout")
    args = parser.parse_args()
    theirs, remove_outliers, shim = import_theirs(args.original)
    print(f"shim: {shim}")
    rng = np.random.default_rng(0)
    worst = 0.0
    for n, d, k in [(300, 2, 10), (500, 8, 10), (200, 16, 5)]:
        x = rng.normal(size=(n, d))
        y = x @ rng.normal(size=(d, d)) + 0.5 * rng.normal(size=(n, d))
        xt, yt = (torch.nn.functional.normalize(torch.tensor(v), dim=-1) for v in (x, y))
        xu, yu = prh.unit_rows(x), prh.unit_rows(y)
        ref = {"cycle_knn": theirs.cycle_knn(xt, yt, k), "lcs_knn": theirs.lcs_knn(xt, yt, k),
               "edit_distance_knn": theirs.edit_distance_knn(xt, yt, k),
               "unbiased_cka": theirs.unbiased_cka(xt, yt), "cknna": theirs.cknna(xt, yt, topk=k),
               "mutual_knn": theirs.mutual_knn(xt, yt, k)}
        ours = {**prh.knn_metrics(xu, yu, k), "unbiased_cka": prh.unbiased_cka(xu, yu),
                "cknna": prh.cknna(xu, yu, k), "mutual_knn": mutual_knn(x, y, k)}
        for key, value in ref.items():
            diff = abs(float(value) - ours[key])
            worst = max(worst, diff)
            print(f"N={n:4d} d={d:2d} k={k:2d} {key:18s} theirs {float(value):.12f} "
                  f"ours {ours[key]:.12f} |diff| {diff:.1e}")
        for exact in (False, True):
            diff = np.abs(remove_outliers(torch.tensor(x), 0.95, exact=exact).numpy()
                          - prh.clamp_outliers(x, 0.95, exact=exact)).max()
            print(f"N={n:4d} d={d:2d} outlier clamp (exact={exact}) max |diff| {diff:.1e}")
    print(f"largest difference of a metric: {worst:.1e} (theirs average in float32)")


if __name__ == "__main__":
    main()
