"""The follow-up's measures (Nielsen et al. 2026, "Logit Distance Bounds Representational
Similarity": their `dissimilarities/` and `figures/bound_plot_cifar.py`) from two models'
embeddings f (N x M) and unembeddings g (K x M); the logits are f g^T. Each is defined at its
function; docs/logit_distance.md says how ours differ from theirs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from .cca import canonical_correlations, orthonormal_basis

MAX_SUBSETS = 20_000  # (pivot, subset) pairs d_rep averages over before it samples them
SUBSET_STREAM = 0xD4E9  # seeds d_rep's sample of (pivot, subset) pairs


def logits(f: np.ndarray, g: np.ndarray) -> np.ndarray:
    return np.asarray(f, dtype=np.float64) @ np.asarray(g, dtype=np.float64).T


def _log_softmax(z: np.ndarray) -> np.ndarray:
    shift = z.max(axis=1, keepdims=True)
    return z - shift - np.log(np.exp(z - shift).sum(axis=1, keepdims=True))


def kl_from_logits(teacher: np.ndarray, student: np.ndarray) -> float:
    """Mean over inputs of KL(teacher || student) from two N x K logit arrays (their metric,
    torch's KLDivLoss(batchmean) of the log-softmaxes, here in float64)."""
    log_t, log_s = _log_softmax(teacher), _log_softmax(student)
    return float(np.mean(np.sum(np.exp(log_t) * (log_t - log_s), axis=1)))


def min_probability(z: np.ndarray) -> float:
    """The smallest probability a model gives any label on any input (their min_prob, tau)."""
    return float(np.exp(_log_softmax(z).min()))


def d_logit_squared(z1: np.ndarray, z2: np.ndarray) -> float:
    """E_x sum_y of the squared difference of the logits centred over labels (their
    `calculate_d_2_logit`; the square of extra.d_logit)."""
    d = (z1 - z1.mean(axis=1, keepdims=True)) - (z2 - z2.mean(axis=1, keepdims=True))
    return float(np.einsum("ij,ij->", d, d) / d.shape[0])


@dataclass(frozen=True)
class DRep:
    value: float  # the mean of E_x ||f_1 - A f_2||^2 over the (pivot, subset) pairs used
    pairs: int  # (pivot, subset) pairs averaged over
    singular: int  # pairs left out: L_1 singular
    sampled: bool  # a seeded sample of the pairs (more than max_subsets)


def subsets(num_labels: int, rep_dim: int, max_subsets: int = MAX_SUBSETS,
            seed: int = 0) -> tuple[np.ndarray, np.ndarray, bool]:
    """(pivots (P,), subsets (P, M) of label indices, sampled): every pivot with every M-subset
    of the other labels, or `max_subsets` pairs drawn uniformly (seeded) where there are more."""
    if num_labels - 1 < rep_dim:
        raise ValueError(f"d_rep needs K - 1 >= M labels besides the pivot, got K={num_labels}, "
                         f"M={rep_dim}")
    total = num_labels * math.comb(num_labels - 1, rep_dim)
    if total <= max_subsets:
        pairs = [(p, combo) for p in range(num_labels)
                 for combo in combinations([y for y in range(num_labels) if y != p], rep_dim)]
        rows = np.array([combo for _, combo in pairs], dtype=np.intp).reshape(-1, rep_dim)
        return np.array([p for p, _ in pairs]), rows, False
    rng = np.random.default_rng([SUBSET_STREAM, seed])
    pivots = rng.integers(num_labels, size=max_subsets)
    keys = rng.random((max_subsets, num_labels))
    keys[np.arange(max_subsets), pivots] = np.inf  # never the pivot itself
    return pivots, np.sort(np.argsort(keys, axis=1)[:, :rep_dim], axis=1), True


def _d_rep_terms(f1: np.ndarray, g1: np.ndarray, f2: np.ndarray, g2: np.ndarray,
                 max_subsets: int, seed: int) -> tuple[np.ndarray, DRep]:
    """The maps A of every (pivot, subset) pair (singular L_1 left out), as a DRep without its
    value yet."""
    g1, g2 = np.asarray(g1, dtype=np.float64), np.asarray(g2, dtype=np.float64)
    if np.shape(f1) != np.shape(f2) or g1.shape != g2.shape or np.shape(f1)[1] != g1.shape[1]:
        raise ValueError(f"d_rep compares models of one width: f {np.shape(f1)} "
                         f"{np.shape(f2)}, g {g1.shape} {g2.shape}")
    pivots, rows, sampled = subsets(g1.shape[0], g1.shape[1], max_subsets, seed)
    l1 = g1[rows] - g1[pivots][:, None, :]  # (P, M, M): row j is g(S_j) - g(p)
    l2 = g2[rows] - g2[pivots][:, None, :]
    ok = np.linalg.cond(l1) < 1.0 / np.finfo(np.float64).eps
    a = np.linalg.solve(l1[ok], l2[ok])  # A = L1^{-1} L2, (P, M, M)
    return a, DRep(float("nan"), int(ok.sum()), int((~ok).sum()), sampled)


def d_rep(f1: np.ndarray, g1: np.ndarray, f2: np.ndarray, g2: np.ndarray,
          max_subsets: int = MAX_SUBSETS, seed: int = 0) -> DRep:
    """d_rep of model 1 (f1, g1) against model 2, both of width M. For a pivot p and M other
    labels S, L_m = [g_m(y) - g_m(p)]_{y in S}; equal distributions give f_1 = A f_2, A =
    L_1^{-1} L_2. d_rep is the mean of E_x ||f_1(x) - A f_2(x)||^2 over every (pivot, subset)
    pair (a seeded sample of `max_subsets` where there are more; singular L_1 left out), from
    second moments: O(N M^2) once, O(M^3) a pair. Their two functions use 7 pivots x 15 subsets,
    one without the square, one dividing by the pairs twice (docs/logit_distance.md)."""
    f1, f2 = np.asarray(f1, dtype=np.float64), np.asarray(f2, dtype=np.float64)
    a, found = _d_rep_terms(f1, g1, f2, g2, max_subsets, seed)
    if not len(a):
        return found
    n = len(f1)
    s11, s21, s22 = f1.T @ f1 / n, f2.T @ f1 / n, f2.T @ f2 / n
    value = (np.trace(s11) - 2.0 * np.einsum("pij,ji->p", a, s21).mean()
             + np.einsum("pij,jk,pik->p", a, s22, a).mean())
    return DRep(max(float(value), 0.0), found.pairs, found.singular, found.sampled)


def d_rep_null(f1: np.ndarray, g1: np.ndarray, f2: np.ndarray, g2: np.ndarray,
               orders: np.ndarray, max_subsets: int = MAX_SUBSETS, seed: int = 0) -> np.ndarray:
    """d_rep with model 1's inputs reordered by each row of `orders` (K, N): its permutation
    null. The maps A and both models' own second moments do not see the order; only the cross
    moment E[f2 f1^T] does, so every draw costs O(N M^2) (the maps' mean taken once)."""
    f1, f2 = np.asarray(f1, dtype=np.float64), np.asarray(f2, dtype=np.float64)
    a, _ = _d_rep_terms(f1, g1, f2, g2, max_subsets, seed)
    if not len(a):
        return np.full(len(orders), np.nan)
    n = len(f1)
    fixed = np.trace(f1.T @ f1 / n) + np.einsum("pij,jk,pik->p", a, f2.T @ f2 / n, a).mean()
    mapped = f2 @ a.mean(axis=0).T  # (N, M): tr(mean A . E[f2 f1^T]) = E[mapped . f1]
    cross = np.array([np.einsum("ni,ni->", mapped, f1[order]) for order in orders]) / n
    return np.clip(fixed - 2.0 * cross, 0.0, None)


@dataclass(frozen=True)
class F1Bound:
    left: float  # sum_k (1 - rho_k^2) lambda_k
    right: float  # d_logit^2
    correlations: np.ndarray  # rho, descending
    eigenvalues: np.ndarray  # lambda, descending (the largest M_1 of model 1's logits)

    @property
    def holds(self) -> bool:
        return self.left <= self.right * (1 + 1e-9) + 1e-12


def f1_bound(f1: np.ndarray, g1: np.ndarray, f2: np.ndarray, g2: np.ndarray) -> F1Bound:
    """Theorem F.1's two sides for model 1 (the teacher) and model 2 (the student): rho_k the
    embeddings' canonical correlations (descending, zeros past their number), lambda_k the
    largest M eigenvalues of the covariance of model 1's centred logits. left <= right always:
    model 2's logits are one least-squares fit of model 1's from its embedding, which leaves at
    least the left side (docs/logit_distance.md). Their script leaves the eigenvalues unsorted."""
    z1, z2 = logits(f1, g1), logits(f2, g2)
    centred = z1 - z1.mean(axis=1, keepdims=True)
    centred = centred - centred.mean(axis=0, keepdims=True)
    m1 = np.asarray(f1).shape[1]
    eigenvalues = np.sort(np.linalg.eigvalsh(centred.T @ centred / len(z1)))[::-1][:m1]
    rho = canonical_correlations(orthonormal_basis(f1), orthonormal_basis(f2))
    rho = np.concatenate([np.sort(rho)[::-1], np.zeros(max(0, m1 - len(rho)))])[:m1]
    left = float(np.sum((1.0 - rho**2) * np.clip(eigenvalues, 0.0, None)))
    return F1Bound(left, d_logit_squared(z1, z2), rho, eigenvalues)


def kl_bound(teacher: np.ndarray, student: np.ndarray) -> tuple[float, float]:
    """(2 KL(teacher || student) / tau^2, tau) from two N x K logit arrays, tau the smallest
    probability either model gives: every p, p' >= tau bounds d_logit^2 by it (|log p - log p'|
    <= |p - p'| / tau, then Pinsker)."""
    tau = min(min_probability(teacher), min_probability(student))
    return 2.0 * kl_from_logits(teacher, student) / tau**2, tau
