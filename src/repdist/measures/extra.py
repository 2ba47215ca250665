"""Similarity measures beyond the paper, to ask whether they agree with d_LLV.

- linear CKA (Kornblith et al. 2019): invariant to orthogonal maps and isotropic scaling only;
- SVCCA (Raghu et al. 2017): CCA on the top-k principal components;
- mutual k-NN (Huh et al. 2024): mean overlap of the k-NN sets by cosine, self excluded, as the
  authors' code; blockwise, so N = 50,000 never needs an N x N matrix;
- d_logit (Nielsen et al. 2026): with l~_y(x) = log p(y|x) - mean_y' log p(y'|x), the centred
  log-probabilities, d_logit^2 = E_x sum_y (l~_y(x) - l~'_y(x))^2."""

from __future__ import annotations

import sys

import numpy as np

from ..io.host import to_host
from .cca import canonical_correlations, is_constant, orthonormal_basis

KNN_BLOCK_ROWS = 1024  # rows of the similarity matrix held at once: 1024 x N float64
KDTREE_MAX_DIM = 16  # k-d trees are exact and fast in low dimension; beyond, go blockwise
# By inner product, the tree's search widens with the dimension: at N = 10,000 (Gaussian) it
# takes 0.07 s in 3 dimensions (M = 2), 1.0 s in 6, about the blockwise scan's 1.5 s beyond.
MIPS_KDTREE_MAX_DIM = 6
IP_BLOCK_ELEMENTS = 1 << 22  # beyond it, similarity blocks of at most 4M elements (32 MiB)
# Squared distances within KNN_TIE (unit sphere: 2 - 2 cos; the inner product's sphere of radius
# R: relative to R^2) are tied, taken by index. Rounding leaves ~1e-16 there (one kernel's order
# of summation against another's); points this close are duplicates.
KNN_TIE = 1e-12
# From this many similarities in a search on, torch.topk (parallel over rows, ~20x numpy's
# argpartition on a 1,024 x 10,000 float64 block on 2 cores) pays for importing torch (~1.3 s)
# in a process that has not; below it numpy's argpartition, as in the measures' conda env.
TOPK_TORCH_ELEMENTS = 1 << 25
SVCCA_VARIANCE = 0.99  # keep the PCs explaining this share of variance (Raghu et al.)
SHARE_TIE = 1e-12  # a cumulative share this close below SVCCA_VARIANCE counts as reaching it


def centred(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x - x.mean(axis=0, keepdims=True)


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """||Xc^T Yc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F); NaN if either representation is constant
    (to within rounding: cca.is_constant)."""
    return linear_cka_centred(centred(x), centred(y), gram_norm(x), gram_norm(y))


def gram_norm(x: np.ndarray) -> float:
    """||Xc^T Xc||_F of the centred x: linear CKA's normaliser; exactly 0 when x is constant
    to within rounding (cca.is_constant), so that CKA is NaN then on every CPU."""
    x = np.asarray(x, dtype=np.float64)
    xc = centred(x)
    if is_constant(float(np.linalg.norm(xc)), float(np.linalg.norm(x))):
        return 0.0
    return float(np.linalg.norm(xc.T @ xc))


def components_for_variance(x: np.ndarray, share: float = SVCCA_VARIANCE) -> int:
    """The principal components whose cumulative share of the variance reaches `share` (within
    SHARE_TIE: a share of exactly 0.99 in exact arithmetic reaches it on every CPU)."""
    return components_explaining(np.linalg.svd(centred(x), compute_uv=False), share)


def components_explaining(s: np.ndarray, share: float = SVCCA_VARIANCE) -> int:
    """The same from the centred x's singular values, descending (a Spectrum's `s`)."""
    explained = np.cumsum(s**2) / np.sum(s**2) if s[0] > 0 else np.ones(1)
    return int(np.searchsorted(explained, share - SHARE_TIE) + 1)


def svcca_from_bases(basis_x: np.ndarray, basis_y: np.ndarray, kept_x: int, kept_y: int) -> float:
    """SVCCA from orthonormal bases ordered by singular value (the left singular vectors of the
    centred data: its first k columns span the top-k PCs) and each side's 99%-variance count."""
    k = min(kept_x, kept_y, basis_x.shape[1], basis_y.shape[1])
    if k < 1:
        return float("nan")
    return float(canonical_correlations(basis_x[:, :k], basis_y[:, :k])[:k].mean())


def svcca(x: np.ndarray, y: np.ndarray, k: int | None = None) -> float:
    """Mean canonical correlation between the top-k PCs of x and of y; k defaults to the smaller
    count of PCs explaining 99% of the variance (k = M: plain m_CCA). NaN if k exceeds a rank."""
    if k is None:
        k = min(components_for_variance(x), components_for_variance(y))
    basis_x, basis_y = orthonormal_basis(x), orthonormal_basis(y)
    if min(basis_x.shape[1], basis_y.shape[1]) < k:
        return float("nan")
    return svcca_from_bases(basis_x, basis_y, k, k)


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm, in float64 (a zero row stays zero)."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def knn_indices(x: np.ndarray, k: int = 10, block: int = KNN_BLOCK_ROWS) -> np.ndarray:
    """Indices (N x k) of each row's k nearest other rows by cosine, nearest first, ties (KNN_TIE)
    by index. On unit vectors |u - v|^2 = 2 - 2 u.v, so in low dimension an exact k-d tree (O(N)
    memory) gives the same neighbours as the blockwise scan."""
    n = len(x)
    if not 0 < k < n:
        raise ValueError(f"k must be in [1, N-1] = [1, {n - 1}], got {k}")
    unit = unit_rows(x)
    if unit.shape[1] <= KDTREE_MAX_DIM:
        return _tree_neighbours(unit, unit, k, KNN_TIE)
    return knn_indices_blockwise(unit, k, block)


def tie_ordered(dist: np.ndarray, idx: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Each row's candidates (dist ascending, as a search returns them) reordered so that ties
    go by index: a tie is a run of neighbours each within `tol` of the one before. Returns the
    indices and each one's tie group (0, 1, ... along the row)."""
    group = np.zeros(dist.shape, dtype=np.int64)
    np.cumsum(np.diff(dist, axis=1) > tol, axis=1, out=group[:, 1:])
    order = np.lexsort((idx, group), axis=1)
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(group, order, axis=1)


def _without_self(idx: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """Each row's first k candidates other than its own index (normally the first; with
    duplicate points anywhere in its tie)."""
    own = idx == rows[:, None]
    drop = np.where(own.any(axis=1), own.argmax(axis=1), idx.shape[1] - 1)
    keep = np.ones_like(idx, dtype=bool)
    keep[np.arange(len(idx)), drop] = False
    return idx[keep].reshape(len(idx), -1)[:, :k]


def _tree_neighbours(points: np.ndarray, queries: np.ndarray, k: int, tol: float) -> np.ndarray:
    """Each query's k nearest points but its own (query i is point i), nearest first, ties within
    `tol` of squared distance by index, by an exact k-d tree. One candidate past k + 1 shows
    whether the last place's tie is whole; a row where it is not asks for twice as many."""
    from scipy.spatial import cKDTree

    n = len(points)
    # Queries in the tree's own point order visit the same leaves one after another: the
    # same answers (each query is independent), faster on large N (benchmarks/measures_scale.py).
    tree = cKDTree(points)
    out = np.empty((n, k), dtype=np.intp)
    rows, want = tree.indices, k + 2
    while len(rows):
        want = min(want, n)
        dist, idx = tree.query(queries[rows], k=want, workers=-1)
        idx, group = tie_ordered(dist**2, idx, tol)
        whole = (group[:, k] != group[:, -1]) | (want == n)
        if whole.any():
            out[rows[whole]] = _without_self(idx[whole, : k + 1], rows[whole], k)
        rows, want = rows[~whole], 2 * want
    return out


def ip_knn_indices(x: np.ndarray, k: int = 10, block: int = KNN_BLOCK_ROWS) -> np.ndarray:
    """Each row's k other rows of largest inner product, largest first, ties (KNN_TIE x the
    largest squared norm) by index: PRH's CKNNA neighbours (metrics.py), where knn_indices ranks
    by cosine. In low dimension by an exact k-d tree: with R the largest norm, points p_j = [x_j,
    sqrt(R^2 - |x_j|^2)] and queries q_i = [x_i R / |x_i|, 0] all lie on the sphere of radius
    R, and |q_i - p_j|^2 = 2 R^2 - 2 (R / |x_i|) x_i.x_j."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    if not 0 < k < n:
        raise ValueError(f"k must be in [1, N-1] = [1, {n - 1}], got {k}")
    sq = np.einsum("ij,ij->i", x, x)
    r2 = sq.max()
    tol = KNN_TIE * max(float(r2), 1e-300)
    if x.shape[1] + 1 > MIPS_KDTREE_MAX_DIM:
        return knn_indices_blockwise(x, k, max(1, min(block, IP_BLOCK_ELEMENTS // n)), tol)
    points = np.hstack([x, np.sqrt(np.maximum(r2 - sq, 0.0))[:, None]])
    norms = np.sqrt(sq)
    scale = np.divide(np.sqrt(r2), norms, out=np.ones_like(norms), where=norms > 0)
    queries = np.hstack([x * scale[:, None], np.zeros((n, 1))])
    return _tree_neighbours(points, queries, k, tol)


def knn_indices_blockwise(unit: np.ndarray, k: int, block: int = KNN_BLOCK_ROWS,
                          tol: float = KNN_TIE) -> np.ndarray:
    """The same from `block` rows of the similarity matrix at a time (any dimension), ties
    within `tol` of 2 x similarity (a squared distance on the unit sphere) by index."""
    n = len(unit)
    out = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, block):
        out[start : start + block] = _block_neighbours(unit[start : start + block] @ unit.T,
                                                       start, k, tol)
    return out


def knn_both_blockwise(x: np.ndarray, k: int,
                       block: int = KNN_BLOCK_ROWS) -> tuple[np.ndarray, np.ndarray]:
    """knn_indices(x, k) and ip_knn_indices(x, k) in any dimension from one pass over x x^T: a
    block of inner products divided by both rows' norms is the block of cosines (zero rows: 0,
    as unit_rows leaves them), off the unit rows' product by ~1e-16, which KNN_TIE absorbs."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    if not 0 < k < n:
        raise ValueError(f"k must be in [1, N-1] = [1, {n - 1}], got {k}")
    sq = np.einsum("ij,ij->i", x, x)
    norms = np.sqrt(sq)
    inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    ip_tol = KNN_TIE * max(float(sq.max()), 1e-300)
    block = max(1, min(block, IP_BLOCK_ELEMENTS // n))
    by_cosine, by_product = np.empty((n, k), dtype=np.int64), np.empty((n, k), dtype=np.int64)
    for start in range(0, n, block):
        products = x[start : start + block] @ x.T
        cosines = products * inverse[start : start + block, None]
        cosines *= inverse[None, :]
        by_cosine[start : start + block] = _block_neighbours(cosines, start, k, KNN_TIE)
        by_product[start : start + block] = _block_neighbours(products, start, k, ip_tol)
    return by_cosine, by_product


def _block_neighbours(sim: np.ndarray, start: int, k: int, tol: float) -> np.ndarray:
    """The k nearest of each row start, start + 1, ... of a block of similarities (its own
    entries overwritten with -inf), ties within `tol` of 2 x similarity by index."""
    want = min(k + 2, sim.shape[1])
    rows = np.arange(sim.shape[0])
    sim[rows, start + rows] = -np.inf  # never your own neighbour
    part = largest_in_rows(sim, want, total=sim.shape[1] ** 2)
    top = np.take_along_axis(sim, part, axis=1)
    order = np.argsort(-top, axis=1, kind="stable")
    idx, group = tie_ordered(np.take_along_axis(-2.0 * top, order, axis=1),
                             np.take_along_axis(part, order, axis=1), tol)
    out = idx[:, :k]
    for row in np.flatnonzero(group[:, k - 1] == group[:, -1]):  # a tie past the candidates
        full = np.argsort(-sim[row], kind="stable")
        idx_row, _ = tie_ordered(-2.0 * sim[row, full][None], full[None], tol)
        out[row] = idx_row[0, :k]
    return out


def largest_in_rows(sim: np.ndarray, want: int, total: int | None = None) -> np.ndarray:
    """Column indices of each row's `want` largest entries (finite rows; in no set order), of a
    search of `total` entries that `sim` is one block of. Which of equal entries at the edge is
    taken is left to the callers' ties (tie_ordered), whose answer does not depend on it."""
    torch = _torch_worth_importing(sim.size if total is None else total)
    if torch is None:
        return np.argpartition(-sim, want - 1, axis=1)[:, :want]
    return to_host(torch.topk(torch.from_numpy(sim), want, dim=1, sorted=False).indices)


def _torch_worth_importing(elements: int):  # noqa: ANN202 - the module or None
    """torch where a process has it already, or where the work pays its import; else None."""
    if "torch" in sys.modules or elements < TOPK_TORCH_ELEMENTS:
        return sys.modules.get("torch")
    try:
        import torch
    except ImportError:
        return None
    return torch


def inverse_order(order: np.ndarray) -> np.ndarray:
    """The inverse of a reordering of rows: row j of the old is row inverse[j] of the new."""
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return inverse


def relabelled_neighbours(nn: np.ndarray, order: np.ndarray,
                          inverse: np.ndarray | None = None) -> np.ndarray:
    """The neighbour lists of x[order] from x's (row i is the old row order[i], its neighbours
    relabelled, in their order: ties stay as first found)."""
    return (inverse_order(order) if inverse is None else inverse)[nn[order]]


def knn_edge_keys(nn: np.ndarray) -> np.ndarray:
    """The k-NN graph as sorted edge keys i*N + j, so two graphs overlap by one searchsorted.
    Row i's keys lie in [iN, (i+1)N): sorting each row sorts them all."""
    n = len(nn)
    return (np.arange(n, dtype=np.int64)[:, None] * n + np.sort(nn, axis=1)).ravel()


def in_sorted(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """Which of `keys` are in the sorted array `sorted_keys` (a boolean mask)."""
    if not len(sorted_keys):
        return np.zeros(len(keys), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[pos] == keys


def mutual_knn_from_keys(keys_x: np.ndarray, keys_y: np.ndarray, n: int, k: int) -> float:
    if keys_x.shape != keys_y.shape:
        raise ValueError(f"neighbour graphs differ in size: {keys_x.shape} vs {keys_y.shape}")
    return float(np.count_nonzero(in_sorted(keys_x, keys_y)) / (n * k))


def mutual_knn_from_indices(nn_x: np.ndarray, nn_y: np.ndarray) -> float:
    """Mean over inputs of |kNN_x(i) & kNN_y(i)| / k from precomputed neighbour indices."""
    if nn_x.shape != nn_y.shape:
        raise ValueError(f"neighbour tables differ in shape: {nn_x.shape} vs {nn_y.shape}")
    n, k = nn_x.shape
    return mutual_knn_from_keys(knn_edge_keys(nn_x), knn_edge_keys(nn_y), n, k)


def mutual_knn(x: np.ndarray, y: np.ndarray, k: int = 10) -> float:
    """Mutual k-NN alignment of two representations of the same inputs (Platonic App. A)."""
    return mutual_knn_from_indices(knn_indices(x, k), knn_indices(y, k))


def centred_log_probs(loglik: np.ndarray) -> np.ndarray:
    """Centred log-probabilities (the clr transform), = f(x)^T (g(y) - mean g)."""
    loglik = np.asarray(loglik, dtype=np.float64)
    return loglik - loglik.mean(axis=1, keepdims=True)


def d_logit(loglik_1: np.ndarray, loglik_2: np.ndarray) -> float:
    """sqrt(E_x sum_y (l~_y(x) - l~'_y(x))^2) from two N x K log-likelihood matrices."""
    return d_logit_from_clr(centred_log_probs(loglik_1), centred_log_probs(loglik_2))


def d_logit_from_clr(clr_1: np.ndarray, clr_2: np.ndarray) -> float:
    diff = np.asarray(clr_1, dtype=np.float64) - np.asarray(clr_2, dtype=np.float64)
    return float(np.sqrt(np.einsum("ij,ij->", diff, diff) / diff.shape[0]))


def linear_cka_centred(xc: np.ndarray, yc: np.ndarray, gram_x: float, gram_y: float) -> float:
    """linear CKA from centred data and each side's ||Xc^T Xc||_F."""
    norm = gram_x * gram_y
    return float(np.linalg.norm(xc.T @ yc) ** 2 / norm) if norm > 0 else float("nan")
