"""The log-likelihood variance distance d^lambda_LLV (paper Def. 4.4; the original's
`src/dissimilarity_measures/distribution_distance.py::d_prob`).

Label side (terms t1, t3): variances over inputs of log-likelihoods standardised by each
model's own log-odds scale, for a pivot label a and a left-out label b chosen to minimise t1:
the pivot search, read as `pivot_objective`, `choose_pivot_and_leave_out`, `first_tied`.
Input side (terms t2, t4): the same over labels, for a "diversity set" of M+1 inputs chosen
among seeded random candidates by the original's scan rule.
The search runs on K x K covariances of the log-likelihood columns (O(N K^2), then O(K^3));
the chosen pair's terms are recomputed from the log-likelihoods, free of the cancellation in
the covariance expansion.
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
        raise ValueError(f"y_pivot={y_pivot} and y_leave_out={y_leave_out} must be distinct "
                         f"labels in [0, {num_labels})")


def _nan_to_inf(a: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(a), np.inf, a)


# A log-odds variance Var(ell(y) - ell(a)) at or below ZERO_VARIANCE_RTOL of Var ell(y) + Var
# ell(a) is zero: labels y and a are tied (their log-likelihoods move together to within 1e-5 of
# their spread). Rounding leaves ~1e-16 to 1e-13 of that sum (the expansion's cancellation, BLAS
# summation order); the closest labels of the authors' 76 checkpoints sit at 6.5e-7.
ZERO_VARIANCE_RTOL = 1e-10
NEAR_ZERO_FACTOR = 100.0  # within this factor of the tolerance, either side: a knife edge


def zero_variance(var: np.ndarray, var_sum: np.ndarray) -> np.ndarray:
    """Where a difference's variance is zero to within rounding: var <= ZERO_VARIANCE_RTOL x
    var_sum, the variances of the two things differenced (0 <= 0: both constant)."""
    return var <= ZERO_VARIANCE_RTOL * var_sum


def near_zero_variance(var: np.ndarray, var_sum: np.ndarray) -> np.ndarray:
    """Where that decision sits on a knife edge: var within NEAR_ZERO_FACTOR of the tolerance
    on either side, where another CPU's rounding could tip it."""
    limit = ZERO_VARIANCE_RTOL * var_sum
    return (var > limit / NEAR_ZERO_FACTOR) & (var <= limit * NEAR_ZERO_FACTOR)


def snap_zero_sd(sd: np.ndarray, var_sum: np.ndarray) -> np.ndarray:
    """sd with exact zeros where its variance is zero to within rounding (zero_variance): a
    tie decided by the tolerance, not by which rounding one CPU's kernels left."""
    return np.where(zero_variance(sd * sd, var_sum), 0.0, sd)


# ----- d_LLV's pivot search: the objective, its argmin, the tie rule ---------------------------

NEAR_TIE = 1e-6  # fast-path T values this close to the minimum are re-scored exactly
# Exact T values within TIE_RTOL x (1 + |lowest|) of the lowest tie: T, made of standard
# deviations, is O(1), exactly 0 for a model against itself, and rounding leaves ~1e-15 of it.
TIE_RTOL = 1e-12


def pivot_objective(cov_11: np.ndarray, cov_22: np.ndarray, cov_12: np.ndarray,
                    dist_type: str = "max") -> np.ndarray:
    """T[a, b]: the t1 objective for pivot a and left-out b (K x K; +inf on the diagonal, NaN
    at a zero log-odds scale), from cov_12[y, y'] = Cov(ell_1(y), ell_2(y')) and the like:
    ~1e-8 absolute noise in T (a square root of the expansion's ~1e-16 cancellation)."""
    check_dist_type(dist_type)
    rows = np.arange(cov_11.shape[0])
    a_term, b_term, _, _ = pivot_row_terms(np.diag(cov_11), np.diag(cov_22), np.diag(cov_12),
                                           cov_11, cov_22, rows)
    return _objective_from_terms(a_term, b_term, dist_type)


def choose_pivot_and_leave_out(objective: np.ndarray, loglik_1: np.ndarray | None = None,
                               loglik_2: np.ndarray | None = None, dist_type: str = "max",
                               cache: dict[int, PivotTerms] | None = None) -> tuple[int, int]:
    """The pivot a and left-out label b that minimise T (`pivot_objective`); NaN never wins.
    With the log-likelihoods given, pairs near the minimum are re-scored exactly first, so that
    exact ties (identical models: T = 0 everywhere) go by `first_tied`, not by rounding."""
    k = objective.shape[0]
    values = _nan_to_inf(objective).ravel()
    if loglik_1 is not None and loglik_2 is not None:
        values = rescore_near_minimum(values, k, (loglik_1, loglik_2), dist_type, cache)
    best = first_tied(values)
    if best is None:
        return 0, 1  # every pair degenerate; the terms will be NaN
    return divmod(best, k)


def first_tied(values: np.ndarray, rtol: float = TIE_RTOL) -> int | None:
    """The first of the values tied with the lowest (`tie_band`; NaN already +inf), None when
    none is finite. On T flattened row by row the first is the smallest a, then b."""
    lowest = values.min()
    return int(np.argmax(values <= tie_band(lowest, rtol))) if np.isfinite(lowest) else None


def tie_band(lowest: float, rtol: float = TIE_RTOL) -> float:
    """Values at or below lowest + this count as tied with the lowest (rtol x (1 + |lowest|):
    relative, and absolute near 0, where identical models' T sits)."""
    return lowest + rtol * (1.0 + abs(lowest))


def rescore_near_minimum(values: np.ndarray, k: int, logliks: tuple[np.ndarray, np.ndarray],
                         dist_type: str, cache: dict[int, PivotTerms] | None) -> np.ndarray:
    """Flattened T (NaN as +inf) with its pairs within NEAR_TIE of the minimum recomputed
    from the log-likelihoods, and every other pair +inf. Pivots go in ascending order, one at
    a time, and only a single pivot's terms go to `cache`: all K pivots' would need 2 N K^2
    floats (16 GB at N = 100,000, K = 100). The scan stops at the first row whose minimum ties
    0, the least T can be: no later pivot can win a tie."""
    lowest = values.min()
    if not np.isfinite(lowest):
        return values
    near = values <= tie_band(lowest, NEAR_TIE)
    pivots = np.unique(np.flatnonzero(near) // k)
    exact = np.full(k * k, np.inf)
    for a, row in _exact_rows(*logliks, pivots, dist_type, cache if len(pivots) == 1 else None):
        span = slice(a * k, (a + 1) * k)
        exact[span] = np.where(near[span], _nan_to_inf(row), np.inf)
        if k > 2 and exact[span].min() <= tie_band(0.0):
            break
    return exact


def _exact_rows(loglik_1: np.ndarray, loglik_2: np.ndarray, pivots: np.ndarray, dist_type: str,
                cache: dict[int, PivotTerms] | None) -> Iterator[tuple[int, np.ndarray]]:
    """(a, exact row T[a, :]) for each pivot in order, its terms kept in `cache` when given,
    else computed in two N x K buffers that every pivot shares (the same numbers)."""
    if cache is None:
        centred, variances = _centred_pair(loglik_1, loglik_2)
        scratch = (np.empty_like(centred[0]), np.empty_like(centred[1]))
    for a in pivots.tolist():
        if cache is None:
            a_term, b_term = _exact_ab_terms(centred, variances, a, scratch)
        else:
            if a not in cache:
                cache[a] = pivot_terms(loglik_1, loglik_2, a)
            a_term, b_term = cache[a].a_term, cache[a].b_term
        yield a, _objective_from_terms(a_term[None], b_term[None], dist_type, np.array([a]))[0]


# ----- T's rows: A, B and the log-odds scales of each pivot ------------------------------

CUBIC_MEAN_MAX_LABELS = 1024  # above, the "mean" objective uses the O(K^2) running-sum form
OBJECTIVE_BLOCK = 1 << 22  # elements of a (pivots, K, K) block held at once (32 MiB)


def _objective_from_terms(a_term: np.ndarray, b_term: np.ndarray, dist_type: str,
                          pivots: np.ndarray | None = None) -> np.ndarray:
    """T[a, b] from per-(pivot a, label y) terms A[a, y], B[a, y] (rows = `pivots`, default all
    K labels; +inf at b = a): the max or mean over labels y other than a and b, NaN where one
    is NaN. "mean" sums blocks of rows with the excluded labels zeroed (the pairwise sums of
    one K x K x K reduction) up to CUBIC_MEAN_MAX_LABELS labels, then row total minus b's."""
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
            excluded = ((piv[:, None, None] == labels[None, None, :])
                        | (labels[None, :, None] == labels[None, None, :]))
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
    out[count >= 1] = np.nan
    one = np.flatnonzero(count == 1)
    out[one, nan.argmax(axis=1)[one]] = without_nan[one]
    return out


def pivot_row_terms(d1: np.ndarray, d2: np.ndarray, x12: np.ndarray, c1: np.ndarray,
                    c2: np.ndarray, rows: np.ndarray, cols: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A, B and the log-odds scales s1, s2 of the pivots `rows`, from second moments alone:
    d_m[y] = Var(ell_m(y)), x12[y] = Cov(ell_1(y), ell_2(y)), c_m[i, y] = Cov(ell_m(rows[i]),
    ell_m(y)) (rows x K, or rows x len(cols) for the labels `cols` only): s_m[a, y] =
    sd(ell_m(y) - ell_m(a)), A[a, y] = sd(ell_1(y)/s1 - ell_2(y)/s2), B[a, y] the same for the
    pivot's column; NaN where a scale is zero (zero_variance), the scale then exactly 0.
    """
    e1, e2, ex = (d1, d2, x12) if cols is None else (d1[cols], d2[cols], x12[cols])
    s1 = _pivot_scale(e1[None, :] + d1[rows, None], c1)
    s2 = _pivot_scale(e2[None, :] + d2[rows, None], c2)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv1, inv2 = 1.0 / s1, 1.0 / s2
        a_sq = e1[None, :] * inv1**2 + e2[None, :] * inv2**2 - 2.0 * ex[None, :] * inv1 * inv2
        b_sq = (d1[rows, None] * inv1**2 + d2[rows, None] * inv2**2
                - 2.0 * x12[rows, None] * inv1 * inv2)
    degenerate = (s1 == 0) | (s2 == 0)
    a_term = np.where(degenerate, np.nan, np.sqrt(np.clip(a_sq, 0.0, None)))
    b_term = np.where(degenerate, np.nan, np.sqrt(np.clip(b_sq, 0.0, None)))
    return a_term, b_term, s1, s2


def _pivot_scale(var_sum: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """sd(ell(y) - ell(a)) from Var ell(y) + Var ell(a) and Cov(ell(a), ell(y)); 0 where zero
    to within rounding."""
    var = np.clip(var_sum - 2.0 * cov, 0.0, None)
    return np.where(zero_variance(var, var_sum), 0.0, np.sqrt(var))


def near_tied_labels(cov: np.ndarray) -> list[tuple[int, int, float]]:
    """The pairs of labels (a < y) of one model on near_zero_variance's knife edge, each with its
    ratio as in near_in_row, from its K x K covariance of log-likelihood columns."""
    d = np.diag(cov)
    var_sum = d[:, None] + d[None, :]
    var = np.clip(var_sum - 2.0 * cov, 0.0, None)
    a, y = np.nonzero(np.triu(near_zero_variance(var, var_sum), 1))
    return [(int(i), int(j), float(var[i, j] / var_sum[i, j])) for i, j in zip(a, y, strict=True)]


@dataclass(frozen=True)
class PivotTerms:
    """Everything the label side needs for one pivot a, computed directly from log-likelihoods:
    scale_m[y] = sd_x(ell_m(y) - ell_m(a)); a_term, b_term = A, B of the original's d_prob;
    logodds_m = the standardised log-odds columns (N x K) that m_SVD_f correlates, column a
    NaN (no log-odds against itself)."""

    pivot: int
    scale_1: np.ndarray
    scale_2: np.ndarray
    a_term: np.ndarray
    b_term: np.ndarray
    logodds_1: np.ndarray
    logodds_2: np.ndarray
    near_tied: tuple[list[tuple[int, int, float]], ...] = ([], [])  # per model: knife edges


def _var_columns(centred: np.ndarray) -> np.ndarray:
    """Sample variance (ddof 1) of columns that already have zero mean: one pass."""
    return np.einsum("ij,ij->j", centred, centred) / (centred.shape[0] - 1)


def pivot_terms(loglik_1: np.ndarray, loglik_2: np.ndarray, pivot: int) -> PivotTerms:
    """Label-side terms for pivot a, exact (no covariance expansion). O(N K)."""
    (centred_1, centred_2), (var_1, var_2) = _centred_pair(loglik_1, loglik_2)
    odds_1 = centred_1 - centred_1[:, [pivot]]
    odds_2 = centred_2 - centred_2[:, [pivot]]
    odds_var_1, odds_var_2 = _var_columns(odds_1), _var_columns(odds_2)
    s1, s2 = _odds_scale(odds_var_1, var_1, pivot), _odds_scale(odds_var_2, var_2, pivot)
    inv_1, inv_2 = _inverse_scales(s1, s2)
    a_term, b_term = _ab_terms(centred_1, centred_2, pivot, inv_1, inv_2)
    near = (near_in_row(odds_var_1, var_1, pivot), near_in_row(odds_var_2, var_2, pivot))
    return PivotTerms(pivot, s1, s2, a_term, b_term, odds_1 * inv_1, odds_2 * inv_2, near)


def near_in_row(odds_var: np.ndarray, var: np.ndarray, pivot: int) -> list[tuple[int, int, float]]:
    """(pivot, y, ratio) of the labels y whose log-odds variance against the pivot sits on the
    knife edge of zero (near_zero_variance), ratio = that variance / (Var ell(y) + Var ell(a))."""
    var_sum = var + var[pivot]
    return [(pivot, int(y), float(odds_var[y] / var_sum[y]))
            for y in np.flatnonzero(near_zero_variance(odds_var, var_sum))]


def knife_edge_notes(near_tied: tuple[list[tuple[int, int, float]], ...],
                     near_inputs: int = 0) -> list[str]:
    """The `warning` column's words for d_LLV's zero-variance decisions on a knife edge: labels
    nearly tied with the chosen pivot, and candidate input sets' log-odds scales near zero."""
    notes = []
    for model, pairs in enumerate(near_tied, start=1):
        if pairs:
            shown = ", ".join(f"{a} and {y} ({r:.2g})" for a, y, r in pairs[:3])
            more = f" and {len(pairs) - 3} more" if len(pairs) > 3 else ""
            notes.append(f"d_LLV: model {model}'s labels {shown}{more} are nearly tied (log-odds "
                         f"variance over the columns' variances within {NEAR_ZERO_FACTOR:g}x of "
                         f"the tolerance {ZERO_VARIANCE_RTOL:g} at which labels count as tied): "
                         "whether their terms are NaN may differ with another CPU's rounding")
    if near_inputs:
        notes.append(f"d_LLV: {near_inputs} log-odds scale(s) of the candidate input sets lie "
                     f"within {NEAR_ZERO_FACTOR:g}x of the tolerance {ZERO_VARIANCE_RTOL:g} at "
                     "which two inputs count as mapped alike: whether those sets are scored may "
                     "differ with another CPU's rounding")
    return notes


def _odds_scale(odds_var: np.ndarray, var: np.ndarray, pivot: int) -> np.ndarray:
    """sd of each log-odds column against the pivot from its variance, 0 where zero_variance
    holds against the log-likelihood columns' variances `var` (the pivot's own column too)."""
    return np.where(zero_variance(odds_var, var + var[pivot]), 0.0, np.sqrt(odds_var))


def _inverse_scales(s1: np.ndarray, s2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    degenerate = (s1 == 0) | (s2 == 0)  # includes y = pivot: zeros are snapped (_odds_scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(degenerate, np.nan, 1.0 / s1), np.where(degenerate, np.nan, 1.0 / s2)


def _ab_terms(centred_1: np.ndarray, centred_2: np.ndarray, pivot: int, inv_1: np.ndarray,
              inv_2: np.ndarray, scratch: tuple[np.ndarray, np.ndarray] | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """A(y) = sd(ell_1(y)/s1 - ell_2(y)/s2), B(y) = the same for the pivot's column; written
    into `scratch` (two N x K buffers) when given."""
    if scratch is None:
        scratch = (np.empty_like(centred_1), np.empty_like(centred_2))
    x, y = scratch
    with np.errstate(invalid="ignore"):
        np.multiply(centred_1, inv_1, out=x)
        np.subtract(x, np.multiply(centred_2, inv_2, out=y), out=x)
        a_term = np.sqrt(_var_columns(x))
        np.multiply(centred_1[:, [pivot]], inv_1, out=x)
        np.subtract(x, np.multiply(centred_2[:, [pivot]], inv_2, out=y), out=x)
        b_term = np.sqrt(_var_columns(x))
    return a_term, b_term


def _exact_ab_terms(centred: tuple[np.ndarray, np.ndarray],
                    variances: tuple[np.ndarray, np.ndarray], pivot: int,
                    scratch: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """pivot_terms' A and B alone, from centred log-likelihoods and their column variances, in
    two reused N x K buffers (re-scoring many near-tied pivots: half the memory traffic)."""
    (centred_1, centred_2), (var_1, var_2), (x, y) = centred, variances, scratch
    np.subtract(centred_1, centred_1[:, [pivot]], out=x)
    np.subtract(centred_2, centred_2[:, [pivot]], out=y)
    inv_1, inv_2 = _inverse_scales(_odds_scale(_var_columns(x), var_1, pivot),
                                   _odds_scale(_var_columns(y), var_2, pivot))
    return _ab_terms(centred_1, centred_2, pivot, inv_1, inv_2, (x, y))


def _centred_pair(loglik_1: np.ndarray, loglik_2: np.ndarray) -> tuple[
        tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Both models' log-likelihoods centred over inputs, and their column variances."""
    centred = (loglik_1 - loglik_1.mean(axis=0), loglik_2 - loglik_2.mean(axis=0))
    return centred, (_var_columns(centred[0]), _var_columns(centred[1]))


def exact_objective_rows(loglik_1: np.ndarray, loglik_2: np.ndarray, pivots: np.ndarray,
                         dist_type: str = "max", cache: dict[int, PivotTerms] | None = None
                         ) -> np.ndarray:
    """T[a, b] computed directly from N x K log-likelihoods for the given pivot rows, +inf in
    the others: O(N K) per pivot, each pivot's terms kept in `cache` when given."""
    k = loglik_1.shape[1]
    objective = np.full((k, k), np.inf)
    for a, row in _exact_rows(loglik_1, loglik_2, np.unique(pivots), dist_type, cache):
        objective[a] = row
    return objective


@dataclass(frozen=True)
class LabelTerms:
    t1: float
    t3: float


def label_terms(loglik_1: np.ndarray, loglik_2: np.ndarray, y_pivot: int, y_leave_out: int,
                dist_type: str = "max", terms: PivotTerms | None = None) -> LabelTerms:
    """t1 and t3 at a given pivot and left-out label (from `terms` if already computed)."""
    check_dist_type(dist_type)
    check_label_pair(loglik_1.shape[1], y_pivot, y_leave_out)
    if terms is None or terms.pivot != y_pivot:
        terms = pivot_terms(loglik_1, loglik_2, y_pivot)
    return terms_of_row(terms.a_term, terms.b_term, terms.scale_1, terms.scale_2, y_pivot,
                        y_leave_out, dist_type)


def terms_of_row(a_term: np.ndarray, b_term: np.ndarray, scale_1: np.ndarray, scale_2: np.ndarray,
                 y_pivot: int, y_leave_out: int, dist_type: str = "max") -> LabelTerms:
    """t1 and t3 from pivot a's row of A, B and the log-odds scales, labels a and b left out."""
    rest = np.array([y for y in range(len(a_term)) if y not in (y_pivot, y_leave_out)])
    a_term, b_term = a_term[rest], b_term[rest]
    c_term = np.abs(scale_1[rest] - scale_2[rest])
    if dist_type == "max":
        return LabelTerms(t1=float(np.max(np.maximum(a_term, b_term))), t3=float(np.max(c_term)))
    return LabelTerms(t1=float(np.mean(np.concatenate([a_term, b_term]))),
                      t3=float(np.mean(c_term)))


def input_candidates(n_inputs: int, rep_dim: int, num_samples: int, seed: int) -> np.ndarray:
    """num_samples rows of M+1 distinct input indices (row = x0 pivot input, x1..xM), seeded."""
    need = (rep_dim + 1) * num_samples
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    if n_inputs < need:
        raise ValueError(f"num_samples*(M+1) = {num_samples}*{rep_dim + 1} = {need} exceeds the "
                         f"number of inputs N = {n_inputs}: lower num_samples or evaluate on "
                         "more inputs")
    rng = np.random.default_rng(seed)
    return rng.choice(n_inputs, need, replace=False).reshape(num_samples, rep_dim + 1)


@dataclass(frozen=True)
class InputTerms:
    scores: np.ndarray  # t2 candidate score of every row
    t4: np.ndarray  # t4 of every row
    chosen: int  # index of the chosen row
    near_zero: int = 0  # log-odds scales on the knife edge of zero (near_zero_variance)


def input_terms(rows_1: np.ndarray, rows_2: np.ndarray, dist_type: str = "max",
                threshold: float = 1.0) -> InputTerms:
    """Score candidate diversity sets given their log-likelihoods, shape (S, M+1, K) per model.
    Scan rule of the original's d_prob (a kept row replaced by any later one scoring strictly
    below a running threshold): the first row attaining the minimum score if that minimum is
    below the threshold, else row 0. A log-odds scale tau over labels is zero where
    zero_variance holds against the two inputs' variances over labels (inputs mapped alike).
    """
    check_dist_type(dist_type)
    var_1, var_2 = rows_1.var(axis=2, ddof=1), rows_2.var(axis=2, ddof=1)
    sum_1, sum_2 = var_1[:, 1:] + var_1[:, :1], var_2[:, 1:] + var_2[:, :1]
    raw_1 = (rows_1[:, 1:, :] - rows_1[:, :1, :]).std(axis=2, ddof=1)
    raw_2 = (rows_2[:, 1:, :] - rows_2[:, :1, :]).std(axis=2, ddof=1)
    near = int(near_zero_variance(raw_1**2, sum_1).sum()
               + near_zero_variance(raw_2**2, sum_2).sum())
    tau_1, tau_2 = snap_zero_sd(raw_1, sum_1), snap_zero_sd(raw_2, sum_2)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = tau_1[..., None], tau_2[..., None]
        a_term = (rows_1[:, 1:, :] / t1 - rows_2[:, 1:, :] / t2).std(axis=2, ddof=1)
        b_term = (rows_1[:, :1, :] / t1 - rows_2[:, :1, :] / t2).std(axis=2, ddof=1)
    return scan_input_sets(tau_1, tau_2, a_term, b_term, dist_type, threshold, near)


def scan_input_sets(tau_1: np.ndarray, tau_2: np.ndarray, a_term: np.ndarray,
                    b_term: np.ndarray, dist_type: str = "max",
                    threshold: float = 1.0, near_zero: int = 0) -> InputTerms:
    """The scan over candidate sets from their (S, M) log-odds scales tau_m (zeros snapped:
    snap_zero_sd) and terms A, B; `near_zero` counts the scales on the knife edge."""
    degenerate = (tau_1 == 0) | (tau_2 == 0)
    per_input = np.where(degenerate, np.nan, np.maximum(a_term, b_term))
    scores = per_input.max(axis=1)  # always a max over j, as the original
    c_term = np.abs(tau_1 - tau_2)
    t4 = c_term.max(axis=1) if dist_type == "max" else c_term.mean(axis=1)
    ranked = _nan_to_inf(scores)
    best = int(np.argmin(ranked))
    chosen = best if ranked[best] < threshold else 0
    return InputTerms(scores=scores, t4=t4, chosen=chosen, near_zero=near_zero)


def combine_terms(t1: float, t2: float, t3: float, t4: float, lam: float, sum_or_max: str) -> float:
    """d_LLV = max(t1, t2, lam t3, lam t4) (the paper's) or t1 + t2 + lam (t3 + t4)."""
    check_combine(sum_or_max)
    terms = np.array([t1, t2, lam * t3, lam * t4])
    if np.isnan(terms).any():
        return float("nan")
    return float(terms.max() if sum_or_max == "max" else terms.sum())
