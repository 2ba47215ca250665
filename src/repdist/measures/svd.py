"""The PLS-SVD similarity m_SVD and the representational dissimilarity d_{f,g} (paper Def. 4.5).

sklearn's PLSSVD on standardised variables returns score covariances equal to the singular
values of the cross-correlation matrix (spec Part B §4.4, verified to 1e-15), so m_SVD is
computed in closed form: mean singular value of Z1~^T Z2~ / (n - 1).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from .llv import PivotTerms, pivot_terms


def standardise_columns(z: np.ndarray) -> np.ndarray:
    """Centre each column and divide by its sample sd (ddof 1); zero-variance columns become NaN."""
    centred = z - z.mean(axis=0, keepdims=True)
    sd = centred.std(axis=0, ddof=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, centred / sd, np.nan)


def mean_singular_values(matrices: np.ndarray) -> np.ndarray:
    """Mean singular value of each matrix in a (..., M, M) stack; NaN where a matrix has NaN."""
    bad = np.isnan(matrices).any(axis=(-2, -1))
    safe = np.where(bad[..., None, None], 0.0, matrices)
    sv = np.linalg.svd(safe, compute_uv=False)
    return np.where(bad, np.nan, sv.mean(axis=-1))


def label_sets(num_labels: int, rep_dim: int) -> np.ndarray:
    """Every M-subset of range(K-2), in itertools.combinations order, as an (n_sets, M) array."""
    if num_labels - 2 < rep_dim:
        raise ValueError(
            f"m_SVD needs K-2 >= M labels besides the pivot and the left-out label, "
            f"got K={num_labels}, M={rep_dim}"
        )
    return np.array(list(combinations(range(num_labels - 2), rep_dim)), dtype=np.intp)


def m_svd_f(
    loglik_1: np.ndarray,
    loglik_2: np.ndarray,
    y_pivot: int,
    y_leave_out: int,
    rep_dim: int,
    terms: PivotTerms | None = None,
) -> np.ndarray:
    """m_SVD of the embeddings for every label set (spec §4.4), from N x K log-likelihoods.

    Column y of Z_m is the log-odds ell_m(y) - ell_m(pivot) = (g_m(y) - g_m(pivot))^T f_m(x);
    standardising all K-2 columns once and slicing per label set is the same as standardising
    per set, so one (K-2) x (K-2) cross-correlation matrix serves every set. `terms` (the
    pivot's label-side terms) already holds the standardised columns.
    """
    k = loglik_1.shape[1]
    sets = label_sets(k, rep_dim)
    if terms is None or terms.pivot != y_pivot:
        terms = pivot_terms(loglik_1, loglik_2, y_pivot)
    rest = np.array([y for y in range(k) if y not in (y_pivot, y_leave_out)])
    z1, z2 = terms.logodds_1[:, rest], terms.logodds_2[:, rest]
    cross = z1.T @ z2 / (z1.shape[0] - 1)
    blocks = cross[sets[:, :, None], sets[:, None, :]]
    return mean_singular_values(blocks)


def m_svd_g(
    f_1: np.ndarray,
    g_1: np.ndarray,
    f_2: np.ndarray,
    g_2: np.ndarray,
    input_set: np.ndarray,
) -> float:
    """m_SVD of the unembeddings on one diversity set (x0; x1..xM) of inputs (spec §4.4).

    W_m[k, j] = (f_m(x_j) - f_m(x_0))^T g_m(y_k), standardised over the K labels.
    """
    idx = np.asarray(input_set, dtype=np.intp)
    w1 = standardise_columns(g_1 @ (f_1[idx[1:]] - f_1[idx[:1]]).T)
    w2 = standardise_columns(g_2 @ (f_2[idx[1:]] - f_2[idx[:1]]).T)
    cross = w1.T @ w2 / (w1.shape[0] - 1)
    return float(mean_singular_values(cross))


def d_fg(m_svd_f_values: np.ndarray, m_svd_g_value: float) -> float:
    """d_{f,g} = max(1 - min_c m_SVD_f(c), 1 - m_SVD_g): the bound's left-hand side."""
    values = np.append(np.asarray(m_svd_f_values, dtype=np.float64), m_svd_g_value)
    if np.isnan(values).any():
        return float("nan")
    return float(1.0 - values.min())
