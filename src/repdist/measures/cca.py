"""Exact mean canonical correlation m_CCA (closed form, not sklearn's iterative NIPALS CCA).

Canonical correlations are the singular values of Ux^T Uy, Ux and Uy orthonormal bases of the
centred representations; m_CCA is their mean over the first n_components. It is invariant to
any invertible affine map of either side, as identifiability requires. A rank fits the
precision the values were computed in (`detect_precision`, `Spectrum.tolerance`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# A float32 model's f, even stored as float64, carries float32 rounding: a direction it does not
# vary in (a final LayerNorm's coordinates sum to zero) shows at ~1e-7 of the largest singular
# value, not at float64's 1e-16. eps (spacing at 1) of each precision f may have been computed in:
EPS = {"float64": float(np.finfo(np.float64).eps), "float32": float(np.finfo(np.float32).eps),
       "bfloat16": 2.0**-7, "float16": float(np.finfo(np.float16).eps)}
PRECISIONS = ("auto", *EPS)  # auto: float32 or float64, read from the values (detect_precision)
# Rounding every entry of x by eps (relative) moves its singular values by at most eps ||x||_F
# (Weyl). A float32 computation's own rounding (a LayerNorm's mean, massive activations) reaches
# ~0.2 of that (measured); real directions of the paper's models sit above 2e4 of it.
ROUNDING_FACTOR = 16.0
DETECT_BLOCK = 1 << 20  # elements compared at once when detecting a precision
COVARIANCE_RTOL = 1e-12  # eigenvalues of a covariance below this fraction of the largest: rank lost


def check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")


def detect_precision(x: np.ndarray) -> str:
    """"float32" when every value of x is a float32 value (x.astype(float32) == x: what a
    float32 model's outputs are, stored in any wider type), else "float64". A float64
    computation lands on a float32 value with probability 2^-29 per entry; data that does
    (small integers, a constant) is exact, and float32's tolerance then costs nothing."""
    flat = np.asarray(x).reshape(-1)
    if flat.dtype in (np.float32, np.float16):
        return "float32"
    flat = flat.astype(np.float64, copy=False)
    with np.errstate(over="ignore", invalid="ignore"):
        for lo in range(0, flat.size, DETECT_BLOCK):
            block = flat[lo : lo + DETECT_BLOCK]
            same = block.astype(np.float32) == block
            if not same.all() and not np.isnan(block[~same]).all():
                return "float64"
    return "float32"


def resolve_precision(precision: str, detected: str) -> str:
    """The precision a rank is taken at: the one given, or under "auto" the detected one."""
    check_precision(precision)
    return detected if precision == "auto" else precision


@dataclass(frozen=True, eq=False)
class Spectrum:
    """The thin SVD of a representation x (rows x M) centred over its rows, with what its rank
    depends on: ||x||_F (x as given, uncentred: rounding is relative to the values themselves)
    and the precision its values show (detect_precision)."""

    u: np.ndarray  # left singular vectors (rows x min(rows, M)), by decreasing singular value
    s: np.ndarray
    shape: tuple[int, int]
    norm: float
    detected: str

    def tolerance(self, precision: str = "auto") -> float:
        """Singular values at or below this are rounding: the larger of numpy.linalg
        .matrix_rank's float64 rule (s_max max(rows, M) eps64, the SVD's own accuracy) and
        ROUNDING_FACTOR eps ||x||_F, eps that of the precision x was computed in."""
        s_max = float(self.s[0]) if self.s.size else 0.0
        return max(s_max * max(self.shape) * EPS["float64"],
                   rounding_level(self.norm, resolve_precision(precision, self.detected)))

    def rank(self, precision: str = "auto") -> int:
        """How many directions x varies in, at this precision (0: x is constant)."""
        if self.s.size == 0 or not self.s[0] > 0 or not np.isfinite(self.s[0]):
            return 0
        return int(np.sum(self.s > self.tolerance(precision)))

    def basis(self, precision: str = "auto") -> np.ndarray:
        """An orthonormal basis (rows x rank) of the centred x's column space."""
        return self.u[:, : self.rank(precision)]


def spectrum(x: np.ndarray) -> Spectrum:
    """x's Spectrum (float32 input is computed in float64 too)."""
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean(axis=0, keepdims=True)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    return Spectrum(u, s, (int(x.shape[0]), int(x.shape[1])), float(np.linalg.norm(x)),
                    detect_precision(x))


def orthonormal_basis(x: np.ndarray, rtol: float | None = None,
                      precision: str = "auto") -> np.ndarray:
    """Orthonormal basis (N x rank) of the column space of the centred x (thin SVD). The default
    tolerance fits the precision x was computed in (Spectrum.tolerance; "auto": read from the
    values); a given rtol is relative to the largest singular value instead."""
    found = spectrum(x)
    if rtol is None:
        return found.basis(precision)
    s = found.s
    if s.size == 0 or s[0] == 0 or not np.isfinite(s[0]):
        return found.u[:, :0]
    return found.u[:, : int(np.sum(s > s[0] * rtol))]


def constant_columns(x: np.ndarray) -> int:
    """How many coordinates of x take one value over every row (the 1 of a folded bias, f' = [f,
    1]), where CCA, which centres, has nothing to correlate. One value to within rounding, as a
    kernel leaves it: a range of at most ROUNDING_FACTOR x eps64 of the largest |value|."""
    x = np.asarray(x, dtype=np.float64)
    if not x.shape[0]:
        return 0
    spread = np.ptp(x, axis=0)
    return int(np.sum(spread <= ROUNDING_FACTOR * EPS["float64"] * np.abs(x).max(axis=0)))


def is_constant(centred_norm: float, norm: float) -> bool:
    """Whether x of Frobenius norm `norm` is constant over its rows: its centred norm at most
    rounding_level(norm, "float64") (centring a constant leaves ~eps ||x||_F, not 0 on all CPUs)."""
    return not centred_norm > rounding_level(norm, "float64")


def cca_components(x: np.ndarray, y: np.ndarray, rep_dim: int) -> int:
    """m_CCA's components: M less the larger count of constant coordinates (a classifier's folded
    bias: M of M + 1), or M where none would be left (a collapse then reads as rank-deficient)."""
    n = rep_dim - max(constant_columns(x), constant_columns(y))
    return n if n >= 1 else rep_dim


def varying_coordinates(x: np.ndarray) -> int:
    """M less x's constant coordinates: the most directions its centred rows can vary in."""
    return int(np.asarray(x).shape[1]) - constant_columns(x)


@dataclass(frozen=True)
class MeanCCA:
    """m_CCA of a pair over the directions both vary in, how many, and why fewer (or NaN)."""

    value: float
    components: int
    reason: str = ""


def components_used(rank_x: int, rank_y: int, coordinates: int,
                    precision: str = "") -> tuple[int, str]:
    """m_CCA's components: min(rank_x, rank_y), at most `coordinates` (the smaller M less
    constant coordinates: cca_components), with the reason when fewer (a final LayerNorm: M - 1;
    0 where a representation is constant: m_CCA is NaN). The reason names `precision`."""
    n = min(rank_x, rank_y, coordinates)
    at = f" at {precision} precision" if precision else ""
    if n < 1:
        return 0, (f"rank-deficient representation: rank {min(rank_x, rank_y)}{at} "
                   f"(a constant representation) < {max(coordinates, 1)} components")
    if n == coordinates:
        return n, ""
    return n, (f"mean over {n} of {coordinates} components: the ranks{at} are {rank_x} "
               f"(model 1) and {rank_y} (model 2): the centred values vary in fewer "
               "directions than there are coordinates (e.g. after a final LayerNorm: M - 1)")


def mean_cca_over_rank(basis_x: np.ndarray, basis_y: np.ndarray, coordinates: int,
                       precision: str = "") -> MeanCCA:
    """m_CCA over the directions both orthonormal bases span (components_used): the mean of
    all min(rank_x, rank_y) canonical correlations; NaN when either basis is empty."""
    n, reason = components_used(basis_x.shape[1], basis_y.shape[1], coordinates, precision)
    value = float(canonical_correlations(basis_x, basis_y)[:n].mean()) if n else float("nan")
    return MeanCCA(value, n, reason)


def canonical_correlations(basis_x: np.ndarray, basis_y: np.ndarray) -> np.ndarray:
    """All canonical correlations (descending) between two orthonormal bases of the same rows."""
    if basis_x.shape[0] != basis_y.shape[0]:
        raise ValueError(f"row counts differ: {basis_x.shape[0]} vs {basis_y.shape[0]}")
    sv = np.linalg.svd(basis_x.T @ basis_y, compute_uv=False)
    return np.clip(sv, 0.0, 1.0)


def mean_cca_from_bases(basis_x: np.ndarray, basis_y: np.ndarray,
                        n_components: int) -> tuple[float, str]:
    """Mean of the first n_components canonical correlations, or (NaN, reason) if rank-deficient."""
    rank = min(basis_x.shape[1], basis_y.shape[1])
    if rank < n_components:
        reason = f"rank-deficient representation: rank {rank} < {n_components} components"
        return float("nan"), reason
    return float(canonical_correlations(basis_x, basis_y)[:n_components].mean()), ""


def mean_cca(x: np.ndarray, y: np.ndarray, n_components: int | None = None,
             precision: str = "auto") -> float:
    """m_CCA between x (N x Mx) and y (N x My): by default over the directions both vary in
    (mean_cca_over_rank, as compare's mcca_f), NaN if either is constant; given n_components,
    over that many, NaN if either has a lower rank. Ranks at `precision` (Spectrum)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return float("nan")
    basis_x, basis_y = (orthonormal_basis(a, precision=precision) for a in (x, y))
    if n_components is None:
        coordinates = min(varying_coordinates(x), varying_coordinates(y))
        return mean_cca_over_rank(basis_x, basis_y, coordinates).value
    value, _ = mean_cca_from_bases(basis_x, basis_y, n_components)
    return value


def rounding_level(norm: float, precision: str) -> float:
    """ROUNDING_FACTOR eps ||x||_F for Frobenius norm `norm` computed in `precision` (not auto)."""
    return ROUNDING_FACTOR * EPS[precision] * norm


def _whitener(cov: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """W with W^T cov W = I on cov's range (eigenvalues above COVARIANCE_RTOL of the largest
    and above `floor`)."""
    values, vectors = np.linalg.eigh(cov)
    if not values.size or not values[-1] > 0:
        return vectors[:, :0]
    keep = values > max(COVARIANCE_RTOL * values[-1], floor)
    return vectors[:, keep] / np.sqrt(values[keep])


def covariance_cca(cov_xx: np.ndarray, cov_yy: np.ndarray, cov_xy: np.ndarray,
                   n_components: int) -> tuple[float, str]:
    """m_CCA from M x M covariances, for representations too tall for a cheap SVD (g of a
    50,257-token vocabulary): the singular values of Wx^T cov_xy Wy, Wx and Wy whiteners. On
    squares, ranks resolve only to ~sqrt(eps) (COVARIANCE_RTOL on eigenvalues), not the data
    SVD's eps; (NaN, reason) if rank-deficient, as mean_cca_from_bases."""
    sv, ranks = _covariance_correlations(cov_xx, cov_yy, cov_xy)
    rank = min(ranks)
    if rank < n_components:
        reason = f"rank-deficient representation: rank {rank} < {n_components} components"
        return float("nan"), reason
    return float(sv[:n_components].mean()), ""


def _covariance_correlations(cov_xx: np.ndarray, cov_yy: np.ndarray, cov_xy: np.ndarray,
                             floor_x: float = 0.0, floor_y: float = 0.0
                             ) -> tuple[np.ndarray, tuple[int, int]]:
    """The canonical correlations (descending) from covariances, and the two ranks the
    whiteners kept (eigenvalues above COVARIANCE_RTOL of the largest and above the floor)."""
    wx, wy = _whitener(cov_xx, floor_x), _whitener(cov_yy, floor_y)
    sv = np.clip(np.linalg.svd(wx.T @ cov_xy @ wy, compute_uv=False), 0.0, 1.0)
    return sv, (wx.shape[1], wy.shape[1])


def covariance_cca_over_rank(cov_xx: np.ndarray, cov_yy: np.ndarray, cov_xy: np.ndarray,
                             coordinates: int, floor_x: float = 0.0, floor_y: float = 0.0,
                             precision: str = "") -> MeanCCA:
    """covariance_cca over the directions both vary in (as mean_cca_over_rank): an eigenvalue
    of cov_xx counts above floor_x (a rounding level r of the data, over K rows: r^2 / (K - 1)),
    and above COVARIANCE_RTOL of the largest."""
    sv, ranks = _covariance_correlations(cov_xx, cov_yy, cov_xy, floor_x, floor_y)
    n, reason = components_used(*ranks, coordinates, precision)
    return MeanCCA(float(sv[:n].mean()) if n else float("nan"), n, reason)
