"""The floors of the benchmarks (benchmarks/floors.py): this machine's peaks (float64 and float32
GEMM on one thread and on every core, memory bandwidth) and the work of each benchmark, counted
by formulas of its shapes (each function's docstring names its terms; the FLOPs of an SVD of an
m x n matrix, values only, are taken as 4mn^2 - 4n^3/3). A benchmark's floor is max(FLOPs /
GEMM peak, bytes / bandwidth): its time if every operation ran at the machine's best rate."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits


# compare()'s names of the paper's five measures (what the original computes)
PAPER_MEASURES = ("kl", "d_llv", "m_svd_f", "m_svd_g", "d_fg", "mcca_f", "mcca_g")


def best_of(fn: Callable[[], object], repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def gemm_gflops(dtype: type, threads: int | None, n: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of an n x n matrix product (2n^3 FLOPs), the best of `repeats`."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(n, n)).astype(dtype), rng.normal(size=(n, n)).astype(dtype)
    with threadpool_limits(threads):
        a @ b  # the BLAS's threads started
        return 2 * n**3 / best_of(lambda: a @ b, repeats) / 1e9


def bandwidth_gbs(n: int = 2**25, repeats: int = 5) -> float:
    """GB/s of a triad c = a + s*b over three n-element float64 arrays (768 MiB at the default):
    three arrays' bytes a pass (read a and b, write c)."""
    a, b, c = np.ones(n), np.full(n, 2.0), np.empty(n)

    def triad() -> None:
        np.multiply(b, 3.0, out=c)
        np.add(c, a, out=c)  # c read and written twice: count the bytes numpy moves

    triad()
    seconds = best_of(triad, repeats)
    return 5 * 8 * n / seconds / 1e9  # b read, c written, c read, a read, c written


def peaks() -> dict[str, float]:
    return {"gemm_f64_gflops": gemm_gflops(np.float64, None),
            "gemm_f64_1thread_gflops": gemm_gflops(np.float64, 1),
            "gemm_f32_gflops": gemm_gflops(np.float32, None),
            "gemm_f32_1thread_gflops": gemm_gflops(np.float32, 1),
            "bandwidth_gbs": bandwidth_gbs()}


def floor_s(flops: float, bytes_: float, peak: dict[str, float], key: str = "gemm_f64_gflops"
            ) -> float:
    return max(flops / (peak[key] * 1e9), bytes_ / (peak["bandwidth_gbs"] * 1e9))


def svd_flops(rows: int, cols: int) -> float:
    small, large = min(rows, cols), max(rows, cols)
    return 4 * large * small**2 - 4 * small**3 / 3


def paper_pair_work(n: int, k: int, m: int, num_samples: int) -> tuple[float, float]:
    """FLOPs and bytes of one pair by the paper's five measures, from prepared models: KL over
    the N x K log-likelihoods (~6NK), the pivot objective's cross-covariance (2NK^2), the chosen
    pivot's exact terms (~20NK), m_SVD of f over its C(K-2, M) label sets (each an M x M
    cross-covariance over N inputs, 2NM^2, its standardising ~4NM, and an M x M SVD), the
    input side's candidate sets (~10 S(M+1)K), m_SVD of g and m_CCA of f and g (bases prepared:
    2NM^2 and 2KM^2 and two M x M SVDs). Bytes: both models' log-likelihoods and f, read once."""
    sets = math.comb(k - 2, m)
    flops = (6 * n * k + 2 * n * k**2 + 20 * n * k
             + sets * (2 * n * m**2 + 4 * n * m + svd_flops(m, m))
             + 10 * num_samples * (m + 1) * k
             + 2 * (n + k) * m**2 + 3 * svd_flops(m, m))
    bytes_ = 8 * 2 * (n * k + n * m)
    return flops, bytes_


def prepare_work(n: int, k: int, m: int) -> tuple[float, float]:
    """FLOPs and bytes of `prepare()` for the paper's five: the log-likelihoods (2NKM and a
    log-sum-exp, ~5NK), their centring and K x K covariance (2NK^2) and f's and g's bases
    (QR, ~4NM^2 + 4KM^2); bytes: f and g read, N x K written and read twice."""
    flops = 2 * n * k * m + 5 * n * k + 2 * n * k**2 + 4 * (n + k) * m**2
    return flops, 8 * (n * m + k * m + 3 * n * k)


def gpt2_work(n: int, k: int, m: int, label_sets: int) -> tuple[float, float]:
    """FLOPs and bytes of compare() at vocabulary scale (the low-rank path) by its dominant
    terms: KL streamed over both models' logits (2NKM each, 4NKM), each model's K x M and N x M
    covariances (2(N+K)M^2 each), the k-NN searches on f (an N x N product per model and one
    across, 2N^2M each), m_SVD of f over its label sets (two M x M products and an M x M SVD a
    set). Bytes: f and g of both models read once (the logits are never stored)."""
    flops = (4 * n * k * m + 2 * 2 * (n + k) * m**2 + 3 * 2 * n**2 * m
             + label_sets * (4 * m**3 + svd_flops(m, m)))
    return flops, 8 * 2 * (n * m + k * m)


def null_draw_work(n: int, k: int, m: int) -> tuple[float, float]:
    """FLOPs and bytes of one draw of the default null (KL, m_CCA f and g, linear CKA, SVCCA,
    mutual k-NN, each on the second model's rows permuted): KL over the N x K log-likelihoods
    (~6NK), the bases' cross products (2NM^2 for f, three of them; 2KM^2 for g), the k-NN
    overlap (N k lookups, k = 10). Bytes: the permuted N x K and N x M arrays gathered (read and
    written) and read once more."""
    flops = 6 * n * k + 3 * 2 * n * m**2 + 2 * k * m**2 + 10 * n
    return flops, 8 * 3 * (n * k + 3 * n * m) + 8 * 10 * n


def mlp_step_matmul_flops(width: int, k: int, batch: int = 128, rep_dim: int = 2) -> float:
    """The products of one training step of one synthetic MLP (torch's FLOP counter counts the
    same): f (2 -> W -> W -> W -> M) on the batch and g (K-1 -> W -> W -> W -> M) on the K
    codes and the B x K logits, forward (2 x the weights x the rows) and backward (twice that,
    less the gradients of the inputs, which nothing needs)."""
    f_weights = 2 * width + 2 * width**2 + width * rep_dim
    g_weights = (k - 1) * width + 2 * width**2 + width * rep_dim
    forward = 2 * (batch * f_weights + k * g_weights + batch * k * rep_dim)
    return 3 * forward - 2 * (batch * 2 * width + k * (k - 1) * width)


def synthetic_step_work(width: int, k: int, models: int, batch: int = 128,
                        rep_dim: int = 2) -> tuple[float, float]:
    """FLOPs and bytes of one step of a stack of `models` synthetic MLPs: each one's products
    (mlp_step_matmul_flops) and Adam over its parameters (~12 FLOPs each). Bytes: each
    parameter's weight, gradient and Adam's two moments, read and written, and f's activations
    on the batch written and read back (float32)."""
    params = (2 + k - 1) * width + 4 * width**2 + 2 * width * rep_dim + 6 * width
    flops = models * (mlp_step_matmul_flops(width, k, batch, rep_dim) + 12 * params)
    bytes_ = models * (4 * 2 * 4 * params + 4 * 2 * 3 * batch * 3 * width)
    return flops, bytes_
