"""compare(): every measure of the paper for one pair of models, with per-model work cached.

The per-model work lives in a PreparedModel (prepared.py), built once per model and reused for
every pair it is part of; this module does the pair's work, only for the measures asked for.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np

from ..io.validation import InputError
from .alignment import alignment_measures
from .cache import prepared_cache
from .cca import (
    MeanCCA,
    check_precision,
    covariance_cca_over_rank,
    mean_cca_over_rank,
    resolve_precision,
    rounding_level,
)
from .conventions import ALIGNMENT_MEASURES, PRH_CONVENTIONS, AlignmentConventions
from .extra import d_logit_from_clr
from .llv import (
    PivotTerms,
    check_combine,
    check_dist_type,
    check_label_pair,
    choose_pivot_and_leave_out,
    combine_terms,
    input_candidates,
    input_terms,
    knife_edge_notes,
    label_terms,
    pivot_objective,
    pivot_terms,
)
from .loglik import mean_kl
from .low_rank import (
    BLOCK_ELEMENTS,
    MAX_PIVOTS,
    PIVOT_BLOCK,
    STREAM_LABELS,
    STREAM_ROWS,
    LowRankLabelSide,
    check_method,
    compute_device,
    default_label_sets,
    label_covariance,
    low_rank_d_logit,
    low_rank_input_side,
    low_rank_label_side,
    low_rank_m_svd_f,
    low_rank_m_svd_g,
    streamed_kl,
    use_low_rank,
)
from .memory import low_rank_pair_bytes, pair_bytes, require
from .null import NullSettings, null_settings, pair_null
from .null_batch import batched_null
from .prepared import PreparedModel
from .sample_rules import sample_notes
from .selection import (
    INPUT_SIDE,
    KNN_MEASURES,
    LABEL_SIDE,
    MCCA_F,
    MCCA_G,
    RESULT_KEYS,
    SVD_F,
    SVD_G,
    keys_for,
    select_measures,
)
from .svd import SET_CHUNK, d_fg, label_set_count, label_sets, m_svd_f, m_svd_g

# compare's own names; what it imports is imported from its own module wherever else it is used
__all__ = [
    "CompareSettings",
    "DegenerateRepresentationWarning",
    "PivotSampleWarning",
    "SampleSizeWarning",
    "compare",
    "compare_prepared",
    "compare_with_settings",
]


class DegenerateRepresentationWarning(UserWarning):
    """A measure is undefined for this pair (collapsed embedding, tied unembeddings, NaN/inf)."""


class SampleSizeWarning(UserWarning):
    """Too few inputs or labels for a measure's estimate to be trusted (sample_rules)."""


class PivotSampleWarning(UserWarning):
    """d_LLV's pivot label was searched among a sample of pivots, not proven the minimum."""


@dataclass(frozen=True)
class CompareSettings:
    """How a pair is compared: the keywords of `compare` and `compare_prepared`, checked once
    on construction. docs/measures.md ("compare's keywords") says what each field does."""

    num_samples: int | None = None  # candidate diversity sets; None: 200, or N // (M+1)
    lam: float = 1e-5  # the weight of d_LLV's scale terms t3 and t4
    seed: int = 0  # draws the candidate sets, sampled label sets and sampled pivots
    input_set: Any = None  # a diversity set [x0, x1..xM] to use instead of the scan
    y_pivot: int | None = None  # with y_leave_out: labels to use instead of the search
    y_leave_out: int | None = None
    dist_type: str = "max"  # t1, t3 and t4 over labels or inputs: "max" or "mean"
    sum_or_max: str = "max"  # d_LLV from its terms: "max" (the paper's) or "sum"
    max_label_sets: int | None = None  # m_SVD_f's label sets above which it samples
    measures: Iterable[str] | str | None = None  # RESULT_KEYS names; None: all (a frozenset)
    method: str = "auto"  # "exact", "low_rank" or "auto" (low_rank above 1,024 labels)
    max_pivots: int = MAX_PIVOTS  # pivot rows the low-rank search computes at most
    outlier_quantile: float = 1.0  # these four: how the f-side alignment measures read f
    unit_rows: bool = False
    svcca: str = "variance"
    svcca_components: int = PRH_CONVENTIONS["svcca_components"]
    precision: str = "auto"  # the precision m_CCA's ranks are taken at
    device: str = "cpu"  # where the low-rank path runs: "cpu", "auto" or a torch device
    null: NullSettings | Mapping[str, Any] | None = None  # a permutation null; None: none

    def __post_init__(self) -> None:
        check_dist_type(self.dist_type)
        check_precision(self.precision)
        check_combine(self.sum_or_max)
        if (self.y_pivot is None) != (self.y_leave_out is None):
            raise ValueError("give both y_pivot and y_leave_out, or neither")
        for name in ("max_label_sets", "num_samples", "max_pivots"):
            value = getattr(self, name)
            if value is None and name != "max_pivots":
                continue
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.lam, bool) or not isinstance(self.lam, int | float | np.number) \
                or not 0 <= self.lam < np.inf:
            raise ValueError(f"lam, the weight of d_LLV's scale terms, must be a finite number "
                             f">= 0, got {self.lam!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer) \
                or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        check_method(self.method)
        compute_device(self.device)  # rejects an unknown device, or CUDA where there is none
        object.__setattr__(self, "measures", select_measures(self.measures))
        object.__setattr__(self, "null", null_settings(self.null))
        _ = self.conventions  # rejects a bad alignment option here, naming it

    @property
    def selected(self) -> frozenset[str]:
        assert isinstance(self.measures, frozenset)
        return self.measures

    @property
    def conventions(self) -> AlignmentConventions:
        return AlignmentConventions(self.outlier_quantile, self.unit_rows, self.svcca,
                                    self.svcca_components)


_F = TypeVar("_F", bound=Callable[..., Any])


def _takes_settings(func: _F) -> _F:
    """Show CompareSettings' fields as the keyword-only parameters of `func` (help, inspect)."""
    sig = inspect.signature(func)
    positional = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    keywords = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                                  annotation=f.type) for f in fields(CompareSettings)]
    func.__signature__ = sig.replace(parameters=[*positional, *keywords])  # type: ignore[attr-defined]
    return func


@lru_cache(maxsize=64)
def _cached(make: Callable[..., np.ndarray], *args: int) -> np.ndarray:
    """make(*args) (input_candidates, label_sets), made read-only and kept for reuse."""
    out = make(*args)
    out.setflags(write=False)
    return out


def _low_rank(m1: PreparedModel, s: CompareSettings) -> bool:
    return use_low_rank(s.method, m1.num_labels)


def _label_set_limit(m1: PreparedModel, s: CompareSettings) -> int:
    if s.max_label_sets is not None:
        return int(s.max_label_sets)
    return default_label_sets(m1.rep_dim, _low_rank(m1, s))


def _label_set_info(m1: PreparedModel, s: CompareSettings,
                    same_width: bool = True) -> dict[str, Any]:
    """How many label sets m_SVD_f runs over, and whether they are a sample of all of them
    (none between models of different widths: m_SVD_f needs one M)."""
    if not same_width:
        return {"m_svd_label_sets": 0, "d_fg_estimate": False}
    count, limit = label_set_count(m1.num_labels, m1.rep_dim), _label_set_limit(m1, s)
    return {"m_svd_label_sets": min(count, limit), "d_fg_estimate": count > limit}


# the measures that need m_SVD_f's label sets, and so K - 2 >= M
LABEL_SETS = SVD_F | {"m_svd_label_sets", "d_fg_estimate"}
DEFAULT_SAMPLES = 200  # candidate diversity sets, as the original's d_prob


def candidate_count(s: CompareSettings, n_inputs: int, rep_dim: int) -> int:
    """num_samples, or by default 200, fewer when N < 200 (M+1) (disjoint sets of M+1 inputs)."""
    if s.num_samples is not None:
        return int(s.num_samples)
    return max(1, min(DEFAULT_SAMPLES, n_inputs // (rep_dim + 1)))


def _check_pair(m1: PreparedModel, m2: PreparedModel, want: frozenset[str]) -> None:
    """The same N inputs and K labels; the widths M may differ (then m_SVD and d_fg are NaN)."""
    if m1.n_inputs != m2.n_inputs:
        raise ValueError(f"embeddings must be of the same inputs: {m1.f.shape} vs {m2.f.shape} "
                         "(N x M)")
    if m1.num_labels != m2.num_labels:
        raise ValueError(f"unembeddings must be of the same labels: {m1.g.shape} vs "
                         f"{m2.g.shape} (K x M)")
    if want & LABEL_SETS and m1.rep_dim == m2.rep_dim:
        label_set_count(m1.num_labels, m1.rep_dim)  # raises if K - 2 < M: only m_SVD_f needs it


def pair_width(m1: PreparedModel, m2: PreparedModel) -> int:
    """The M of a pair: the larger width (d_LLV's diversity sets hold M + 1 inputs, enough for
    either model's f to span its own width)."""
    return max(m1.rep_dim, m2.rep_dim)


def _nan_result(m1: PreparedModel, m2: PreparedModel, reason: str, keys: tuple[str, ...],
                s: CompareSettings) -> dict[str, Any]:
    """Every measure NaN (indices -1), with the reason: a model's representations are unusable."""
    info = (_label_set_info(m1, s, m1.rep_dim == m2.rep_dim) if s.selected & LABEL_SETS
            else {"m_svd_label_sets": 0})
    not_nan = {"y_pivot": -1, "y_leave_out": -1, "input_set": [-1] * (pair_width(m1, m2) + 1),
               "m_svd_f": [float("nan")] * max(1, info["m_svd_label_sets"]), **info,
               "mcca_f_components": 0, "mcca_g_components": 0, "warning": reason}
    return {key: not_nan.get(key, float("nan")) for key in keys}


def _any_nan(values: Iterable[Any]) -> bool:
    return any(np.isnan(v).any() for v in values)


@_takes_settings
def compare_prepared(m1: PreparedModel, m2: PreparedModel, **settings: Any) -> dict[str, Any]:
    """All measures between two prepared models; see `compare` for the meaning of the arguments."""
    return compare_with_settings(m1, m2, CompareSettings(**settings))


def compare_with_settings(m1: PreparedModel, m2: PreparedModel,
                          settings: CompareSettings) -> dict[str, Any]:
    """`compare_prepared` with its keywords already gathered in a CompareSettings."""
    s, want = settings, settings.selected
    _check_pair(m1, m2, want)
    keys = keys_for(want)
    problems = [f"model {i}: {m.problem}" for i, m in ((1, m1), (2, m2)) if m.problem]
    if problems:
        reason = "; ".join(problems)
        warnings.warn(reason, DegenerateRepresentationWarning, stacklevel=3)
        nan_null = (pair_null(m1, m2, {}, s.null, _draws(s), want)[0]
                    if isinstance(s.null, NullSettings) else {})
        return {**_nan_result(m1, m2, reason, keys, s), **nan_null}

    n, k, m = m1.n_inputs, m1.num_labels, pair_width(m1, m2)
    same_width = m1.rep_dim == m2.rep_dim
    n_sets = _label_set_info(m1, s, same_width)["m_svd_label_sets"] if want & LABEL_SETS else 0
    low_rank = _low_rank(m1, s)
    if low_rank:
        nbytes = low_rank_pair_bytes(n, k, m, STREAM_ROWS * STREAM_LABELS, PIVOT_BLOCK,
                                     BLOCK_ELEMENTS)
    else:
        nbytes = pair_bytes(n, k, m, bool(want & LABEL_SIDE), n_sets, SET_CHUNK,
                            bool(want & (KNN_MEASURES | {"cknna_f"})))
    require(nbytes, f"comparing models of N={n} inputs, K={k} labels, M={m} ({n_sets} label sets)")
    reasons: list[str] = []
    # the low-rank input side and d_logit read Cov over labels of g1 and g2: once per pair
    g_cross = (label_covariance(m1.g, m2.g)
               if low_rank and want & (INPUT_SIDE | {"d_logit"} | MCCA_G) else None)
    values, sides = _distribution_measures(m1, m2, s, reasons, g_cross)
    if want & LABEL_SETS:
        values.update(_label_set_info(m1, s, same_width))
    values.update(_svd_measures(m1, m2, s, sides, reasons, g_cross))
    for side, asked in (("f", MCCA_F), ("g", MCCA_G)):
        if want & asked:
            mcca = _mean_cca(m1, m2, side, s.precision, g_cross)
            values[f"mcca_{side}"], values[f"mcca_{side}_components"] = mcca.value, mcca.components
            reasons += [f"m_CCA({side}): {mcca.reason}"] * bool(mcca.reason)
    values.update(extra_measures(m1, m2, want, s.conventions, reasons, g_cross))

    null: dict[str, float] = {}
    if isinstance(s.null, NullSettings):
        null, notes = pair_null(m1, m2, values, s.null, _draws(s), want, _batch(m1, m2, s))
        reasons += notes
    reason = "; ".join(reasons)
    if reason:
        warnings.warn(reason, DegenerateRepresentationWarning, stacklevel=3)
    values["warning"] = reason
    return {**_as_result(values, keys), **null}


def _batch(m1: PreparedModel, m2: PreparedModel, s: CompareSettings
           ) -> Callable[[str, np.ndarray], np.ndarray | None]:
    """A permutation null's draws of one measure at once, where it has a batched form."""
    return lambda measure, orders: batched_null(m1, m2, measure, orders, s.precision,
                                                s.conventions, _low_rank(m1, s))


def _draws(s: CompareSettings) -> Callable[[PreparedModel, PreparedModel, frozenset[str]],
                                           dict[str, Any]]:
    """A permutation null's comparison of one draw: these measures only, no null of its own,
    no warnings (a reordered pair is often degenerate in ways the observed one is not)."""
    settings: dict[frozenset[str], CompareSettings] = {}

    def evaluate(m1: PreparedModel, m2: PreparedModel, measures: frozenset[str]) -> dict[str, Any]:
        if measures not in settings:
            settings[measures] = replace(s, measures=measures, null=None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compare_with_settings(m1, m2, settings[measures])

    return evaluate


def _mean_cca(m1: PreparedModel, m2: PreparedModel, side: str, precision: str,
              g_cross: np.ndarray | None) -> MeanCCA:
    """m_CCA of f or g over the directions both models vary in, their ranks taken at the
    precision each was computed in (cca.py): a final LayerNorm's f has M - 1."""
    coordinates = min(getattr(m1, f"{side}_varying"), getattr(m2, f"{side}_varying"))
    if side == "g" and g_cross is not None:  # K x M bases cost more than the KL
        used = [resolve_precision(precision, model.g_rounding[1]) for model in (m1, m2)]
        floors = [rounding_level(model.g_rounding[0], p) ** 2 / (model.num_labels - 1)
                  for model, p in zip((m1, m2), used, strict=True)]
        return covariance_cca_over_rank(m1.g_cov, m2.g_cov, g_cross, coordinates, *floors,
                                        precision=_precisions_text(used))
    spectra = [getattr(model, f"{side}_spectrum") for model in (m1, m2)]
    used = [resolve_precision(precision, spectrum.detected) for spectrum in spectra]
    return mean_cca_over_rank(spectra[0].basis(precision), spectra[1].basis(precision),
                              coordinates, _precisions_text(used))


def _precisions_text(used: list[str]) -> str:
    return used[0] if used[0] == used[1] else f"{used[0]} and {used[1]}"


@dataclass(frozen=True)
class LabelSide:
    """d_LLV's label side of a pair: the pivot and left-out label, and t1, t3 at them."""

    y_pivot: int
    y_leave_out: int
    t1: float
    t3: float
    row: PivotTerms | LowRankLabelSide  # the pivot's row of terms, as m_SVD_f reads it
    near_tied: tuple[list[tuple[int, int, float]], ...]  # labels nearly tied with the pivot
    proven: bool = True  # False: the low-rank search stopped at max_pivots (t1 an estimate)

    def values(self) -> dict[str, Any]:
        return {"y_pivot": self.y_pivot, "y_leave_out": self.y_leave_out, "t1": self.t1,
                "t3": self.t3}


@dataclass(frozen=True)
class InputSide:
    """d_LLV's input side of a pair: the chosen diversity set (M+1 inputs), and t2, t4."""

    input_set: np.ndarray
    t2: float
    t4: float
    near_inputs: int = 0  # log-odds scales of the candidate sets on the knife edge of zero

    def values(self) -> dict[str, Any]:
        return {"input_set": self.input_set, "t2": self.t2, "t4": self.t4}


@dataclass(frozen=True)
class Sides:
    """What d_LLV chose for a pair, for m_SVD to read: None for a side not asked for."""

    labels: LabelSide | None = None
    inputs: InputSide | None = None


def _distribution_measures(m1: PreparedModel, m2: PreparedModel, s: CompareSettings,
                           reasons: list[str], g_cross: np.ndarray | None = None
                           ) -> tuple[dict[str, Any], Sides]:
    """KL, and d_LLV with its terms (paper Def. 4.4); the labels and inputs it chose."""
    want = s.selected
    values: dict[str, Any] = {}
    low_rank = _low_rank(m1, s)
    if "kl" in want and low_rank:  # one pass over the logits; both models keep their lse
        values["kl"], lse_1, lse_2 = streamed_kl(m1.f, m1.g, m2.f, m2.g,
                                                 compute_device(s.device))
        m1.keep_lse(lse_1)
        m2.keep_lse(lse_2)
    elif "kl" in want:
        values["kl"] = mean_kl(m1.loglik, m2.loglik)
    labels = ((_low_rank_label_side if low_rank else _label_side)(m1, m2, s)
              if want & LABEL_SIDE else None)
    if labels is not None:
        values.update(labels.values())
        if not labels.proven:
            reasons.append(pivot_note(s.max_pivots, m1.num_labels))
    inputs = _input_side(m1, m2, s, g_cross) if want & INPUT_SIDE else None
    if inputs is not None:
        values.update(inputs.values())
    reasons += knife_edge_notes(labels.near_tied if labels else (),
                                inputs.near_inputs if inputs else 0)
    if "d_llv" in want:
        values["d_llv"] = combine_terms(values["t1"], values["t2"], values["t3"], values["t4"],
                                        s.lam, s.sum_or_max)
    if _any_nan(values[key] for key in ("d_llv", "t1", "t2", "t3", "t4") if key in want):
        reasons.append("d_LLV undefined: a log-odds variance is zero (collapsed embedding or "
                       "tied unembeddings)")
    return values, Sides(labels, inputs)


def _svd_measures(m1: PreparedModel, m2: PreparedModel, s: CompareSettings, sides: Sides,
                  reasons: list[str], g_cross: np.ndarray | None = None) -> dict[str, Any]:
    """m_SVD of f over the label sets, of g on the chosen inputs, and d_{f,g} (paper Def. 4.5),
    at the pivot, left-out label and input set d_LLV chose (`sides`)."""
    want = s.selected
    if m1.rep_dim != m2.rep_dim:
        if want & (SVD_F | SVD_G):
            reasons.append(f"m_SVD and d_fg undefined: the models' widths differ (M = {m1.rep_dim} "
                           f"and {m2.rep_dim}), and m_SVD compares sets of M labels and M + 1 "
                           "inputs of one M")
        nan = float("nan")
        return {"m_svd_f": [nan], "m_svd_g": nan, "d_fg": nan}
    values: dict[str, Any] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        if want & SVD_F:
            assert sides.labels is not None  # SVD_F is part of LABEL_SIDE
            values["m_svd_f"] = _m_svd_f(m1, m2, s, sides.labels)
        if want & SVD_G:
            assert sides.inputs is not None  # SVD_G is part of INPUT_SIDE
            input_set = sides.inputs.input_set
            values["m_svd_g"] = (
                low_rank_m_svd_g(m1.f, m2.f, m1.g_cov, m2.g_cov, g_cross, input_set)
                if g_cross is not None  # the low-rank path
                else m_svd_g(m1.f, m1.g, m2.f, m2.g, input_set))
    if "d_fg" in want:
        values["d_fg"] = d_fg(values["m_svd_f"], values["m_svd_g"])
    if _any_nan(values[key] for key in ("m_svd_f", "m_svd_g", "d_fg") if key in want):
        reasons.append("d_SVD undefined: a standardised log-odds column has zero variance")
    return values


def _m_svd_f(m1: PreparedModel, m2: PreparedModel, s: CompareSettings,
             labels: LabelSide) -> np.ndarray:
    """m_SVD_f over the label sets, from the chosen pivot's row on either path."""
    sets = _cached(label_sets, m1.num_labels, m1.rep_dim, _label_set_limit(m1, s), int(s.seed))
    if isinstance(labels.row, LowRankLabelSide):
        return low_rank_m_svd_f(m1.g, m2.g, labels.row.f_cross, labels.row, sets)
    return m_svd_f(m1.loglik_centred, m2.loglik_centred, labels.y_pivot, labels.y_leave_out,
                   m1.rep_dim, labels.row, sets)


def _as_result(values: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The result dict in RESULT_KEYS order, plain Python numbers and lists."""
    out = {key: values[key] for key in keys}
    for key in ("y_pivot", "y_leave_out"):
        if key in out:
            out[key] = int(out[key])
    if "input_set" in out:
        out["input_set"] = [int(i) for i in out["input_set"]]
    if "m_svd_f" in out:
        out["m_svd_f"] = [float(v) for v in out["m_svd_f"]]
    return out


def _label_side(m1: PreparedModel, m2: PreparedModel, s: CompareSettings) -> LabelSide:
    """Pivot/leave-out by the covariance objective (unless given), terms recomputed exactly."""
    cache: dict[int, PivotTerms] = {}
    y_pivot, y_leave_out = s.y_pivot, s.y_leave_out
    if y_pivot is None:
        cov_12 = m1.loglik_centred.T @ m2.loglik_centred / (m1.n_inputs - 1)
        objective = pivot_objective(m1.loglik_cov, m2.loglik_cov, cov_12, s.dist_type)
        y_pivot, y_leave_out = choose_pivot_and_leave_out(objective, m1.loglik_centred,
                                                          m2.loglik_centred, s.dist_type, cache)
    assert y_leave_out is not None
    y_pivot, y_leave_out = int(y_pivot), int(y_leave_out)
    check_label_pair(m1.num_labels, y_pivot, y_leave_out)
    terms = cache.get(y_pivot) or pivot_terms(m1.loglik_centred, m2.loglik_centred, y_pivot)
    labels = label_terms(m1.loglik_centred, m2.loglik_centred, y_pivot, y_leave_out,
                         s.dist_type, terms)
    return LabelSide(y_pivot, y_leave_out, labels.t1, labels.t3, terms, terms.near_tied)


def _low_rank_label_side(m1: PreparedModel, m2: PreparedModel, s: CompareSettings) -> LabelSide:
    """The label side from the models' low-rank factors (pivots sampled above max_pivots)."""
    side = low_rank_label_side(m1.loglik_factors, m2.loglik_factors, s.dist_type,
                               int(s.max_pivots), int(s.seed),
                               None if s.y_pivot is None else (s.y_pivot, s.y_leave_out),
                               compute_device(s.device))
    if not side.proven:
        warnings.warn(pivot_note(s.max_pivots, m1.num_labels), PivotSampleWarning, stacklevel=4)
    return LabelSide(int(side.y_pivot), int(side.y_leave_out), side.terms.t1, side.terms.t3,
                     side, side.near_tied, side.proven)


def pivot_note(max_pivots: int, num_labels: int) -> str:
    """The words for a pivot search that stopped before proving its minimum."""
    return (f"d_LLV's pivot search stopped at max_pivots={max_pivots} of K={num_labels} "
            "labels before proving its minimum: t1 and d_LLV are estimates, at or above the "
            "exact values (raise max_pivots for more)")


def _input_side(m1: PreparedModel, m2: PreparedModel, s: CompareSettings,
                g_cross: np.ndarray | None = None) -> InputSide:
    """The given diversity set, or the scan over seeded candidates: t2, t4 and the set."""
    n, m = m1.n_inputs, pair_width(m1, m2)
    if s.input_set is None:
        rows = _cached(input_candidates, n, m, candidate_count(s, n, m), int(s.seed))
    else:
        rows = np.asarray(s.input_set, dtype=np.intp).reshape(1, -1)
        if rows.shape[1] != m + 1 or rows.min() < 0 or rows.max() >= n:
            raise ValueError(f"input_set must hold M+1 = {m + 1} indices in [0, {n}), "
                             f"got {s.input_set}")
    scan = (low_rank_input_side(m1.f, m2.f, m1.g_cov, m2.g_cov, g_cross, rows, s.dist_type)
            if g_cross is not None  # the low-rank path
            else input_terms(m1.loglik[rows], m2.loglik[rows], s.dist_type))
    return InputSide(rows[scan.chosen], float(scan.scores[scan.chosen]),
                     float(scan.t4[scan.chosen]), scan.near_zero)


def extra_measures(m1: PreparedModel, m2: PreparedModel, want: frozenset[str] | None = None,
                   conventions: AlignmentConventions | None = None,
                   reasons: list[str] | None = None,
                   g_cross: np.ndarray | None = None) -> dict[str, float]:
    """The measures beyond the paper: the f-side alignment measures (linear CKA, SVCCA, mutual
    k-NN, PRH's cycle/LCS/edit-distance k-NN, unbiased CKA, CKNNA) of f read under
    `conventions` (default: as it is), and d_logit; a NaN's explanation goes to `reasons`."""
    want = select_measures(None) if want is None else want
    conventions = AlignmentConventions() if conventions is None else conventions
    out: dict[str, float] = {}
    if want & ALIGNMENT_MEASURES:
        out.update(alignment_measures(m1.view(conventions), m2.view(conventions), want,
                                      conventions, [] if reasons is None else reasons))
    if "d_logit" in want and g_cross is not None:  # the low-rank path's
        out["d_logit"] = low_rank_d_logit(m1.f, m2.f, m1.g_cov, m2.g_cov, g_cross, m1.num_labels)
    elif "d_logit" in want:
        out["d_logit"] = d_logit_from_clr(m1.loglik_clr, m2.loglik_clr)
    return out


def _apply_sample_rules(arrays: tuple[Any, Any, Any], selected: frozenset[str]) -> None:
    """The sample rules for f1's N, g1's K and the larger width: a refusal raises, a warning
    is a SampleSizeWarning in words. Arrays of the wrong rank pass to prepare, which says so."""
    shapes = [tuple(getattr(a, "shape", None) or np.shape(a)) for a in arrays]
    if any(len(shape) != 2 for shape in shapes):
        return
    m = max(shapes[0][1], shapes[2][1])
    refusals, notes = sample_notes(int(shapes[0][0]), int(shapes[1][0]), int(m), selected)
    if refusals:
        raise InputError("; ".join(refusals))
    for note in notes:
        warnings.warn(note, SampleSizeWarning, stacklevel=4)


@_takes_settings
def compare(f1: Any, g1: Any, f2: Any, g2: Any, **settings: Any) -> dict[str, Any]:
    """Compare models (f1, g1) and (f2, g2): KL, d_LLV and its terms, m_SVD, d_{f,g}, m_CCA
    and the f-side alignment measures.

    f is N x M (embeddings of the same N inputs); g is K x M (unembeddings of the K labels, in
    class order). The widths M may differ: m_SVD_f, m_SVD_g and d_fg are then NaN, with the
    reason. The keywords are CompareSettings' fields. The result holds the RESULT_KEYS that
    `measures` selects. `warning` is "" unless a measure is undefined (then NaN) or m_CCA ran
    over fewer components than coordinates. Prepared models are cached by content
    (`prepared_cache`), so a loop over pairs prepares each model once.
    """
    options = CompareSettings(**settings)
    _apply_sample_rules((f1, g1, f2), options.selected)
    return compare_with_settings(
        prepared_cache.get(f1, g1, options.selected, options.conventions, options.method),
        prepared_cache.get(f2, g2, options.selected, options.conventions, options.method), options)
