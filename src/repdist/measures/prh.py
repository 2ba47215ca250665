"""The alignment metrics of the Platonic Representation Hypothesis (Huh et al. 2024, seed 004:
minyoungg/platonic-rep, `metrics.py` and `measure_alignment.py`), from their definitions, in
float64, with no N x N matrix where a product of the features gives the same sums.

Their conventions, each an option here: rows clamped at the q-quantile of |values| (q = 0.95,
`clamp_outliers`), then L2-normalised (`unit_rows`); neighbours by inner product, never the row
itself; the "ip" kernel K = X X^T; 1e-6 added to normalisers' denominators (`PRH_EPS`)."""

from __future__ import annotations

import numpy as np

from .cca import canonical_correlations
from .extra import in_sorted, knn_indices, unit_rows

PRH_EPS = 1e-6
PRH_OUTLIER_QUANTILE = 0.95
PRH_K = 10
PRH_SVCCA_COMPONENTS = 10
EDGE_CHUNK = 4096  # edges gathered at once (4,096 x M float64 rows): no N k x M copies


def as_float64(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"a representation is N x d, got shape {x.shape}")
    return x


def clamp_outliers(x: np.ndarray, q: float = PRH_OUTLIER_QUANTILE, exact: bool = False,
                   ) -> np.ndarray:
    """Values clamped to [-t, t]: t the mean over rows of each row's q-quantile of |x| (their
    default), or with `exact` the q-quantile of all |x| read off the sorted values (index
    floor(q * size), their --precise). q = 1 leaves x as it is."""
    x = as_float64(x)
    if q == 1:
        return x
    a = np.abs(x)
    t = np.sort(a, axis=None)[int(q * a.size)] if exact else np.quantile(a, q, axis=1).mean()
    return np.clip(x, -t, t)


def prh_prepare(x: np.ndarray, q: float = PRH_OUTLIER_QUANTILE, exact: bool = False) -> np.ndarray:
    """Their pipeline before any metric: clamp the outliers, then normalise the rows."""
    return unit_rows(clamp_outliers(x, q, exact))  # zero rows stay zero, as in theirs


def cycle_knn_from_indices(nn_x: np.ndarray, nn_y: np.ndarray) -> float:
    """Share of i with i among the X-neighbours of some Y-neighbour of i (PRH `cycle_knn`)."""
    cycles = nn_x[nn_y]  # N x k x k: X-neighbours of each Y-neighbour
    return float((cycles == np.arange(len(nn_x))[:, None, None]).any(axis=(1, 2)).mean())


def _pairwise_dp(a: np.ndarray, b: np.ndarray, lcs: bool) -> np.ndarray:
    """Per row, the LCS length (lcs) or the Levenshtein distance of two sequences, by the usual
    dynamic programme run over all rows at once (k^2 vector steps). The tables are laid out
    cell by row, so that each step reads and writes contiguous vectors in place."""
    n, k = a.shape
    m = b.shape[1]
    same = a.T[:, None, :] == b.T[None, :, :]  # k x m x N
    start = np.zeros(m + 1) if lcs else np.arange(m + 1, dtype=np.float64)
    prev = np.repeat(start[:, None], n, axis=1)
    cur = np.empty_like(prev)
    for i in range(1, k + 1):
        cur[0] = 0 if lcs else i
        for j in range(1, m + 1):
            if lcs:  # same ? prev[j-1] + 1 : max(prev[j], cur[j-1])
                np.maximum(prev[j], cur[j - 1], out=cur[j])
                np.copyto(cur[j], prev[j - 1] + 1, where=same[i - 1, j - 1])
            else:  # min(prev[j] + 1, cur[j-1] + 1, prev[j-1] + (not same))
                np.minimum(prev[j], cur[j - 1], out=cur[j])
                cur[j] += 1
                np.minimum(cur[j], prev[j - 1] + ~same[i - 1, j - 1], out=cur[j])
        prev, cur = cur, prev
    return prev[m]


def lcs_knn_from_indices(nn_x: np.ndarray, nn_y: np.ndarray) -> float:
    """Mean LCS length of the two ordered neighbour lists (PRH `lcs_knn`: not divided by k)."""
    return float(_pairwise_dp(nn_x, nn_y, lcs=True).mean())


def edit_distance_knn_from_indices(nn_x: np.ndarray, nn_y: np.ndarray) -> float:
    """1 - mean Levenshtein distance of the two ordered neighbour lists / k."""
    return float(1 - _pairwise_dp(nn_x, nn_y, lcs=False).mean() / nn_x.shape[1])


def hsic_unbiased_linear(x: np.ndarray, y: np.ndarray) -> float:
    """Song et al.'s unbiased HSIC of K = X X^T and L = Y Y^T from feature products, O(N d d'):
    with K~, L~ the kernels with zero diagonal, [tr(K~L~) + 1'K~1 1'L~1 / ((N-1)(N-2))
    - 2 1'K~L~1 / (N-2)] / (N (N-3))."""
    n = len(x)
    if n < 4:
        raise ValueError(f"the unbiased HSIC needs N >= 4 inputs, got {n}")
    dx, dy = np.einsum("ij,ij->i", x, x), np.einsum("ij,ij->i", y, y)
    kl = np.sum((x.T @ y) ** 2) - dx @ dy  # sum over i != j of K_ij L_ij
    k1 = x @ x.sum(axis=0) - dx  # K~ 1
    l1 = y @ y.sum(axis=0) - dy
    value = kl + k1.sum() * l1.sum() / ((n - 1) * (n - 2)) - 2 * (k1 @ l1) / (n - 2)
    return float(value / (n * (n - 3)))


def unbiased_cka(x: np.ndarray, y: np.ndarray) -> float:
    """CKA of the linear kernels of the rows as given, from the unbiased HSIC (Song et al.
    2012, eq. 5; PRH `unbiased_cka`, kernel "ip"); their 1e-6 in the denominator."""
    x, y = as_float64(x), as_float64(y)
    return unbiased_cka_from_hsic(x, y, hsic_unbiased_linear(x, x), hsic_unbiased_linear(y, y))


def unbiased_cka_from_hsic(x: np.ndarray, y: np.ndarray, hsic_xx: float, hsic_yy: float) -> float:
    """`unbiased_cka` given each side's HSIC with itself (a per-model quantity in compare)."""
    kl = hsic_unbiased_linear(as_float64(x), as_float64(y))
    return float(kl / (np.sqrt(hsic_xx * hsic_yy) + PRH_EPS))


def _top_k_pairs(x: np.ndarray, k: int) -> np.ndarray:
    """Each row's k largest inner products with other rows, as linear keys i * N + j."""
    n = len(x)
    keys = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, 1024):
        sim = x[start:start + 1024] @ x.T
        rows = np.arange(sim.shape[0])
        sim[rows, start + rows] = -np.inf
        top = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        keys[start:start + 1024] = (start + rows)[:, None] * n + top
    return np.sort(keys.ravel())


def cknna(x: np.ndarray, y: np.ndarray, k: int = PRH_K) -> float:
    """PRH `cknna` (unbiased, distance-aware): the unbiased HSIC of K and L kept only on pairs
    (i, j) among i's top-k by inner product in both, normalised by the same of K with K and of
    L with L; rows as given (unit rows in their pipeline), their 1e-6 in the denominator."""
    x, y = as_float64(x), as_float64(y)
    n = len(x)
    if not 2 <= k < n:
        raise ValueError(f"cknna needs 2 <= k < N = {n}, got k = {k}")
    top_x, top_y = _top_k_pairs(x, k), _top_k_pairs(y, k)
    return cknna_from_keys(x, y, top_x, top_y, cknna_self(x, top_x), cknna_self(y, top_y))


def edge_products(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """x[rows[e]] . x[cols[e]] for every edge e, a chunk of edges at a time (each product as
    one einsum of the whole gather would give it)."""
    out = np.empty(len(rows))
    for lo in range(0, len(rows), EDGE_CHUNK):
        edges = slice(lo, lo + EDGE_CHUNK)
        out[edges] = np.einsum("ij,ij->i", x[rows[edges]], x[cols[edges]])
    return out


def _masked_hsic(keys_a: np.ndarray, keys_b: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """The unbiased HSIC of a's and b's linear kernels kept on the pairs in both key sets
    (sorted, unique), from the kept entries alone. Masked kernels (zero diagonal) are not
    symmetric: sum_ij A_ij B_ji pairs each kept (i, j) with its transpose, where kept."""
    n = len(a)
    both = keys_a[in_sorted(keys_a, keys_b)]
    rows, cols = both // n, both % n
    va = edge_products(a, rows, cols)
    vb = va if b is a else edge_products(b, rows, cols)
    transposed = cols * n + rows
    kept = in_sorted(transposed, both)
    ab_t = float(va[kept] @ vb[np.searchsorted(both, transposed[kept])])
    one_ab_one = np.bincount(cols, va, minlength=n) @ np.bincount(rows, vb, minlength=n)
    value = (ab_t + va.sum() * vb.sum() / ((n - 1) * (n - 2)) - 2 * one_ab_one / (n - 2))
    return float(value / (n * (n - 3)))


def cknna_self(x: np.ndarray, keys: np.ndarray) -> float:
    """CKNNA's normaliser of one side: the masked HSIC of x with itself on its top-k pairs
    (sorted keys i * N + j, as knn_edge_keys gives them)."""
    x = as_float64(x)
    return _masked_hsic(keys, keys, x, x)


def cknna_from_keys(x: np.ndarray, y: np.ndarray, keys_x: np.ndarray, keys_y: np.ndarray,
                    self_x: float, self_y: float) -> float:
    """`cknna` from each side's top-k pairs and normaliser (per-model quantities in compare)."""
    kl = _masked_hsic(keys_x, keys_y, as_float64(x), as_float64(y))
    return float(kl / (np.sqrt(self_x * self_y) + PRH_EPS))


def knn_metrics(x: np.ndarray, y: np.ndarray, k: int = PRH_K) -> dict[str, float]:
    """cycle_knn, lcs_knn and edit_distance_knn from one neighbour search per representation
    (neighbours by cosine, i.e. by inner product of unit rows, as theirs on their unit rows)."""
    nn_x, nn_y = knn_indices(as_float64(x), k), knn_indices(as_float64(y), k)
    return {"cycle_knn": cycle_knn_from_indices(nn_x, nn_y),
            "lcs_knn": lcs_knn_from_indices(nn_x, nn_y),
            "edit_distance_knn": edit_distance_knn_from_indices(nn_x, nn_y)}


def svcca_zscored(x: np.ndarray, y: np.ndarray, k: int = PRH_SVCCA_COMPONENTS) -> float:
    """Mean canonical correlation of the top k of x's and y's `zscored_basis`, NaN when k exceeds
    a dimension; exact where they use a randomised SVD and sklearn's iterative CCA."""
    x, y = as_float64(x), as_float64(y)
    if k > min(x.shape[1], y.shape[1]) or k > len(x):
        return float("nan")
    return svcca_from_zscored(zscored_basis(x), zscored_basis(y), k)


def zscored_basis(x: np.ndarray) -> np.ndarray:
    """Left singular vectors (N x min(N, d), by singular value) of x with its columns z-scored,
    as their svcca does before keeping the top k (sd with N - 1, +1e-8)."""
    a = as_float64(x)
    a = a - a.mean(axis=0)
    a = a / (a.std(axis=0, ddof=1) + 1e-8)
    return np.linalg.svd(a, full_matrices=False)[0]


def svcca_from_zscored(basis_x: np.ndarray, basis_y: np.ndarray, k: int) -> float:
    """`svcca_zscored` from both sides' `zscored_basis`; NaN when either has fewer than k."""
    if k > min(basis_x.shape[1], basis_y.shape[1]):
        return float("nan")
    return float(canonical_correlations(basis_x[:, :k], basis_y[:, :k])[:k].mean())
