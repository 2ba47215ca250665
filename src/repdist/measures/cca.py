"""Exact mean canonical correlation m_CCA (closed form, not sklearn's iterative NIPALS CCA).

Canonical correlations are the singular values of Ux^T Uy where Ux, Uy are orthonormal bases
of the centred representations; m_CCA is their mean over the first n_components. Invariant to
any invertible affine map of either representation, as identifiability requires.
"""

from __future__ import annotations

import numpy as np


def orthonormal_basis(x: np.ndarray, rtol: float | None = None) -> np.ndarray:
    """Orthonormal basis (N x rank) of the column space of the centred x (thin SVD, rank-revealing).

    The default tolerance is numpy.linalg.matrix_rank's: s_max * max(N, M) * eps.
    """
    x = np.asarray(x, dtype=np.float64)  # float32 input is computed in float64 too
    centred = x - x.mean(axis=0, keepdims=True)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    if s.size == 0 or s[0] == 0 or not np.isfinite(s[0]):
        return u[:, :0]
    tol = s[0] * (max(x.shape) * np.finfo(np.float64).eps if rtol is None else rtol)
    return u[:, : int(np.sum(s > tol))]


def constant_columns(x: np.ndarray) -> int:
    """How many coordinates of x take one value over every row (e.g. the 1 of a folded bias,
    f' = [f, 1]): they have no variance, so CCA, which centres, has nothing to correlate."""
    x = np.asarray(x)
    return int(np.sum(np.ptp(x, axis=0) == 0)) if x.shape[0] else 0


def cca_components(x: np.ndarray, y: np.ndarray, rep_dim: int) -> int:
    """The components m_CCA averages: M, less the constant coordinates of the representation
    with more of them (a classifier's folded bias: M of M + 1), or M when nothing would be left
    (then a collapsed representation is reported rank-deficient)."""
    n = rep_dim - max(constant_columns(x), constant_columns(y))
    return n if n >= 1 else rep_dim


def canonical_correlations(basis_x: np.ndarray, basis_y: np.ndarray) -> np.ndarray:
    """All canonical correlations (descending) between two orthonormal bases of the same rows."""
    if basis_x.shape[0] != basis_y.shape[0]:
        raise ValueError(f"row counts differ: {basis_x.shape[0]} vs {basis_y.shape[0]}")
    sv = np.linalg.svd(basis_x.T @ basis_y, compute_uv=False)
    return np.clip(sv, 0.0, 1.0)


def mean_cca_from_bases(
    basis_x: np.ndarray, basis_y: np.ndarray, n_components: int
) -> tuple[float, str]:
    """Mean of the first n_components canonical correlations, or (NaN, reason) if rank-deficient."""
    rank = min(basis_x.shape[1], basis_y.shape[1])
    if rank < n_components:
        return float("nan"), (
            f"rank-deficient representation: rank {rank} < {n_components} components"
        )
    return float(canonical_correlations(basis_x, basis_y)[:n_components].mean()), ""


def mean_cca(x: np.ndarray, y: np.ndarray, n_components: int | None = None) -> float:
    """m_CCA between x (N x Mx) and y (N x My); NaN if either has rank below n_components."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n_comp = min(x.shape[1], y.shape[1]) if n_components is None else n_components
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return float("nan")
    value, _ = mean_cca_from_bases(orthonormal_basis(x), orthonormal_basis(y), n_comp)
    return value


COVARIANCE_RTOL = 1e-12  # eigenvalues of a covariance below this fraction of the largest: rank lost


def _whitener(cov: np.ndarray) -> np.ndarray:
    """W with W^T cov W = I on cov's range (eigenvalues above COVARIANCE_RTOL of the largest)."""
    values, vectors = np.linalg.eigh(cov)
    if not values.size or not values[-1] > 0:
        return vectors[:, :0]
    keep = values > COVARIANCE_RTOL * values[-1]
    return vectors[:, keep] / np.sqrt(values[keep])


def covariance_cca(cov_xx: np.ndarray, cov_yy: np.ndarray, cov_xy: np.ndarray,
                   n_components: int) -> tuple[float, str]:
    """m_CCA from covariances alone (M x M), for representations too tall to take an SVD of
    cheaply (g of a 50,257-token vocabulary): the canonical correlations are the singular
    values of Wx^T cov_xy Wy with whiteners Wx, Wy. Working on squares, it resolves ranks only
    down to ~sqrt(machine epsilon) (COVARIANCE_RTOL on eigenvalues), where the SVD of the
    data goes to epsilon; (NaN, reason) if rank-deficient, as mean_cca_from_bases."""
    wx, wy = _whitener(cov_xx), _whitener(cov_yy)
    rank = min(wx.shape[1], wy.shape[1])
    if rank < n_components:
        return float("nan"), (
            f"rank-deficient representation: rank {rank} < {n_components} components"
        )
    sv = np.clip(np.linalg.svd(wx.T @ cov_xy @ wy, compute_uv=False), 0.0, 1.0)
    return float(sv[:n_components].mean()), ""
