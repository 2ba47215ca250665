"""The PLS-SVD similarity m_SVD and the representational dissimilarity d_{f,g} (paper Def. 4.5).

sklearn's PLSSVD on standardised variables (the original's
`src/dissimilarity_measures/representation_measures.py`) returns score covariances equal to the
singular values of the cross-correlation matrix, to 1e-15. So m_SVD has a closed form: the mean
singular value of Z1~^T Z2~ / (n - 1)."""

from __future__ import annotations

from itertools import combinations, compress
from math import comb

import numpy as np

from .llv import PivotTerms, pivot_terms, zero_variance
from .memory import label_sets_bytes, require

SET_CHUNK = 65_536  # label sets whose M x M blocks are held at once
MAX_LABEL_SETS = 10_000  # above this many label sets, m_SVD_f runs on a seeded sample of them
LABEL_SET_STREAM = 0x5E75  # seeds the label-set sample apart from the input candidates
ENUMERATE_FACTOR = 20  # with at most this many times the sample's size, draw from the full list


def standardise_columns(z: np.ndarray, var_sum: np.ndarray | None = None) -> np.ndarray:
    """Centre each column and divide by its sample sd (ddof 1); columns of zero variance become
    NaN: zero to within rounding of `var_sum` (llv.zero_variance; per column: the variances of
    what the column is a difference of), by default exactly zero."""
    centred = z - z.mean(axis=0, keepdims=True)
    sd = centred.std(axis=0, ddof=1, keepdims=True)
    zero = sd == 0 if var_sum is None else zero_variance(sd * sd, np.reshape(var_sum, sd.shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(zero, np.nan, centred / sd)


def mean_singular_values(matrices: np.ndarray) -> np.ndarray:
    """Mean singular value of each matrix in a (..., M, M) stack; NaN where a matrix has NaN."""
    bad = np.isnan(matrices).any(axis=(-2, -1))
    safe = np.where(bad[..., None, None], 0.0, matrices)
    sv = np.linalg.svd(safe, compute_uv=False)
    return np.where(bad, np.nan, sv.mean(axis=-1))


def label_set_count(num_labels: int, rep_dim: int) -> int:
    """C(K-2, M): how many label sets m_SVD_f runs over (raises if K - 2 < M)."""
    if num_labels - 2 < rep_dim:
        raise ValueError(f"m_SVD needs K-2 >= M labels besides the pivot and the left-out label, "
                         f"got K={num_labels}, M={rep_dim}")
    return comb(num_labels - 2, rep_dim)


def label_sets(num_labels: int, rep_dim: int, max_sets: int | None = None,
               seed: int = 0) -> np.ndarray:
    """M-subsets of range(K-2) as an (n_sets, M) array, in lexicographic order: all of them
    when there are at most max_sets (None: no limit), else max_sets distinct ones drawn from
    `seed`. C(98, 8) is about 1.6e11: enumerating that would never finish."""
    count = label_set_count(num_labels, rep_dim)
    if max_sets is not None and max_sets < 1:
        raise ValueError(f"max_sets must be >= 1, got {max_sets}")
    if max_sets is None or count <= max_sets:
        require(label_sets_bytes(count, rep_dim),
                f"listing all C({num_labels - 2}, {rep_dim}) = {count} label sets")
        return np.array(list(combinations(range(num_labels - 2), rep_dim)), dtype=np.intp)
    return _sample_label_sets(num_labels - 2, rep_dim, count, max_sets, seed)


def _sample_label_sets(n: int, m: int, count: int, n_sets: int, seed: int) -> np.ndarray:
    """n_sets distinct, uniformly drawn M-subsets of range(n), rows sorted lexicographically."""
    rng = np.random.default_rng([LABEL_SET_STREAM, seed])
    if count <= ENUMERATE_FACTOR * n_sets:
        picked = np.zeros(count, dtype=bool)
        picked[rng.choice(count, n_sets, replace=False)] = True
        return np.array(list(compress(combinations(range(n), m), picked)), dtype=np.intp)
    # Rejection: draw subsets, keep the first n_sets distinct ones in draw order (a uniform
    # sample without replacement); duplicates are rare since count > ENUMERATE_FACTOR * n_sets.
    batch = max(1, min(2 * n_sets, 4_000_000 // n))
    drawn = np.empty((0, m), dtype=np.intp)
    while True:
        keys = rng.random((batch, n))
        new = np.sort(np.argpartition(keys, m, axis=1)[:, :m], axis=1).astype(np.intp)
        drawn = np.concatenate([drawn, new])
        _, first = np.unique(drawn, axis=0, return_index=True)
        if len(first) >= n_sets:
            keep = drawn[np.sort(first)[:n_sets]]
            return keep[np.lexsort(keep.T[::-1])]
        drawn = drawn[np.sort(first)]


def m_svd_f(loglik_1: np.ndarray, loglik_2: np.ndarray, y_pivot: int, y_leave_out: int,
            rep_dim: int, terms: PivotTerms | None = None, sets: np.ndarray | None = None,
            ) -> np.ndarray:
    """m_SVD of the embeddings for every label set (paper Def. 4.5) from N x K log-likelihoods.
    Column y of Z_m is the log-odds ell_m(y) - ell_m(pivot) = (g_m(y) - g_m(pivot))^T f_m(x);
    standardising all K-2 columns once and slicing per label set is the same as standardising
    per set, so one (K-2) x (K-2) cross-correlation matrix serves every set. `terms` (the
    pivot's label-side terms) already holds the standardised columns. `sets` (default: all of
    them, `label_sets(K, M)`) are rows of M indices into the K-2 labels left."""
    k = loglik_1.shape[1]
    sets = label_sets(k, rep_dim) if sets is None else sets
    if terms is None or terms.pivot != y_pivot:
        terms = pivot_terms(loglik_1, loglik_2, y_pivot)
    rest = np.array([y for y in range(k) if y not in (y_pivot, y_leave_out)])
    z1, z2 = terms.logodds_1[:, rest], terms.logodds_2[:, rest]
    cross = z1.T @ z2 / (z1.shape[0] - 1)
    out = np.empty(len(sets))
    for start in range(0, len(sets), SET_CHUNK):  # bounded memory for any number of sets
        chunk = sets[start : start + SET_CHUNK]
        out[start : start + SET_CHUNK] = mean_singular_values(cross[chunk[:, :, None],
                                                                    chunk[:, None, :]])
    return out


def m_svd_g(f_1: np.ndarray, g_1: np.ndarray, f_2: np.ndarray, g_2: np.ndarray,
            input_set: np.ndarray) -> float:
    """m_SVD of the unembeddings on one diversity set (x0; x1..xM) of inputs (paper Def. 4.5).
    W_m[k, j] = (f_m(x_j) - f_m(x_0))^T g_m(y_k), standardised over the K labels; a column is
    NaN where its variance is zero to within rounding of Var_k f_m(x_j)^T g_m(y_k) + the same
    at x_0 (the input side's tau, llv.input_terms: the same rule)."""
    idx = np.asarray(input_set, dtype=np.intp)
    w1 = standardise_columns(g_1 @ (f_1[idx[1:]] - f_1[idx[:1]]).T, _column_var_sum(f_1, g_1, idx))
    w2 = standardise_columns(g_2 @ (f_2[idx[1:]] - f_2[idx[:1]]).T, _column_var_sum(f_2, g_2, idx))
    cross = w1.T @ w2 / (w1.shape[0] - 1)
    return float(mean_singular_values(cross))


def _column_var_sum(f: np.ndarray, g: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Var over labels of f(x_j)^T g(y) plus that of f(x_0)^T g(y), j = 1..M."""
    var = (g @ f[idx].T).var(axis=0, ddof=1)
    return var[1:] + var[0]


def d_fg(m_svd_f_values: np.ndarray, m_svd_g_value: float) -> float:
    """d_{f,g} = max(1 - min_c m_SVD_f(c), 1 - m_SVD_g): the bound's left-hand side."""
    values = np.append(np.asarray(m_svd_f_values, dtype=np.float64), m_svd_g_value)
    if np.isnan(values).any():
        return float("nan")
    return float(1.0 - values.min())
