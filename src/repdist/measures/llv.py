"""The log-likelihood variance distance d^lambda_LLV (paper Def. 4.4; the original's
`src/dissimilarity_measures/distribution_distance.py::d_prob`).

Label side (terms t1, t3): variances over inputs of log-likelihoods standardised by each
model's own log-odds scale, for a pivot label a and a left-out label b chosen to minimise t1.
Input side (terms t2, t4): the same over labels, for a "diversity set" of M+1 inputs chosen
among seeded random candidates by the original's scan rule.

The pivot search needs every (a, y) pair; it is done on K x K covariance matrices of the
log-likelihood columns (O(N K^2) once per model and once per pair, then O(K^3)), and the
terms reported for the chosen pair are recomputed directly from the log-likelihoods so that
their precision does not depend on cancellation in the covariance expansion.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

DIST_TYPES = ("max", "mean")
COMBINES = ("max", "sum")


def check_dist_type(dist_type: str) -> None:
    if dist_type not in DIST_TYPES:
        raise ValueError(f"dist_type must be one of {DIST_TYPES}, got {dist_type!r}")


def check_combine(sum_or_max: str) -> None:
    if sum_or_max not in COMBINES:
        raise ValueError(f"sum_or_max must be one of {COMBINES}, got {sum_or_max!r}")


def check_label_pair(num_labels: int, y_pivot: int, y_leave_out: int) -> None:
    if not (0 <= y_pivot < num_labels and 0 <= y_leave_out < num_labels) or y_pivot == y_leave_out:
        raise ValueError(
            f"y_pivot={y_pivot} and y_leave_out={y_leave_out} must be distinct labels "
            f"in [0, {num_labels})"
        )


def _nan_to_inf(a: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(a), np.inf, a)


CUBIC_MEAN_MAX_LABELS = 1024  # above, the "mean" objective uses the O(K^2) running-sum form
OBJECTIVE_BLOCK = 1 << 22  # elements of a (pivots, K, K) block held at once (32 MiB)


def _objective_from_terms(
    a_term: np.ndarray, b_term: np.ndarray, dist_type: str, pivots: np.ndarray | None = None
) -> np.ndarray:
    """T[a, b] from per-(pivot a, label y) terms A[a, y], B[a, y] (rows = `pivots`, default all
    K labels; +inf at b = a): the max or mean over labels y other than a and b.

    Never builds the K x K x K array: "max" keeps each row's two largest values (exact, any
    K); "mean" sums blocks of rows with the excluded labels zeroed (the same pairwise sums as
    one K x K x K reduction) up to CUBIC_MEAN_MAX_LABELS labels, then row total minus the
    left-out label's term. NaN in a used label makes T NaN (a degenerate label taints T).
    """
    k = a_term.shape[1]
    rows = np.arange(k) if pivots is None else np.asarray(pivots, dtype=np.intp)
    at = np.arange(len(rows))
    if dist_type == "max":
        objective = _max_excluding(np.maximum(a_term, b_term), rows)
    elif k <= CUBIC_MEAN_MAX_LABELS:
        summed = a_term + b_term
        labels = np.arange(k)
        objective = np.empty((len(rows), k))
        step = max(1, OBJECTIVE_BLOCK // (k * k))
        for lo in range(0, len(rows), step):
            piv = rows[lo : lo + step]
            # excluded[i, b, y]: y is the pivot or the left-out label
            excluded = (piv[:, None, None] == labels[None, None, :]) | (
                labels[None, :, None] == labels[None, None, :]
            )
            block = np.where(excluded, 0.0, summed[lo : lo + step, None, :])
            objective[lo : lo + step] = block.sum(axis=2) / (2.0 * (k - 2))
    else:
        objective = _sum_excluding(a_term + b_term, rows) / (2.0 * (k - 2))
    objective[at, rows] = np.inf
    return objective


def _max_excluding(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """out[i, b] = max over y not in {rows[i], b} of values[i, y]; NaN if any of those is NaN."""
    at = np.arange(len(rows))
    filled = values.copy()
    filled[at, rows] = -np.inf  # y = pivot is never used
    nan = np.isnan(filled)
    filled[nan] = -np.inf
    first = filled.argmax(axis=1)
    top = filled[at, first]
    filled[at, first] = -np.inf
    out = np.repeat(top[:, None], values.shape[1], axis=1)
    out[at, first] = filled.max(axis=1)  # leaving out the largest: the second largest
    return _taint_with_nan(out, nan, top)


def _sum_excluding(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """out[i, b] = sum over y not in {rows[i], b} of values[i, y]; NaN if any of those is NaN."""
    at = np.arange(len(rows))
    filled = values.copy()
    filled[at, rows] = 0.0
    nan = np.isnan(filled)
    filled[nan] = 0.0
    total = filled.sum(axis=1)
    return _taint_with_nan(total[:, None] - filled, nan, total)


def _taint_with_nan(out: np.ndarray, nan: np.ndarray, without_nan: np.ndarray) -> np.ndarray:
    """NaN where a used label is NaN: everywhere in a row with two NaN labels; in a row with
    one, everywhere but at b = that label, where the row's value without it is right."""
    count = nan.sum(axis=1)
    tainted = count >= 1
    first_nan = nan.argmax(axis=1)
    out[tainted] = np.nan
    one = np.flatnonzero(count == 1)
    out[one, first_nan[one]] = without_nan[one]
    return out


def pivot_row_terms(
    d1: np.ndarray, d2: np.ndarray, x12: np.ndarray, c1: np.ndarray, c2: np.ndarray,
    rows: np.ndarray, cols: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A, B and the log-odds scales s1, s2 of the pivots `rows`, from second moments alone.

    d_m[y] = Var(ell_m(y)), x12[y] = Cov(ell_1(y), ell_2(y)), c_m[i, y] = Cov(ell_m(rows[i]),
    ell_m(y)) (rows x K, or rows x len(cols) for the labels `cols` only): s_m[a, y] =
    sd(ell_m(y) - ell_m(a)), A[a, y] = sd(ell_1(y)/s1 - ell_2(y)/s2), B[a, y] the same for the
    pivot's column; NaN where a scale is zero. The exact path passes K x K covariances (rows:
    every label), the low-rank path blocks of rows.
    """
    e1, e2, ex = (d1, d2, x12) if cols is None else (d1[cols], d2[cols], x12[cols])
    s1 = np.sqrt(np.clip(e1[None, :] + d1[rows, None] - 2.0 * c1, 0.0, None))
    s2 = np.sqrt(np.clip(e2[None, :] + d2[rows, None] - 2.0 * c2, 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        inv1, inv2 = 1.0 / s1, 1.0 / s2
        a_sq = e1[None, :] * inv1**2 + e2[None, :] * inv2**2 - 2.0 * ex[None, :] * inv1 * inv2
        b_sq = (d1[rows, None] * inv1**2 + d2[rows, None] * inv2**2
                - 2.0 * x12[rows, None] * inv1 * inv2)
    degenerate = (s1 == 0) | (s2 == 0)
    a_term = np.where(degenerate, np.nan, np.sqrt(np.clip(a_sq, 0.0, None)))
    b_term = np.where(degenerate, np.nan, np.sqrt(np.clip(b_sq, 0.0, None)))
    return a_term, b_term, s1, s2


def pivot_objective(
    cov_11: np.ndarray, cov_22: np.ndarray, cov_12: np.ndarray, dist_type: str = "max"
) -> np.ndarray:
    """T[a, b]: the t1 objective for pivot a and left-out b (K x K; +inf on the diagonal).

    Fast path from covariances: cov_12[y, y'] = Cov(ell_1(y), ell_2(y')). Rounding in the
    expansion leaves ~1e-8 absolute noise in T (a square root of ~1e-16 cancellation), so
    near-ties are settled by `exact_objective_rows`. NaN marks a zero log-odds scale.
    """
    check_dist_type(dist_type)
    rows = np.arange(cov_11.shape[0])
    a_term, b_term, _, _ = pivot_row_terms(
        np.diag(cov_11), np.diag(cov_22), np.diag(cov_12), cov_11, cov_22, rows
    )
    return _objective_from_terms(a_term, b_term, dist_type)


@dataclass(frozen=True)
class PivotTerms:
    """Everything the label side needs for one pivot a, computed directly from log-likelihoods.

    scale_m[y] = sd_x(ell_m(y) - ell_m(a)); a_term[y], b_term[y] = A(y), B(y) of the original's d_prob;
    logodds_m = the standardised log-odds columns (N x K) that m_SVD_f correlates. Column a
    is NaN throughout (no log-odds against itself).
    """

    pivot: int
    scale_1: np.ndarray
    scale_2: np.ndarray
    a_term: np.ndarray
    b_term: np.ndarray
    logodds_1: np.ndarray
    logodds_2: np.ndarray


def _sd_columns(centred: np.ndarray) -> np.ndarray:
    """Sample sd (ddof 1) of columns that already have zero mean: one pass, no temporaries."""
    return np.sqrt(np.einsum("ij,ij->j", centred, centred) / (centred.shape[0] - 1))


def pivot_terms(loglik_1: np.ndarray, loglik_2: np.ndarray, pivot: int) -> PivotTerms:
    """Label-side terms for pivot a, exact (no covariance expansion). O(N K)."""
    centred_1 = loglik_1 - loglik_1.mean(axis=0)
    centred_2 = loglik_2 - loglik_2.mean(axis=0)
    odds_1 = centred_1 - centred_1[:, [pivot]]
    odds_2 = centred_2 - centred_2[:, [pivot]]
    s1, s2 = _sd_columns(odds_1), _sd_columns(odds_2)
    inv_1, inv_2 = _inverse_scales(s1, s2)
    a_term, b_term = _ab_terms(centred_1, centred_2, pivot, inv_1, inv_2)
    return PivotTerms(pivot, s1, s2, a_term, b_term, odds_1 * inv_1, odds_2 * inv_2)


def _inverse_scales(s1: np.ndarray, s2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    degenerate = (s1 == 0) | (s2 == 0)  # includes y = pivot
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(degenerate, np.nan, 1.0 / s1), np.where(degenerate, np.nan, 1.0 / s2)


def _ab_terms(
    centred_1: np.ndarray,
    centred_2: np.ndarray,
    pivot: int,
    inv_1: np.ndarray,
    inv_2: np.ndarray,
    scratch: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A(y) = sd(ell_1(y)/s1 - ell_2(y)/s2), B(y) = the same for the pivot's column; written
    into `scratch` (two N x K buffers) when given, else into new arrays: the same numbers."""
    if scratch is None:
        scratch = (np.empty_like(centred_1), np.empty_like(centred_2))
    x, y = scratch
    with np.errstate(invalid="ignore"):
        np.multiply(centred_1, inv_1, out=x)
        np.subtract(x, np.multiply(centred_2, inv_2, out=y), out=x)
        a_term = _sd_columns(x)
        np.multiply(centred_1[:, [pivot]], inv_1, out=x)
        np.subtract(x, np.multiply(centred_2[:, [pivot]], inv_2, out=y), out=x)
        b_term = _sd_columns(x)
    return a_term, b_term


def _exact_ab_terms(
    centred_1: np.ndarray, centred_2: np.ndarray, pivot: int, scratch: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """pivot_terms' A and B alone, from centred log-likelihoods, in two reused N x K buffers:
    what re-scoring many near-tied pivots needs, at about half the memory traffic."""
    x, y = scratch
    np.subtract(centred_1, centred_1[:, [pivot]], out=x)
    np.subtract(centred_2, centred_2[:, [pivot]], out=y)
    inv_1, inv_2 = _inverse_scales(_sd_columns(x), _sd_columns(y))
    return _ab_terms(centred_1, centred_2, pivot, inv_1, inv_2, (x, y))


def exact_objective_rows(
    loglik_1: np.ndarray,
    loglik_2: np.ndarray,
    pivots: np.ndarray,
    dist_type: str = "max",
    cache: dict[int, PivotTerms] | None = None,
) -> np.ndarray:
    """T[a, b] computed directly from N x K log-likelihoods, for the given pivot rows only.

    Rows of pivots not asked for are +inf. O(N K) per pivot; `cache` keeps each pivot's terms
    for reuse (the chosen pivot's terms also give t1, t3 and m_SVD_f). Without a cache only
    each pivot's A and B are computed, in two reused buffers (the same numbers).
    """
    k = loglik_1.shape[1]
    asked = np.unique(pivots)  # only the near-tied pivots: usually one
    a_term = np.empty((len(asked), k))
    b_term = np.empty((len(asked), k))
    if cache is None and len(asked):
        centred = (loglik_1 - loglik_1.mean(axis=0), loglik_2 - loglik_2.mean(axis=0))
        scratch = (np.empty_like(centred[0]), np.empty_like(centred[1]))
    for i, a in enumerate(asked.tolist()):
        if cache is None:
            a_term[i], b_term[i] = _exact_ab_terms(*centred, a, scratch)
            continue
        if a not in cache:
            cache[a] = pivot_terms(loglik_1, loglik_2, a)
        a_term[i], b_term[i] = cache[a].a_term, cache[a].b_term
    objective = np.full((k, k), np.inf)
    if len(asked):
        objective[asked] = _objective_from_terms(a_term, b_term, dist_type, asked)
    return objective


NEAR_TIE = 1e-6  # fast-path T values this close to the minimum are re-scored exactly
TIE_RTOL = 1e-12  # exact T values this close count as tied


def choose_pivot_and_leave_out(
    objective: np.ndarray,
    loglik_1: np.ndarray | None = None,
    loglik_2: np.ndarray | None = None,
    dist_type: str = "max",
    cache: dict[int, PivotTerms] | None = None,
) -> tuple[int, int]:
    """argmin of T over (a, b), ties to the smallest a then b; NaN entries never win.

    With the log-likelihoods given, every pair within NEAR_TIE of the fast-path minimum is
    re-scored exactly first, so exact ties (identical models: T = 0 everywhere) go to the
    smallest (a, b) rather than to whichever pair rounding favoured. Pivots are re-scored in
    ascending order, one at a time (a pivot's exact terms hold two N x K arrays: keeping all
    K of them would need 2 N K^2 floats, 16 GB at N = 100,000, K = 100), and the scan stops at
    the first pivot with an exact T of 0, the least T can be (it is made of standard
    deviations), as no later pivot can win a tie against it. `cache` receives the exact terms
    when a single pivot was re-scored.
    """
    flat = _nan_to_inf(objective).ravel()
    lowest = flat.min()
    if not np.isfinite(lowest):
        return 0, 1  # every pair degenerate; the terms will be NaN
    k = objective.shape[0]
    if loglik_1 is not None and loglik_2 is not None:
        near = flat <= lowest + NEAR_TIE * (1.0 + abs(lowest))
        pivots = np.unique(np.flatnonzero(near) // k)
        exact = np.full(k * k, np.inf)
        for a, values in _exact_rows(loglik_1, loglik_2, pivots, dist_type, cache):
            row = slice(a * k, (a + 1) * k)
            exact[row] = np.where(near[row], _nan_to_inf(values), np.inf)
            if k > 2 and exact[row].min() == 0.0:
                break
        flat = exact
        lowest = flat.min()
        if not np.isfinite(lowest):
            return 0, 1
    tied = flat <= lowest + TIE_RTOL * abs(lowest)
    idx = int(np.argmax(tied))  # first in row-major order: smallest a, then smallest b
    return idx // k, idx % k


def _exact_rows(
    loglik_1: np.ndarray,
    loglik_2: np.ndarray,
    pivots: np.ndarray,
    dist_type: str,
    cache: dict[int, PivotTerms] | None,
) -> Iterator[tuple[int, np.ndarray]]:
    """(a, exact row T[a, :]) for each pivot in order; one pivot goes through the cache, many
    share one centring and two scratch buffers (and leave nothing behind)."""
    if len(pivots) == 1:
        a = int(pivots[0])
        yield a, exact_objective_rows(loglik_1, loglik_2, pivots, dist_type, cache)[a]
        return
    centred = (loglik_1 - loglik_1.mean(axis=0), loglik_2 - loglik_2.mean(axis=0))
    scratch = (np.empty_like(centred[0]), np.empty_like(centred[1]))
    for a in pivots.tolist():
        a_term, b_term = _exact_ab_terms(*centred, a, scratch)
        yield a, _objective_from_terms(a_term[None], b_term[None], dist_type, np.array([a]))[0]


@dataclass(frozen=True)
class LabelTerms:
    t1: float
    t3: float


def label_terms(
    loglik_1: np.ndarray,
    loglik_2: np.ndarray,
    y_pivot: int,
    y_leave_out: int,
    dist_type: str = "max",
    terms: PivotTerms | None = None,
) -> LabelTerms:
    """t1 and t3 at a given pivot and left-out label (from `terms` if already computed)."""
    check_dist_type(dist_type)
    k = loglik_1.shape[1]
    check_label_pair(k, y_pivot, y_leave_out)
    if terms is None or terms.pivot != y_pivot:
        terms = pivot_terms(loglik_1, loglik_2, y_pivot)
    return terms_of_row(terms.a_term, terms.b_term, terms.scale_1, terms.scale_2, y_pivot,
                        y_leave_out, dist_type)


def terms_of_row(a_term: np.ndarray, b_term: np.ndarray, scale_1: np.ndarray,
                 scale_2: np.ndarray, y_pivot: int, y_leave_out: int,
                 dist_type: str = "max") -> LabelTerms:
    """t1 and t3 from pivot a's row of A, B and the log-odds scales, labels a and b left out."""
    k = len(a_term)
    rest = np.array([y for y in range(k) if y not in (y_pivot, y_leave_out)])
    a_term, b_term = a_term[rest], b_term[rest]
    c_term = np.abs(scale_1[rest] - scale_2[rest])
    if dist_type == "max":
        t1 = float(np.max(np.maximum(a_term, b_term)))
        t3 = float(np.max(c_term))
    else:
        t1 = float(np.mean(np.concatenate([a_term, b_term])))
        t3 = float(np.mean(c_term))
    return LabelTerms(t1=t1, t3=t3)


def input_candidates(n_inputs: int, rep_dim: int, num_samples: int, seed: int) -> np.ndarray:
    """num_samples rows of M+1 distinct input indices (row = x0 pivot input, x1..xM), seeded."""
    need = (rep_dim + 1) * num_samples
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    if n_inputs < need:
        raise ValueError(
            f"num_samples*(M+1) = {num_samples}*{rep_dim + 1} = {need} exceeds the number of "
            f"inputs N = {n_inputs}: lower num_samples or evaluate on more inputs"
        )
    rng = np.random.default_rng(seed)
    return rng.choice(n_inputs, need, replace=False).reshape(num_samples, rep_dim + 1)


@dataclass(frozen=True)
class InputTerms:
    scores: np.ndarray  # t2 candidate score of every row
    t4: np.ndarray  # t4 of every row
    chosen: int  # index of the chosen row


def input_terms(
    rows_1: np.ndarray, rows_2: np.ndarray, dist_type: str = "max", threshold: float = 1.0
) -> InputTerms:
    """Score candidate diversity sets given their log-likelihoods, shape (S, M+1, K) per model.

    Scan rule of the original's d_prob: keep the first row, replace it by any later row
    whose score is strictly below the running threshold (initially 1.0). The result is the
    first row attaining the minimum score if that minimum is below the threshold, else row 0.
    """
    check_dist_type(dist_type)
    diff_1 = rows_1[:, 1:, :] - rows_1[:, :1, :]
    diff_2 = rows_2[:, 1:, :] - rows_2[:, :1, :]
    tau_1 = diff_1.std(axis=2, ddof=1)[..., None]
    tau_2 = diff_2.std(axis=2, ddof=1)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        a_term = (rows_1[:, 1:, :] / tau_1 - rows_2[:, 1:, :] / tau_2).std(axis=2, ddof=1)
        b_term = (rows_1[:, :1, :] / tau_1 - rows_2[:, :1, :] / tau_2).std(axis=2, ddof=1)
    return scan_input_sets(tau_1[..., 0], tau_2[..., 0], a_term, b_term, dist_type, threshold)


def scan_input_sets(tau_1: np.ndarray, tau_2: np.ndarray, a_term: np.ndarray,
                    b_term: np.ndarray, dist_type: str = "max",
                    threshold: float = 1.0) -> InputTerms:
    """The scan over candidate sets from their (S, M) log-odds scales tau_m and terms A, B."""
    degenerate = (tau_1 == 0) | (tau_2 == 0)
    per_input = np.where(degenerate, np.nan, np.maximum(a_term, b_term))
    scores = per_input.max(axis=1)  # always a max over j, as the original
    c_term = np.abs(tau_1 - tau_2)
    t4 = c_term.max(axis=1) if dist_type == "max" else c_term.mean(axis=1)
    ranked = _nan_to_inf(scores)
    best = int(np.argmin(ranked))
    chosen = best if ranked[best] < threshold else 0
    return InputTerms(scores=scores, t4=t4, chosen=chosen)


def combine_terms(t1: float, t2: float, t3: float, t4: float, lam: float, sum_or_max: str) -> float:
    """d_LLV = max(t1, t2, lam t3, lam t4) (the paper's) or t1 + t2 + lam (t3 + t4)."""
    check_combine(sum_or_max)
    terms = np.array([t1, t2, lam * t3, lam * t4])
    if np.isnan(terms).any():
        return float("nan")
    return float(terms.max() if sum_or_max == "max" else terms.sum())
