"""Seed-bootstrap intervals (repdist.measures.intervals): a mean over pairs of seeds, resampled
by seed. Pairs that share a seed share its luck, so the interval must be wider than one that
takes the pairs as independent when seeds differ, cover the truth about as often as it says,
and be reproducible."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from repdist.measures.intervals import seed_bootstrap_interval

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels


def pairs_of(seed_effects, rng, noise=0.05):
    """Every pair of seeds a < b, its value the two seeds' effects plus its own noise."""
    a, b = map(np.array, zip(*itertools.combinations(range(len(seed_effects)), 2)))
    return a, b, seed_effects[a] + seed_effects[b] + noise * rng.normal(size=len(a))


def test_the_interval_covers_the_mean_about_as_often_as_it_says():
    """Seeds with effects of their own (sd 0.2) and 10 seeds: the 95 % seed bootstrap covers
    the true mean (0) in most of 200 experiments, the pairs-as-independent interval (mean +-
    1.96 sd / sqrt(pairs)) far less often."""
    rng = np.random.default_rng(0)
    covered = naive = 0
    for trial in range(200):
        a, b, v = pairs_of(0.2 * rng.normal(size=10), rng)
        low, high = seed_bootstrap_interval(a, b, v, draws=400, seed=trial)
        covered += low <= 0 <= high
        se = v.std(ddof=1) / np.sqrt(len(v))
        naive += abs(v.mean()) <= 1.96 * se
    assert covered >= 0.85 * 200 and naive <= 0.7 * 200, (covered, naive)


def test_it_is_reproducible_ignores_nan_and_needs_three_seeds():
    rng = np.random.default_rng(1)
    a, b, v = pairs_of(rng.normal(size=6), rng)
    v[3] = np.nan
    first = seed_bootstrap_interval(a, b, v, seed=4)
    assert first == seed_bootstrap_interval(a, b, v, seed=4)
    assert first != seed_bootstrap_interval(a, b, v, seed=5)
    assert first[0] < np.nanmean(v) < first[1]
    assert np.isnan(seed_bootstrap_interval([0], [1], [0.5])).all()
    with pytest.raises(ValueError):
        seed_bootstrap_interval([0, 1], [1], [0.5, 0.4])


def test_the_unit_bootstrap_covers_the_mean_of_independent_units():
    """Independent units (a teacher and its student): the interval holds the sample mean, is
    reproducible, narrows with more units, and is undefined below three."""
    from repdist.measures.intervals import unit_bootstrap_interval

    rng = np.random.default_rng(1)
    few, many = rng.normal(size=8), rng.normal(size=200)
    low, high = unit_bootstrap_interval(few)
    assert low < few.mean() < high and (low, high) == unit_bootstrap_interval(few)
    wide, narrow = high - low, np.subtract(*unit_bootstrap_interval(many)[::-1])
    assert narrow < wide
    assert np.isnan(unit_bootstrap_interval([1.0, np.nan, 2.0])).all()
