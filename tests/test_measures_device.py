"""compare(device=...): the low-rank path's streamed logits and pivot search with torch on a
device (a GPU where there is one). On this CPU the torch code runs on torch's CPU device and must
give the numpy path's numbers (float64, 1e-12); `make gpu-check` compares the two on a GPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from repdist.measures import compare, prepare
from repdist.measures import low_rank as lr
from repdist.measures.compare import CompareSettings

from test_measures_low_rank import pair

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels

NO_CUDA = not torch.cuda.is_available()


def factors(seed: int, k: int = 300, tie: tuple[int, ...] = ()):
    """Two models' low-rank factors; `tie` labels share model 1's unembedding (their log-odds
    against each other have zero variance: NaN terms)."""
    f1, g1, f2, g2 = pair(seed, n=800, k=k, m=4)
    for label in tie[1:]:
        g1[label] = g1[tie[0]]
    a, b = prepare(f1, g1, method="low_rank"), prepare(f2, g2, method="low_rank")
    return lr.PivotRows(a.loglik_factors, b.loglik_factors)


@pytest.mark.parametrize("dist_type", ["max", "mean"])
@pytest.mark.parametrize("tie", [(), (5, 7), (3, 9, 11)])
def test_the_device_pivot_rows_are_the_numpy_ones(dist_type, tie):
    """Every pivot's row minimum (NaN rules of _objective_from_terms included: one tied label
    leaves one left-out label usable, two leave none), the probe's column maxima and the
    bounds, torch on the CPU against numpy: 1e-12 relative."""
    rows = factors(1, tie=tie)
    cpu, dev = lr.PivotSearch(rows, 300, dist_type), lr.DevicePivotSearch(rows, 300, dist_type,
                                                                           "cpu")
    worst_cpu, worst_dev = cpu.evaluate(np.arange(300)), dev.evaluate(np.arange(300))
    np.testing.assert_allclose(dev.lowest, cpu.lowest, rtol=1e-12)
    np.testing.assert_allclose(worst_dev, worst_cpu, rtol=1e-12)
    if tie:
        assert np.isinf(cpu.lowest).any() or len(tie) == 2  # the planted NaNs are reached
    cols = np.sort(np.random.default_rng(0).choice(300, 40, replace=False))
    np.testing.assert_allclose(dev.lower_bounds(cols), cpu.lower_bounds(cols), rtol=1e-12)


@pytest.mark.parametrize("max_pivots", [300, 200, 5])
def test_the_label_side_on_a_device_is_the_numpy_one(max_pivots):
    """The whole label side (every pivot, the bounded search, and a search stopped at
    max_pivots) with device="cpu" through torch: the same pivot, left-out label, rows searched
    and terms as the numpy path."""
    rows = factors(2)
    a, b = rows.a, rows.b
    cpu = lr.low_rank_label_side(a, b, "max", max_pivots, 0)
    dev = lr.low_rank_label_side(a, b, "max", max_pivots, 0, device="cpu")
    assert (dev.y_pivot, dev.y_leave_out, dev.pivots_searched, dev.proven) == (
        cpu.y_pivot, cpu.y_leave_out, cpu.pivots_searched, cpu.proven)
    assert dev.terms.t1 == pytest.approx(cpu.terms.t1, rel=1e-12)
    assert dev.terms.t3 == pytest.approx(cpu.terms.t3, rel=1e-12)


def test_the_stream_on_a_device_is_the_numpy_one(monkeypatch):
    """KL and both lse through torch on a device (here the CPU, blocks made small enough that
    the running maximum moves between them) equal the default path's to 1e-13."""
    monkeypatch.setattr(lr, "DEVICE_STREAM_LABELS", 7)
    monkeypatch.setattr(lr, "DEVICE_STREAM_ROWS", 100)
    f1, g1, f2, g2 = pair(6)
    f1, f2 = 4 * f1, 4 * f2
    kl, lse1, lse2 = lr.streamed_kl(f1, g1, f2, g2)
    kl_d, lse1_d, lse2_d = lr.streamed_kl(f1, g1, f2, g2, device="cpu")
    assert kl_d == pytest.approx(kl, rel=1e-13)
    np.testing.assert_allclose(lse1_d, lse1, rtol=1e-13)
    np.testing.assert_allclose(lse2_d, lse2, rtol=1e-13)
    np.testing.assert_allclose(lr.streamed_lse(f1, g1, device="cpu"), lse1, rtol=1e-13)


def test_compare_on_the_cpu_device_is_todays_compare():
    """device="cpu" (the default) and "auto" without a GPU take the path as it was: the very
    same numbers."""
    f1, g1, f2, g2 = pair(3, k=200)
    common = dict(method="low_rank", max_label_sets=20, max_pivots=200)
    base = compare(f1, g1, f2, g2, **common)
    assert compare(f1, g1, f2, g2, device="cpu", **common) == base
    if NO_CUDA:
        assert compare(f1, g1, f2, g2, device="auto", **common) == base


def test_a_device_that_is_not_there_is_refused_by_name():
    assert lr.compute_device("cpu") is None
    assert lr.compute_device("cuda:0" if not NO_CUDA else "cpu") in (None, "cuda:0")
    for bad in ("gpu0", "tpu", 3):
        with pytest.raises(ValueError, match="device"):
            CompareSettings(device=bad)
    if NO_CUDA:
        assert lr.compute_device("auto") is None
        with pytest.raises(ValueError, match="torch sees no CUDA GPU"):
            CompareSettings(device="cuda")


def test_the_command_line_passes_its_device():
    from argparse import ArgumentParser

    from repdist.cli.compare import _check_arguments, add_arguments

    parser = ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["a.npz", "b.npz", "-o", "pairs.parquet", "--device", "auto"])
    assert _check_arguments(args)[1].device == "auto"
    assert parser.parse_args(["a.npz", "-o", "p.csv"]).device == "cpu"
