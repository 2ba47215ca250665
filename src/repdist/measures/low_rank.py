"""The measures at vocabulary scale: K in the tens of thousands (a language model's vocabulary).

The exact path (compare.py) holds N x K log-likelihoods and K x K covariances: 4 GB and 20 GB at
N = 10,000 and K = 50,257 (GPT-2). But ell(x, y) = f(x)^T g(y) - lse(x) has rank at most M + 1,
so every covariance the measures read is a small (M+1) x (M+1) product. Only lse(x) and the KL
need every logit: they stream over blocks of labels. d_LLV's pivots and m_SVD_f's label sets
are sampled; `device` (compare's keyword) runs the two large costs with torch on a GPU."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..io.host import to_host
from .llv import (
    NEAR_TIE,
    ZERO_VARIANCE_RTOL,
    InputTerms,
    LabelTerms,
    _nan_to_inf,
    _objective_from_terms,
    first_tied,
    near_in_row,
    near_zero_variance,
    pivot_row_terms,
    scan_input_sets,
    snap_zero_sd,
    terms_of_row,
)
from .svd import MAX_LABEL_SETS, mean_singular_values

# The low-rank form: centred over inputs, ell_c = F G^T with F = [f - mean f, -(lse - mean lse)]
# (N x (M+1)) and G = [g, 1] (K x (M+1)). The covariances d_LLV and m_SVD_f read are G_a S G_b^T,
# S = F^T F / (N - 1); the input side's and d_logit's are quadratic forms in g's M x M covariance.
METHODS = ("auto", "exact", "low_rank")
LOW_RANK_ABOVE_LABELS = 1024  # method "auto": the exact path up to this many labels
# Unlike the exact path, this one does not re-score near-ties: its moments carry ~1e-8 of rounding,
# so pivots and left-out labels this close to the lowest tie, the smallest taken (llv.first_tied).
LOW_RANK_TIE = NEAR_TIE
MAX_PIVOTS = 512  # pivots d_LLV's label search tries at vocabulary scale (seeded sample)
PIVOT_STREAM = 0x9170  # seeds the pivot sample apart from the input candidates and label sets
STREAM_LABELS = 2048  # labels per block of streamed logits
# exp below about -708 is subnormal or zero, and 5 to 10x slower in torch and numpy: the stream
# floors its arguments there (exp(-708) = 3.3e-308). Its sums cannot see it: a row's running total
# is at least 1, and its KL numerator ends beside the lse.
EXP_FLOOR = -708.0
STREAM_ROWS = 256  # inputs per block (256 x 2,048 float64: 4 MiB, the passes stay in cache: 3.6x)
COV_LABELS = 8192  # labels at once in a product over labels (8,192 x M float64, not K x M)
PIVOT_BLOCK = 64  # pivot rows (x K) computed at once
PROBE_PIVOTS = 64  # pivots whose rows pick the labels the bound is taken over
BOUND_LABELS = 256  # labels the lower bound of every pivot's row is taken over
BOUND_ROWS = 4096  # pivots (x BOUND_LABELS) bounded at once
BOUND_SLACK = 1e-9  # a bound this close to the best row is evaluated (rounding differs)
SET_FLOPS = 1 << 33  # m_SVD_f's default budget at vocabulary scale: ~ sets x M^3
MIN_LABEL_SETS = 16
BLOCK_ELEMENTS = 1 << 23  # elements of an (items, M, M) block held at once (64 MiB)
# On a device (a GPU): fewer, larger blocks (launches, not cache, bound the small ones there)
DEVICE_STREAM_ROWS = 4096  # x DEVICE_STREAM_LABELS float64: 256 MiB a temporary
DEVICE_STREAM_LABELS = 8192
DEVICE_PIVOT_BLOCK = 512  # pivot rows x K float64: 206 MB a temporary at K = 50,257


def check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def compute_device(device: str) -> str | None:
    """Where the streams and pivot rows (costs N K M and K^2 M) run for compare's `device`:
    None for "cpu", else a torch device ("auto": "cuda" when torch sees a GPU, else None).
    float64 either way; only per-input and per-pivot results come back. Raises ValueError for
    a device torch does not know or a CUDA device where torch sees none."""
    if not isinstance(device, str):
        raise ValueError(f"device must be a string (cpu, auto, cuda, cuda:N), got {device!r}")
    if device == "cpu":
        return None
    try:
        import torch
    except ImportError:
        if device == "auto":
            return None
        raise ValueError(f"device={device!r} needs torch, which is not installed here") from None
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else None
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as err:
        raise ValueError(f"device must be cpu, auto or a torch device such as cuda or cuda:1, "
                         f"got {device!r}") from err
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r}: torch sees no CUDA GPU here (device='auto' "
                         "takes one only where there is one)")
    return str(parsed)


def use_low_rank(method: str, num_labels: int) -> bool:
    """Whether a comparison of models with this many labels takes the low-rank path."""
    check_method(method)
    return method == "low_rank" or (method == "auto" and num_labels > LOW_RANK_ABOVE_LABELS)


def default_label_sets(rep_dim: int, low_rank: bool) -> int:
    """max_label_sets when none is given: MAX_LABEL_SETS, or at vocabulary scale as many M x M
    SVDs as SET_FLOPS allows (18 at M = 768), at least MIN_LABEL_SETS (a seeded sample)."""
    if not low_rank:
        return MAX_LABEL_SETS
    return int(min(MAX_LABEL_SETS, max(MIN_LABEL_SETS, SET_FLOPS // max(1, rep_dim) ** 3)))


def _blocks(total: int, step: int) -> list[slice]:
    return [slice(lo, min(lo + step, total)) for lo in range(0, total, step)]


# ----- streamed over labels: lse and KL -----------------------------------------------------

def streamed_lse(f: np.ndarray, g: np.ndarray, device: str | None = None) -> np.ndarray:
    """lse(x) = log sum_y exp(f(x)^T g(y)) for every input, streamed over blocks of logits
    (on `device` with torch when given, see compute_device)."""
    return _stream(f, g, device=device)[1]


def streamed_kl(f1: np.ndarray, g1: np.ndarray, f2: np.ndarray, g2: np.ndarray,
                device: str | None = None) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean over inputs of KL(p1 || p2), and both models' lse, in one pass over label blocks:
    KL(x) = sum_y p1(y|x) (z1 - z2) - lse1 + lse2 with z = f^T g, the sum kept relative to the
    running maximum of z1 and rescaled when it grows (an online softmax), in float64."""
    kl, lse1, lse2 = _stream(f1, g1, f2, g2, device)
    assert lse2 is not None
    return kl, lse1, lse2


def _stream(f1: np.ndarray, g1: np.ndarray, f2: np.ndarray | None = None,
            g2: np.ndarray | None = None,
            device: str | None = None) -> tuple[float, np.ndarray, np.ndarray | None]:
    pair = f2 is not None and g2 is not None
    ops = _array_ops() if device is None else _TorchOps(_torch(), device)
    row_step, label_step = ((STREAM_ROWS, STREAM_LABELS) if device is None
                            else (DEVICE_STREAM_ROWS, DEVICE_STREAM_LABELS))
    tf1, tg1 = ops.wrap(f1), ops.wrap(g1)
    tf2, tg2 = (ops.wrap(f2), ops.wrap(g2)) if pair else (None, None)
    n = f1.shape[0]
    lse1, lse2, kl_terms = np.empty(n), np.empty(n), np.empty(n)
    # three blocks of logits, reused: each pass writes into one (no allocation in the loop)
    scratch = [ops.zeros(min(n, row_step) * min(g1.shape[0], label_step)) for _ in range(3)]
    for rows in _blocks(n, row_step):  # blocks that stay in cache between the passes
        size = rows.stop - rows.start
        run1, run2, acc = _Running(size, ops), _Running(size, ops), ops.zeros(size)
        for block in _blocks(g1.shape[0], label_step):
            z1, z2, diff = (b[: size * (block.stop - block.start)].reshape(size, -1)
                            for b in scratch)
            ops.matmul(tf1[rows], tg1[block].T, out=z1)
            if pair:
                ops.matmul(tf2[rows], tg2[block].T, out=z2)
                ops.subtract(z1, z2, out=diff)
                run2.add(z2)
            scale, weights = run1.add(z1)
            if pair:
                acc = acc * scale + ops.row_dot(weights, diff)
        lse1[rows] = to_host(run1.lse(), np.float64)
        if pair:
            lse2[rows] = to_host(run2.lse(), np.float64)
            kl_terms[rows] = to_host(acc / run1.total, np.float64) - lse1[rows] + lse2[rows]
    return (float(np.mean(kl_terms)), lse1, lse2) if pair else (float("nan"), lse1, None)


class _NumpyOps:
    """The few array operations the stream needs, on numpy arrays."""

    exp, log, maximum = staticmethod(np.exp), staticmethod(np.log), staticmethod(np.maximum)
    matmul, subtract = staticmethod(np.matmul), staticmethod(np.subtract)
    wrap, zeros, full = staticmethod(np.asarray), staticmethod(np.zeros), staticmethod(np.full)
    row_max, row_sum = staticmethod(partial(np.max, axis=1)), staticmethod(partial(np.sum, axis=1))

    @staticmethod
    def row_dot(weights: np.ndarray, diff: np.ndarray) -> np.ndarray:
        """Each row's weights . diff (diff overwritten: a temporary of the stream's)."""
        return np.multiply(weights, diff, out=diff).sum(axis=1)

    @staticmethod
    def floored_exp(x: np.ndarray) -> np.ndarray:
        """exp(max(x, EXP_FLOOR)) in place (x is a temporary of the stream's)."""
        return np.exp(np.maximum(x, EXP_FLOOR, out=x), out=x)


class _TorchOps:
    """The same on torch tensors: on the CPU sharing the arrays' memory (torch's float64 matmul
    and exp run ~1.2x and ~3.5x numpy's), or copied once to `device`."""

    def __init__(self, torch, device: str | None = None) -> None:  # noqa: ANN001 - the module
        self.torch = torch
        self.device = None if device is None else torch.device(device)
        self.exp, self.log, self.maximum = torch.exp, torch.log, torch.maximum
        self.matmul, self.subtract = torch.matmul, torch.subtract
        self.row_sum = partial(torch.sum, dim=1)

    def wrap(self, a: np.ndarray):  # noqa: ANN201
        with warnings.catch_warnings():  # prepared arrays are read-only; nothing writes them
            warnings.filterwarnings("ignore", "The given NumPy array is not writable")
            t = self.torch.from_numpy(a)
        return t if self.device is None else t.to(self.device)

    def zeros(self, n: int):  # noqa: ANN201
        return self.torch.zeros(n, dtype=self.torch.float64, device=self.device)

    def full(self, n: int, value: float):  # noqa: ANN201
        return self.torch.full((n,), value, dtype=self.torch.float64, device=self.device)

    @staticmethod
    def row_max(z):  # noqa: ANN001, ANN205
        return z.max(dim=1).values

    @staticmethod
    def row_dot(weights, diff):  # noqa: ANN001, ANN205
        return diff.mul_(weights).sum(dim=1)

    @staticmethod
    def floored_exp(x):  # noqa: ANN001, ANN205
        return x.clamp_min_(EXP_FLOOR).exp_()


def _torch():  # noqa: ANN202 - the module
    """torch, for a device compute_device accepted (so installed)."""
    try:
        import torch
    except ImportError as err:
        raise ValueError("a torch device was asked for, but torch is not installed") from err
    return torch


def _array_ops() -> _NumpyOps | _TorchOps:
    """torch where it is installed (every repdist venv), numpy otherwise (the measures' conda
    env, which has no torch): the same float64 arithmetic either way."""
    try:
        import torch
    except ImportError:
        return _NumpyOps()
    return _TorchOps(torch)


class _Running:
    """An online logsumexp over blocks of columns: running row maximum and rescaled sum."""

    def __init__(self, n: int, ops: _NumpyOps | _TorchOps) -> None:
        self.ops = ops
        self.top = ops.full(n, -np.inf)
        self.total = ops.zeros(n)

    def add(self, z):  # noqa: ANN001, ANN201 - arrays or tensors
        """Take a block (overwritten); returns the factor earlier sums shrink by and the
        block's weights exp(z - new maximum), in z's memory."""
        top = self.ops.maximum(self.top, self.ops.row_max(z))
        scale = self.ops.exp(self.top - top)
        weights = self.ops.floored_exp(self.ops.subtract(z, top[:, None], out=z))
        self.total = self.total * scale + self.ops.row_sum(weights)
        self.top = top
        return scale, weights

    def lse(self):  # noqa: ANN201
        return self.top + self.ops.log(self.total)


# ----- per-model factors ---------------------------------------------------------------------

@dataclass(frozen=True)
class LogLikFactors:
    """One model's centred log-likelihoods as ell_c = inputs @ labels^T (F and G above);
    labels_gram = labels @ inputs^T inputs / (N - 1), whose row y . labels[y'] is
    Cov(ell(y), ell(y')); var[y] = Var over inputs of ell(y)."""

    inputs: np.ndarray
    labels: np.ndarray
    labels_gram: np.ndarray
    var: np.ndarray


def loglik_factors(f: np.ndarray, g: np.ndarray, lse: np.ndarray) -> LogLikFactors:
    inputs = np.concatenate([f - f.mean(axis=0), -(lse - lse.mean())[:, None]], axis=1)
    labels = np.concatenate([g, np.ones((g.shape[0], 1))], axis=1)
    gram = inputs.T @ inputs / (inputs.shape[0] - 1)
    labels_gram = labels @ gram
    var = np.einsum("ij,ij->i", labels_gram, labels)
    return LogLikFactors(inputs, labels, labels_gram, var)


def label_covariance(g_1: np.ndarray, g_2: np.ndarray) -> np.ndarray:
    """Cov over labels (ddof 1) of g_1's and g_2's coordinates (M x M), summed over blocks of
    COV_LABELS centred labels. A model's own (g_2 is g_1) is c^T c of each block, which numpy
    computes as a symmetric product: exactly symmetric."""
    mean_1 = g_1.mean(axis=0)
    mean_2 = mean_1 if g_2 is g_1 else g_2.mean(axis=0)
    total = np.zeros((g_1.shape[1], g_2.shape[1]))
    for block in _blocks(g_1.shape[0], COV_LABELS):
        c_1 = g_1[block] - mean_1
        total += c_1.T @ (c_1 if g_2 is g_1 else g_2[block] - mean_2)
    return total / (g_1.shape[0] - 1)


# ----- d_LLV, label side -----------------------------------------------------------------------

@dataclass(frozen=True)
class LowRankLabelSide:
    y_pivot: int
    y_leave_out: int
    terms: LabelTerms
    scale_1: np.ndarray  # the chosen pivot's log-odds scales (m_SVD_f standardises by them)
    scale_2: np.ndarray
    pivots_searched: int
    proven: bool  # the pivot is the exact search's (every pivot bounded or evaluated)
    f_cross: np.ndarray  # Cov(f1, f2), M1 x M2: m_SVD_f's cross-correlations
    near_tied: tuple[list[tuple[int, int, float]], ...] = ([], [])  # each model's, pivot's row


# The exact pivot search costs K^2 (M+1) per model (8e12 operations at GPT-2's size). Above
# max_pivots labels, "max" runs a branch and bound (PivotSearch), "mean" a seeded sample. Unproven,
# t1 and d_LLV come out at or above the exact minimum (a PivotSampleWarning; how far:
# benchmarks/measures_sweep.py --pivot-error, docs/measures.md).
def pivot_sample(num_labels: int, max_pivots: int, seed: int) -> np.ndarray:
    """Every label when there are at most max_pivots, else a seeded sample of them, sorted."""
    if num_labels <= max_pivots:
        return np.arange(num_labels)
    rng = np.random.default_rng([PIVOT_STREAM, seed])
    return np.sort(rng.choice(num_labels, max_pivots, replace=False))


def low_rank_label_side(a: LogLikFactors, b: LogLikFactors, dist_type: str, max_pivots: int,
                        seed: int, given: tuple[int, int] | None = None,
                        device: str | None = None) -> LowRankLabelSide:
    """The pivot and left-out label minimising t1 over the pivot sample (or the `given` pair),
    with t1, t3 and the pivot's scales, from the two models' factors; the pivot rows on
    `device` with torch when given (DevicePivotSearch), the chosen row's terms here."""
    y_pivot, y_leave_out = given if given is not None else (None, None)
    k = a.labels.shape[0]
    rows_terms = PivotRows(a, b)
    searched, proven = k, True
    if y_pivot is None:
        search = (PivotSearch(rows_terms, k, dist_type) if device is None
                  else DevicePivotSearch(rows_terms, k, dist_type, device))
        if k <= max_pivots:
            search.evaluate(np.arange(k))
        elif dist_type == "max":
            proven = search.bounded(max_pivots, seed)
        else:
            search.evaluate(pivot_sample(k, max_pivots, seed))
            proven = False
        y_pivot, searched = search.best_pivot(), search.evaluated
    rows = np.array([y_pivot])
    a_term, b_term, s1, s2 = rows_terms(rows)
    if y_leave_out is None:
        objective = _nan_to_inf(_objective_from_terms(a_term, b_term, dist_type, rows)[0])
        y_leave_out = first_tied(objective, LOW_RANK_TIE)
        if y_leave_out is None:  # every left-out label degenerate: the terms will be NaN
            y_leave_out = 1 if y_pivot == 0 else 0
    terms = terms_of_row(a_term[0], b_term[0], s1[0], s2[0], y_pivot, y_leave_out, dist_type)
    return LowRankLabelSide(y_pivot, y_leave_out, terms, s1[0], s2[0], searched, proven,
                            rows_terms.cross[:-1, :-1],  # Cov(f1, f2): M1 x M2
                            (near_tied_in_row(a, y_pivot), near_tied_in_row(b, y_pivot)))


def near_tied_in_row(factors: LogLikFactors, pivot: int) -> list[tuple[int, int, float]]:
    """llv.near_in_row from one model's factors."""
    var_sum = factors.var + factors.var[pivot]
    var = np.clip(var_sum - 2.0 * (factors.labels_gram[pivot] @ factors.labels.T), 0.0, None)
    return near_in_row(var, factors.var, pivot)


class PivotRows:
    """A, B, s1, s2 of pivot rows (over every label, or the labels `cols`) of a pair."""

    def __init__(self, a: LogLikFactors, b: LogLikFactors) -> None:
        self.a, self.b = a, b
        self.cross = a.inputs.T @ b.inputs / (a.inputs.shape[0] - 1)
        self.x12 = np.empty(a.labels.shape[0])  # Cov(ell1(y), ell2(y)), COV_LABELS at a time
        for block in _blocks(len(self.x12), COV_LABELS):
            self.x12[block] = np.einsum("ij,ij->i", a.labels[block] @ self.cross, b.labels[block])

    def __call__(self, rows: np.ndarray, cols: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        a, b = self.a, self.b
        la, lb = (a.labels, b.labels) if cols is None else (a.labels[cols], b.labels[cols])
        return pivot_row_terms(a.var, b.var, self.x12, a.labels_gram[rows] @ la.T,
                               b.labels_gram[rows] @ lb.T, rows, cols)


class PivotSearch:
    """The minimum over pivots a of min_b T[a, b], pivot rows computed PIVOT_BLOCK at a time.

    `bounded` finds it exactly without every row when dist_type is "max": T[a, b] is a max
    over labels y, so over any label subset Y0 it is at least the second largest of
    max(A[a, y], B[a, y]) for y in Y0 (b can remove one). With Y0 the labels that dominate a
    probe of pivots, that bound is cheap for every pivot (K x |Y0|); pivots are then taken
    in increasing bound until the bound passes the best row found: every pivot left can
    only be worse. Past `max_pivots` rows it stops with an estimate.
    """

    def __init__(self, rows_terms, k: int, dist_type: str) -> None:  # noqa: ANN001
        self.rows_terms, self.k, self.dist_type = rows_terms, k, dist_type
        self.lowest = np.full(k, np.inf)  # each evaluated pivot's row minimum
        self.done = np.zeros(k, dtype=bool)

    @property
    def evaluated(self) -> int:
        return int(self.done.sum())

    def evaluate(self, pivots: np.ndarray) -> np.ndarray:
        """Row minima of these pivots; returns max(A, B) of their rows (for the probe)."""
        worst = []
        for block in _blocks(len(pivots), PIVOT_BLOCK):
            rows = pivots[block]
            a_term, b_term, _, _ = self.rows_terms(rows)
            self.lowest[rows] = _nan_to_inf(
                _objective_from_terms(a_term, b_term, self.dist_type, rows)).min(axis=1)
            self.done[rows] = True
            worst.append(np.fmax(a_term, b_term).max(axis=0))
        return np.max(worst, axis=0) if worst else np.zeros(self.k)

    def bounded(self, max_pivots: int, seed: int) -> bool:
        """Branch and bound (dist_type "max"); True when the minimum is proven."""
        probe = pivot_sample(self.k, min(PROBE_PIVOTS, max_pivots), seed)
        dominant = self.evaluate(probe)
        dominant[np.isnan(dominant)] = -np.inf
        bound = self.lower_bounds(np.sort(np.argsort(-dominant, kind="stable")[:BOUND_LABELS]))
        order = np.argsort(bound, kind="stable")
        order = order[~self.done[order]]
        for block in _blocks(len(order), PIVOT_BLOCK):
            best = self.lowest.min()
            if bound[order[block.start]] > best + BOUND_SLACK * (1.0 + abs(best)):
                return True  # every pivot left is bounded above the best row
            if self.evaluated >= max_pivots:
                return False
            self.evaluate(order[block])
        return True

    def lower_bounds(self, cols: np.ndarray) -> np.ndarray:
        """For every pivot, a lower bound of its row minimum: the second largest of
        max(A, B) over the labels `cols` (NaN labels, and the pivot itself, left out)."""
        bound = np.empty(self.k)
        for block in _blocks(self.k, BOUND_ROWS):
            rows = np.arange(block.start, block.stop)
            a_term, b_term, _, _ = self.rows_terms(rows, cols)
            values = np.fmax(a_term, b_term)
            values[np.isnan(values) | (rows[:, None] == cols[None, :])] = -np.inf
            bound[block] = -np.partition(-values, 1, axis=1)[:, 1]
        return bound

    def best_pivot(self) -> int:
        """The smallest pivot whose row minimum ties the lowest (llv.first_tied at
        LOW_RANK_TIE; pivots not evaluated hold +inf), 0 when no row is finite."""
        best = first_tied(self.lowest, LOW_RANK_TIE)
        return 0 if best is None else best


class DevicePivotSearch(PivotSearch):
    """PivotSearch with the pivot rows computed and reduced on a torch device in float64: the
    formulas of llv.pivot_row_terms and llv._objective_from_terms, NaN rules included
    (tests/test_measures_low_rank.py holds the two searches equal)."""

    def __init__(self, rows_terms: PivotRows, k: int, dist_type: str, device: str) -> None:
        super().__init__(rows_terms, k, dist_type)
        torch = self.torch = _torch()
        self.device = torch.device(device)
        a, b = rows_terms.a, rows_terms.b

        def put(array: np.ndarray):  # noqa: ANN202
            return torch.as_tensor(np.ascontiguousarray(array, dtype=np.float64),
                                   device=self.device)

        self.var = (put(a.var), put(b.var))
        self.x12 = put(rows_terms.x12)
        self.labels = (put(a.labels), put(b.labels))
        self.labels_gram = (put(a.labels_gram), put(b.labels_gram))
        self.block = DEVICE_PIVOT_BLOCK if self.device.type == "cuda" else PIVOT_BLOCK

    def _index(self, idx: np.ndarray):  # noqa: ANN202
        return self.torch.as_tensor(np.asarray(idx, dtype=np.int64), device=self.device)

    def terms(self, rows: np.ndarray, cols: np.ndarray | None = None) -> tuple:
        """A and B (rows x K, or rows x len(cols)) on the device: llv.pivot_row_terms."""
        t, r = self.torch, self._index(rows)
        (d1, d2), x12 = self.var, self.x12
        (la, lb), (ga, gb) = self.labels, self.labels_gram
        if cols is not None:
            c = self._index(cols)
            e1, e2, ex, la, lb = d1[c], d2[c], x12[c], la[c], lb[c]
        else:
            e1, e2, ex = d1, d2, x12
        s1 = self._scale(e1[None, :] + d1[r, None], ga[r] @ la.T)
        s2 = self._scale(e2[None, :] + d2[r, None], gb[r] @ lb.T)
        inv1, inv2 = 1.0 / s1, 1.0 / s2
        a_sq = e1[None, :] * inv1**2 + e2[None, :] * inv2**2 - 2.0 * ex[None, :] * inv1 * inv2
        b_sq = (d1[r, None] * inv1**2 + d2[r, None] * inv2**2
                - 2.0 * x12[r, None] * inv1 * inv2)
        degenerate = (s1 == 0) | (s2 == 0)
        nan = t.tensor(float("nan"), dtype=t.float64, device=self.device)
        a_term = t.where(degenerate, nan, t.sqrt(t.clamp(a_sq, min=0.0)))
        b_term = t.where(degenerate, nan, t.sqrt(t.clamp(b_sq, min=0.0)))
        return a_term, b_term

    def _scale(self, var_sum, cov):  # noqa: ANN001, ANN202
        """llv._pivot_scale on the device: the sd, exactly 0 where llv.zero_variance holds."""
        var = self.torch.clamp(var_sum - 2.0 * cov, min=0.0)
        return self.torch.where(var <= ZERO_VARIANCE_RTOL * var_sum, 0.0, self.torch.sqrt(var))

    def row_minima(self, a_term, b_term, rows: np.ndarray):  # noqa: ANN001, ANN201
        """min over left-out labels b of T[a, b] for each pivot row a (NaN as +inf), as
        _nan_to_inf(_objective_from_terms(...)).min(axis=1)."""
        t, inf = self.torch, float("inf")
        at, r = t.arange(len(rows), device=self.device), self._index(rows)
        if self.dist_type == "max":
            values = t.maximum(a_term, b_term)
            values[at, r] = -inf  # y = pivot is never used
            nan = t.isnan(values)
            values = values.masked_fill(nan, -inf)
            count = nan.sum(dim=1)
            top = values.topk(2, dim=1).values
            # no NaN: leaving out the largest leaves the second; one NaN label: only leaving
            # it out gives a number, the largest of the rest; two or more: none
            low = t.where(count == 0, top[:, 1], t.where(count == 1, top[:, 0], inf))
        else:
            values = a_term + b_term
            values[at, r] = 0.0
            nan = t.isnan(values)
            values = values.masked_fill(nan, 0.0)
            count, total = nan.sum(dim=1), values.sum(dim=1)
            values[at, r] = -inf  # b = pivot is not a left-out label
            scale = 2.0 * (self.k - 2)
            low = t.where(count == 0, (total - values.max(dim=1).values) / scale,
                          t.where(count == 1, total / scale, inf))
        return t.where(t.isnan(low), inf, low)

    def evaluate(self, pivots: np.ndarray) -> np.ndarray:
        worst = None
        for block in _blocks(len(pivots), self.block):
            rows = pivots[block]
            a_term, b_term = self.terms(rows)
            self.lowest[rows] = to_host(self.row_minima(a_term, b_term, rows), np.float64)
            self.done[rows] = True
            top = self.torch.fmax(a_term, b_term).amax(dim=0)
            worst = top if worst is None else self.torch.maximum(worst, top)
        return np.zeros(self.k) if worst is None else to_host(worst, np.float64)

    def lower_bounds(self, cols: np.ndarray) -> np.ndarray:
        bound = np.empty(self.k)
        c = self._index(cols)
        for block in _blocks(self.k, BOUND_ROWS):
            rows = np.arange(block.start, block.stop)
            a_term, b_term = self.terms(rows, cols)
            values = self.torch.fmax(a_term, b_term)
            values = values.masked_fill(self.torch.isnan(values)
                                        | (self._index(rows)[:, None] == c[None, :]),
                                        float("-inf"))
            bound[block] = to_host(values.topk(2, dim=1).values[:, 1], np.float64)
        return bound


def low_rank_m_svd_f(g1: np.ndarray, g2: np.ndarray, f_cross: np.ndarray,
                     side: LowRankLabelSide, sets: np.ndarray) -> np.ndarray:
    """m_SVD_f for every label set, from the log-odds' low-rank form (paper Def. 4.5):
    Cov(ell_1(y) - ell_1(a), ell_2(y') - ell_2(a)) = (g1_y - g1_a)^T C (g2_y' - g2_a) with
    C = Cov(f1, f2) (M x M), so each set's M x M cross-correlation block is built alone."""
    k, m = g1.shape
    a, b = side.y_pivot, side.y_leave_out
    rest = np.array([y for y in range(k) if y not in (a, b)])
    out = np.empty(len(sets))
    with np.errstate(divide="ignore", invalid="ignore"):
        # a zero scale (a label tied with the pivot: snapped, llv.snap_zero_sd) gives NaN
        inv_1 = np.where(side.scale_1 == 0, np.nan, 1.0 / side.scale_1)
        inv_2 = np.where(side.scale_2 == 0, np.nan, 1.0 / side.scale_2)
        for block in _blocks(len(sets), max(1, BLOCK_ELEMENTS // (m * m))):
            labels = rest[sets[block]]  # (sets, M) label indices
            h1 = (g1[labels] - g1[a]) * inv_1[labels][..., None]
            h2 = (g2[labels] - g2[a]) * inv_2[labels][..., None]
            out[block] = mean_singular_values(h1 @ f_cross @ h2.transpose(0, 2, 1))
    return out


# ----- d_LLV, input side, and d_logit -----------------------------------------------------------

def low_rank_input_side(f1: np.ndarray, f2: np.ndarray, cov_11: np.ndarray, cov_22: np.ndarray,
                        cov_12: np.ndarray, rows: np.ndarray, dist_type: str) -> InputTerms:
    """The input side's scan over candidate sets, its variances over labels as quadratic forms
    in g's covariances cov_mn (M x M, over labels): lse(x) is one number per input and drops.
    A tau is zero where zero to within rounding (llv.zero_variance), as on the exact path."""
    s, width = rows.shape[0], rows.shape[1] - 1
    tau_1, tau_2, a_term, b_term = (np.empty((s, width)) for _ in range(4))
    step = max(1, BLOCK_ELEMENTS // (width * f1.shape[1]))
    near = 0
    for block in _blocks(s, step):
        x1, x2 = f1[rows[block]], f2[rows[block]]  # (sets, M+1, M)
        sum_1, sum_2 = _input_var_sum(x1, cov_11), _input_var_sum(x2, cov_22)
        raw_1, raw_2 = _sd(x1[:, 1:] - x1[:, :1], cov_11), _sd(x2[:, 1:] - x2[:, :1], cov_22)
        near += int(near_zero_variance(raw_1**2, sum_1).sum()
                    + near_zero_variance(raw_2**2, sum_2).sum())
        tau_1[block], tau_2[block] = snap_zero_sd(raw_1, sum_1), snap_zero_sd(raw_2, sum_2)
        with np.errstate(divide="ignore", invalid="ignore"):
            u1, u2 = x1[:, 1:] / tau_1[block][..., None], x2[:, 1:] / tau_2[block][..., None]
            v1, v2 = x1[:, :1] / tau_1[block][..., None], x2[:, :1] / tau_2[block][..., None]
        a_term[block] = _sd_difference(u1, u2, cov_11, cov_22, cov_12)
        b_term[block] = _sd_difference(v1, v2, cov_11, cov_22, cov_12)
    return scan_input_sets(tau_1, tau_2, a_term, b_term, dist_type, near_zero=near)


def _input_var_sum(x: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Var over labels of ell(., x_j) + of ell(., x_0) for each set's inputs x (sets, M+1, M):
    the scale a tau's variance is zero against."""
    var = _quadratic(x, cov, x)
    return var[:, 1:] + var[:, :1]


def low_rank_m_svd_g(f1: np.ndarray, f2: np.ndarray, cov_11: np.ndarray, cov_22: np.ndarray,
                     cov_12: np.ndarray, input_set: np.ndarray) -> float:
    """m_SVD of the unembeddings on one diversity set (paper Def. 4.5) from g's covariances:
    W_m[y, j] = (f_m(x_j) - f_m(x_0))^T g_m(y), so Cov over labels of W_1 and W_2 is
    D_1 cov_12 D_2^T (M x M), never the K x M matrices."""
    idx = np.asarray(input_set, dtype=np.intp)
    d1, d2 = f1[idx[1:]] - f1[idx[:1]], f2[idx[1:]] - f2[idx[:1]]
    sd1 = snap_zero_sd(_sd(d1, cov_11), _input_var_sum(f1[idx][None], cov_11)[0])
    sd2 = snap_zero_sd(_sd(d2, cov_22), _input_var_sum(f2[idx][None], cov_22)[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (d1 @ cov_12 @ d2.T) / np.outer(sd1, sd2)
        cross = np.where((sd1[:, None] > 0) & (sd2[None, :] > 0), cross, np.nan)
    return float(mean_singular_values(cross))


def _quadratic(u: np.ndarray, cov: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...i->...", u @ cov, v)


def _sd(u: np.ndarray, cov: np.ndarray) -> np.ndarray:
    return np.sqrt(np.clip(_quadratic(u, cov, u), 0.0, None))


def _sd_difference(u1: np.ndarray, u2: np.ndarray, cov_11: np.ndarray, cov_22: np.ndarray,
                   cov_12: np.ndarray) -> np.ndarray:
    """sd over labels of u1^T g1(y) - u2^T g2(y)."""
    with np.errstate(invalid="ignore"):
        var = (_quadratic(u1, cov_11, u1) + _quadratic(u2, cov_22, u2)
               - 2.0 * _quadratic(u1, cov_12, u2))
    return np.sqrt(np.clip(var, 0.0, None))


def low_rank_d_logit(f1: np.ndarray, f2: np.ndarray, cov_11: np.ndarray, cov_22: np.ndarray,
                     cov_12: np.ndarray, num_labels: int) -> float:
    """d_logit = sqrt(E_x sum_y (clr_1 - clr_2)^2) with clr_m = f_m^T (g_m(y) - mean g_m)."""
    per_input = (num_labels - 1) * (_quadratic(f1, cov_11, f1) + _quadratic(f2, cov_22, f2)
                                    - 2.0 * _quadratic(f1, cov_12, f2))
    return float(np.sqrt(max(float(per_input.mean()), 0.0)))
