"""A permutation null's draws all at once, for the measures whose pair work is a product or a
lookup. A draw only reorders the second model's rows, so D draws are one batched product (m_CCA,
SVCCA, CKA, KL) or one gather into the first model's edges (mutual k-NN, CKNNA), not D
comparisons. Each function returns the D scores compare() gives (m1, m2 reordered by each row of
`orders`); tests/test_null.py holds every one to the draw-by-draw path in null.py."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .cca import components_used
from .conventions import AlignmentConventions
from .extra import in_sorted
from .prepared import MUTUAL_KNN_K, AlignmentView, PreparedModel
from .prh import PRH_EPS

DRAW_ELEMENTS = 1 << 22  # gathered values held at once (32 MiB of float64)
DENSE_GRAPH_ROWS = 4096  # up to this N, a neighbour graph is looked up as an N x N mask
COLUMN_LABELS = 32  # KL's null label by label up to this many labels (docs/speed.md)


def _chunks(orders: np.ndarray, row_elements: int) -> list[np.ndarray]:
    """`orders` in blocks of draws whose gathered rows stay within DRAW_ELEMENTS."""
    per = max(1, DRAW_ELEMENTS // max(1, row_elements))
    return [orders[i:i + per] for i in range(0, len(orders), per)]


def _cross(a: np.ndarray, b: np.ndarray, orders: np.ndarray) -> list[np.ndarray]:
    """a^T b[order] per order, (draws, a's columns, b's columns), in blocks of draws: b's rows
    gathered column by column (one take over a contiguous column is several times faster than
    gathering rows of a few values each, at the synthetic sizes' M = 2)."""
    columns = np.ascontiguousarray(b.T)
    return [np.matmul(np.take(columns, block, axis=1), a).transpose(1, 2, 0)
            for block in _chunks(orders, b.size)]


def _canonical_means(q1: np.ndarray, q2: np.ndarray, orders: np.ndarray, n: int) -> np.ndarray:
    """The mean of the first n canonical correlations of q1 and q2[order], per order (bases
    orthonormal: the singular values of q1^T q2[order])."""
    out = []
    for cross in _cross(q1, q2, orders):
        sv = np.clip(np.linalg.svd(cross, compute_uv=False), 0.0, 1.0)
        out.append(sv[:, :n].mean(axis=1))
    return np.concatenate(out)


def mcca(m1: PreparedModel, m2: PreparedModel, side: str, orders: np.ndarray,
         precision: str) -> np.ndarray:
    """m_CCA of f (orders over inputs) or of g (over labels), as compare's exact path."""
    bases = [getattr(m, f"{side}_spectrum").basis(precision) for m in (m1, m2)]
    coordinates = min(getattr(m1, f"{side}_varying"), getattr(m2, f"{side}_varying"))
    n, _ = components_used(bases[0].shape[1], bases[1].shape[1], coordinates)
    if n < 1:
        return np.full(len(orders), np.nan)
    return _canonical_means(bases[0], bases[1], orders, n)


def svcca(v1: AlignmentView, v2: AlignmentView, orders: np.ndarray) -> np.ndarray:
    """SVCCA on the 99%-variance components (extra.svcca_from_bases)."""
    k = min(v1.svcca_kept, v2.svcca_kept, v1.basis.shape[1], v2.basis.shape[1])
    if k < 1:
        return np.full(len(orders), np.nan)
    return _canonical_means(v1.basis[:, :k], v2.basis[:, :k], orders, k)


def cka(v1: AlignmentView, v2: AlignmentView, orders: np.ndarray) -> np.ndarray:
    """Linear CKA (extra.linear_cka_centred): ||X1c^T X2c[order]||_F^2 / the Gram norms."""
    norm = v1.gram_norm * v2.gram_norm
    if not norm > 0:
        return np.full(len(orders), np.nan)
    return np.concatenate([np.einsum("dmq,dmq->d", cross, cross) / norm
                           for cross in _cross(v1.centred, v2.centred, orders)])


def kl(m1: PreparedModel, m2: PreparedModel, orders: np.ndarray) -> np.ndarray:
    """Mean KL(p1(.|x) || p2(.|order(x))) (loglik.mean_kl). Its cross term goes label by label up
    to COLUMN_LABELS labels, from the N x N products p1(.|x) . log p2(.|x') up to
    DENSE_GRAPH_ROWS inputs, else from the reordered log-likelihoods."""
    n, labels = m1.loglik.shape
    p1 = np.exp(m1.loglik)
    own = float(np.sum(p1 * m1.loglik)) / n
    if labels <= COLUMN_LABELS:
        cross = np.zeros(len(orders))
        for p_label, log_label in zip(p1.T, m2.loglik.T, strict=True):
            cross += np.take(np.ascontiguousarray(log_label), orders) @ p_label
        return own - cross / n
    if n <= DENSE_GRAPH_ROWS:
        products = p1 @ m2.loglik.T  # [x, x'] = p1(.|x) . log p2(.|x')
        return own - products[np.arange(n), orders].sum(axis=1) / n
    out = [own - np.einsum("nl,dnl->d", p1, m2.loglik[block]) / n
           for block in _chunks(orders, m2.loglik.size)]
    return np.concatenate(out)


def _member(keys: np.ndarray, n: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Whether edges (rows, cols) are in the graph of these sorted keys: an N x N mask up to
    DENSE_GRAPH_ROWS, else a binary search."""
    if n <= DENSE_GRAPH_ROWS:
        mask = np.zeros(n * n, dtype=bool)
        mask[keys] = True
        return lambda rows, cols: mask[rows * n + cols]
    return lambda rows, cols: in_sorted(rows * n + cols, keys)


def mutual_knn(v1: AlignmentView, v2: AlignmentView, orders: np.ndarray, k: int) -> np.ndarray:
    """Mutual k-NN: the share of x1's edges (i, j) whose (order[i], order[j]) is an edge of x2
    (x2[order]'s graph is x2's relabelled)."""
    if v1.knn is None or v2.knn is None:
        return np.full(len(orders), np.nan)
    n = len(v1.x)
    rows, cols = np.divmod(v1.knn, n)
    member = _member(v2.knn, n)
    return np.array([np.count_nonzero(member(o[rows], o[cols])) for o in orders]) / (n * k)


def cknna(v1: AlignmentView, v2: AlignmentView, orders: np.ndarray, eps: float) -> np.ndarray:
    """CKNNA (prh.cknna_from_keys): the unbiased HSIC of both linear kernels kept on the pairs
    in both top-k graphs, over x1's edges: which are kept, and whether each one's transpose is,
    from x2's graph at the reordered ends."""
    if v1.ip_knn is None or v2.ip_knn is None:
        return np.full(len(orders), np.nan)
    n = len(v1.x)
    rows, cols = np.divmod(v1.ip_knn, n)
    va = np.einsum("ij,ij->i", v1.x[rows], v1.x[cols])
    transposed = cols * n + rows
    pos = np.minimum(np.searchsorted(v1.ip_knn, transposed), len(v1.ip_knn) - 1)
    has_t = v1.ip_knn[pos] == transposed  # (j, i) is an edge of x1 too, at index pos
    member = _member(v2.ip_knn, n)
    x2 = v2.x
    out = np.empty(len(orders))
    for d, o in enumerate(orders):  # one draw at a time: its edges stay in the CPU's caches
        r, c = o[rows], o[cols]
        kept = member(r, c)
        a = np.where(kept, va, 0.0)
        vb = np.where(kept, (x2[r] * x2[c]).sum(axis=1), 0.0)
        ab_t = float(a[has_t] @ vb[pos[has_t]])  # a and vb are 0 off the kept edges
        one_ab_one = np.bincount(cols, a, minlength=n) @ np.bincount(rows, vb, minlength=n)
        value = ab_t + a.sum() * vb.sum() / ((n - 1) * (n - 2)) - 2 * one_ab_one / (n - 2)
        out[d] = value / (n * (n - 3))
    return out / (np.sqrt(v1.cknna_self * v2.cknna_self) + eps)


def batched_null(m1: PreparedModel, m2: PreparedModel, measure: str, orders: np.ndarray,
                 precision: str, conventions: AlignmentConventions,
                 low_rank: bool) -> np.ndarray | None:
    """The D scores of `measure` between m1 and m2 reordered by each row of `orders`, or None
    where it has no batched form here (d_LLV, the low-rank path, z-scored SVCCA, ...)."""
    if low_rank and measure in ("kl", "mcca_g"):
        return None  # the low-rank path's own (streamed, covariance) forms
    if measure == "kl":
        return kl(m1, m2, orders)
    if measure in ("mcca_f", "mcca_g"):
        return mcca(m1, m2, measure[-1], orders, precision)
    v1, v2 = m1.view(conventions), m2.view(conventions)
    if measure == "cka_f":
        return cka(v1, v2, orders)
    if measure == "svcca_f" and conventions.svcca == "variance":
        return svcca(v1, v2, orders)
    if measure == "mutual_knn_f":
        return mutual_knn(v1, v2, orders, MUTUAL_KNN_K)
    if measure == "cknna_f" and len(v1.x) >= 4:
        return cknna(v1, v2, orders, PRH_EPS)
    return None
