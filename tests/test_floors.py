"""The floors' work counts (repdist_dev.floors, benchmarks/floors.py): the synthetic step's
products are what torch's own FLOP counter counts on a real step, the peaks are measured, and a
floor is the slower of its arithmetic and its memory traffic."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from repdist.data.radial import label_codes
from repdist.models.mlp import build_synthetic_model
from repdist.training.loop import batch_nll
from repdist_dev.floors import (
    bandwidth_gbs,
    floor_s,
    gemm_gflops,
    mlp_step_matmul_flops,
    paper_pair_work,
    svd_flops,
    synthetic_step_work,
)


@pytest.mark.parametrize("width,k", [(16, 6), (64, 4), (32, 18)])
def test_the_synthetic_steps_products_are_what_torch_counts(width, k):
    batch = 128
    model = build_synthetic_model(0, k, width, 2, 0.0, 0.0)
    x = torch.randn(batch, 2)
    labels = torch.randint(0, k, (batch,))
    codes = torch.as_tensor(label_codes(np.arange(k), k))
    with FlopCounterMode(display=False) as counter:
        batch_nll(model, x, codes, labels).sum().backward()
    assert mlp_step_matmul_flops(width, k, batch) == counter.get_total_flops()
    params = sum(p.numel() for p in model.parameters())
    flops, _ = synthetic_step_work(width, k, models=3, batch=batch)
    assert flops == 3 * (counter.get_total_flops() + 12 * params)


def test_the_work_grows_with_the_shapes_as_its_terms_say():
    one, _ = paper_pair_work(2000, 18, 2, 200)
    more_labels, _ = paper_pair_work(2000, 36, 2, 200)
    assert more_labels > 3 * one  # C(K-2, M) label sets and the K x K cross-covariance
    assert svd_flops(10, 4) == svd_flops(4, 10) == 4 * 10 * 16 - 4 * 64 / 3


def test_a_floor_is_the_slower_of_arithmetic_and_memory():
    peak = {"gemm_f64_gflops": 100.0, "bandwidth_gbs": 10.0}
    assert math.isclose(floor_s(1e9, 1e6, peak), 0.01)  # 10 ms of arithmetic, 0.1 ms of bytes
    assert math.isclose(floor_s(1e6, 1e9, peak), 0.1)  # memory-bound


def test_the_peaks_are_measured_rates():
    assert gemm_gflops(np.float64, 1, n=256, repeats=2) > 0.1
    assert bandwidth_gbs(n=2**20, repeats=2) > 0.1
