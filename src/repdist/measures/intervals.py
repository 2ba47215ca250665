"""Intervals for a mean over pairs of seeds that respect what the pairs share.

The 45 pairs of 10 seeds are not 45 independent draws: each seed is in 9 of them, so the pairs'
standard error (sd / sqrt(pairs), what the papers show) is too narrow. `seed_bootstrap_interval`
resamples seeds, not pairs; `unit_bootstrap_interval` resamples values that are their own units
(a teacher seed and its student). Reproducible from `seed` (numpy.random.default_rng)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BOOTSTRAP_DRAWS = 2000
LEVEL = 0.95


def seed_bootstrap_interval(seeds_a: Sequence[int], seeds_b: Sequence[int],
                            values: Sequence[float], draws: int = BOOTSTRAP_DRAWS,
                            level: float = LEVEL, seed: int = 0) -> tuple[float, float]:
    """The `level` percentile interval of the mean of `values` (one per pair of seeds a != b, NaN
    left out), resampling seeds: a draw is the mean over the pairs of distinct seeds drawn, a
    seed drawn twice counting twice. (NaN, NaN) with fewer than 3 seeds or no finite value."""
    a, b = np.asarray(seeds_a), np.asarray(seeds_b)
    v = np.asarray(values, dtype=np.float64)
    if not len(a) == len(b) == len(v):
        raise ValueError(f"one value a pair: {len(a)} and {len(b)} seeds, {len(v)} values")
    keep = np.isfinite(v) & (a != b)
    a, b, v = a[keep], b[keep], v[keep]
    seeds = np.unique(np.concatenate([a, b]))
    if len(seeds) < 3 or not len(v):
        return float("nan"), float("nan")
    ia, ib = np.searchsorted(seeds, a), np.searchsorted(seeds, b)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(seeds), np.full(len(seeds), 1 / len(seeds)), size=draws)
    weights = counts[:, ia] * counts[:, ib]  # how often each pair is drawn: draws x pairs
    total = weights.sum(axis=1)
    means = (weights @ v)[total > 0] / total[total > 0]
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def unit_bootstrap_interval(values: Sequence[float], draws: int = BOOTSTRAP_DRAWS,
                            level: float = LEVEL, seed: int = 0) -> tuple[float, float]:
    """The `level` percentile interval of the mean of `values`, one per independent unit (NaN
    left out), under a bootstrap that resamples the units; (NaN, NaN) with fewer than 3."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) < 3:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(v), np.full(len(v), 1 / len(v)), size=draws)
    tail = (1 - level) / 2
    low, high = np.quantile(counts @ v / len(v), [tail, 1 - tail])
    return float(low), float(high)
