"""Every score beside its chance level: a permutation null for each pairwise measure.

For CCA-, CKA- and k-NN-based scores, two unrelated representations score well above zero, the
more so as the width M grows against the inputs N (Gröger, Wen and Brbić 2026). The null
reorders one model's rows K times and scores each draw as compare.py does: per measure a
threshold tau, a p-value and a calibrated score (their Algorithm 1). `aggregate_null` calibrates
a maximum or mean over layer pairs as a whole (their Algorithm 2)."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .prepared import PreparedModel, permuted_inputs, permuted_labels
from .selection import MEASURES

# Which rows each measure's null reorders: the inputs (f's rows) for every f-side measure, KL,
# d_LLV and its terms, d_logit and d_{f,g}; the labels (g's rows) for m_CCA and m_SVD of g.
LABEL_NULL = frozenset({"mcca_g", "m_svd_g"})
INPUT_NULL = frozenset({
    "kl", "d_llv", "t1", "t2", "t3", "t4", "m_svd_f", "d_fg", "mcca_f", "cka_f", "svcca_f",
    "mutual_knn_f", "d_logit", "cycle_knn_f", "lcs_knn_f", "edit_distance_knn_f",
    "unbiased_cka_f", "cknna_f",
})
NULL_MEASURES = tuple(m for m in MEASURES if m in INPUT_NULL | LABEL_NULL)
# lower is closer: the null's lower tail
DISTANCES = frozenset({"kl", "d_llv", "t1", "t2", "t3", "t4", "d_fg", "d_logit"})
# the largest value of a similarity not bounded by 1: PRH's LCS k-NN, a length of k lists
SCORE_MAX = {"lcs_knn_f": 10.0}
# on by default (config.yaml's null.measures): those whose draws are batched (null_batch.py);
# d_llv and cknna_f, drawn one comparison at a time, by name
DEFAULT_NULL_MEASURES = ("kl", "mcca_f", "mcca_g", "cka_f", "svcca_f", "mutual_knn_f")
SUFFIXES = ("_tau", "_p", "_calibrated")
EXACT_MAX_ROWS = 8  # enumerating orderings is only ever asked for up to 8! = 40320 of them
# A null score within NULL_TIE x max(1, |observed|) of the observed one is as extreme as it
# (a reordering that changes nothing, e.g. of tied rows, scores the observed value up to
# rounding); a distance threshold tau at or below NULL_TIE is 0.
NULL_TIE = 1e-12


@dataclass
class NullTally:
    """What this process has spent on nulls (pair_null): pairs and seconds; a job's log ends
    with it (pipeline.joblog), so a run's cost of its nulls adds up from its logs."""

    pairs: int = 0
    seconds: float = 0.0


TALLY = NullTally()


@dataclass(frozen=True)
class NullSettings:
    """How many permutations (0: no null), the level alpha of the threshold tau, which
    measures (NULL_MEASURES; None: DEFAULT_NULL_MEASURES) and the seed of the draws."""

    permutations: int = 200
    alpha: float = 0.05
    measures: tuple[str, ...] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        k = self.permutations
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
            raise ValueError(f"null permutations must be an integer >= 0, got {k!r}")
        a = self.alpha
        if isinstance(a, bool) or not isinstance(a, float | int) or not 0 < a < 1:
            raise ValueError(f"null alpha must be a number in (0, 1), got {a!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer):
            raise ValueError(f"null seed must be an integer, got {self.seed!r}")
        names = DEFAULT_NULL_MEASURES if self.measures is None else self.measures
        if isinstance(names, str):
            names = tuple(n.strip() for n in names.split(",") if n.strip())
        unknown = sorted(set(names) - set(NULL_MEASURES))
        if unknown:
            raise ValueError(f"null measures: unknown {unknown}; choose from "
                             f"{', '.join(NULL_MEASURES)}")
        object.__setattr__(self, "measures", tuple(m for m in NULL_MEASURES if m in names))

    @property
    def chosen(self) -> tuple[str, ...]:
        assert self.measures is not None
        return self.measures


def null_settings(value: Any) -> NullSettings | None:
    """A NullSettings from None, a mapping of its fields or one itself; None when it draws no
    permutation (permutations 0)."""
    if value is None:
        return None
    settings = value if isinstance(value, NullSettings) else NullSettings(**dict(value))
    return settings if settings.permutations > 0 else None


def permutations(n: int, count: int, seed: int) -> tuple[Iterator[np.ndarray], int, bool]:
    """(the orderings, how many, exact) of n rows: every ordering but the identity when they
    number at most `count` (an exact test; g over 4-6 labels has 24 to 720), else `count` draws
    of default_rng(seed), the same for every pair, so a table is reproducible bit for bit."""
    if n <= EXACT_MAX_ROWS and math.factorial(n) - 1 <= count:
        every = itertools.islice(itertools.permutations(range(n)), 1, None)
        return (np.array(p, dtype=np.intp) for p in every), math.factorial(n) - 1, True
    rng = np.random.default_rng(seed)
    return (rng.permutation(n) for _ in range(count)), count, False


def null_stats(observed: float, null: np.ndarray, alpha: float, distance: bool = False,
               score_max: float = 1.0) -> tuple[float, float, float]:
    """(tau, p, calibrated) of one observed score against its K null scores (their Algorithm 1):
    tau the ceil((1 - alpha)(K + 1))-th smallest of all K + 1, add-one p = (1 + #{null >=
    observed}) / (K + 1), calibrated clip((s - tau) / (s_max - tau), 0, 1). A distance takes the
    lower tail: tau the ceil(alpha (K + 1))-th, p counts null <= observed, clip((tau - d) / tau)."""
    if not np.isfinite(observed) or not np.isfinite(null).all():
        return float("nan"), float("nan"), float("nan")
    k = len(null)
    combined = np.sort(np.append(null, observed))
    tie = NULL_TIE * max(1.0, abs(observed))  # a draw this close to the observed ties with it
    if distance:
        tau = float(combined[min(k, max(0, math.ceil(alpha * (k + 1)) - 1))])
        p = (1 + int(np.count_nonzero(null <= observed + tie))) / (k + 1)
        calibrated = (tau - observed) / tau if tau > NULL_TIE else float(observed <= tau + tie)
    else:
        tau = float(combined[min(k, max(0, math.ceil((1 - alpha) * (k + 1)) - 1))])
        p = (1 + int(np.count_nonzero(null >= observed - tie))) / (k + 1)
        calibrated = (observed - tau) / max(score_max - tau, 1e-12)
    return tau, p, float(np.clip(calibrated, 0.0, 1.0))


def null_value(result: Mapping[str, Any], measure: str) -> float:
    """A measure's score in a comparison's result (m_SVD_f: its minimum, as the tables show)."""
    value = result[measure]
    return float(np.min(value)) if measure == "m_svd_f" else float(value)


Evaluate = Callable[[PreparedModel, PreparedModel, frozenset[str]], Mapping[str, Any]]
Batch = Callable[[str, np.ndarray], "np.ndarray | None"]


def pair_null(m1: PreparedModel, m2: PreparedModel, observed: Mapping[str, Any],
              settings: NullSettings, evaluate: Evaluate, selected: Iterable[str],
              batch: Batch | None = None) -> tuple[dict[str, float], list[str]]:
    """`<measure>_tau`, `_p`, `_calibrated` of every null measure asked for and in `selected`, and
    notes (an exact test whose smallest p is above alpha). A draw compares m1 with m2's pieces
    reordered, not recomputed: all K at once by `batch(measure, orders)` where a measure has a
    batched form (null_batch.py), else by `evaluate(m1, m2 reordered, measures)` per draw."""
    wanted = null_measures(settings, selected)
    out: dict[str, float] = {}
    notes: list[str] = []
    if m1.problem or m2.problem:
        return {f"{m}{s}": float("nan") for m in wanted for s in SUFFIXES}, notes
    start = time.perf_counter()
    for side, measures, rows, reorder in (
            ("inputs", INPUT_NULL, m2.n_inputs, permuted_inputs),
            ("labels", LABEL_NULL, m2.num_labels, permuted_labels)):
        asked = [m for m in wanted if m in measures]
        if not asked:
            continue
        drawn, count, exact = permutations(rows, settings.permutations, settings.seed)
        orders = np.array(list(drawn), dtype=np.intp).reshape(count, rows)
        null = {m: batch(m, orders) if batch is not None else None for m in asked}
        rest = [m for m in asked if null[m] is None]
        if rest:
            draws = np.array([[null_value(evaluate(m1, reorder(m2, order), frozenset(rest)), m)
                               for m in rest] for order in orders]).reshape(count, len(rest))
            null.update({m: draws[:, c] for c, m in enumerate(rest)})
        for m in asked:
            tau, p, cal = null_stats(null_value(observed, m), np.asarray(null[m]),
                                     settings.alpha, m in DISTANCES, SCORE_MAX.get(m, 1.0))
            out.update({f"{m}_tau": tau, f"{m}_p": p, f"{m}_calibrated": cal})
        if exact and 1 / (count + 1) > settings.alpha:
            notes.append(f"null over {side}: all {count + 1} orderings of {rows} {side}, the "
                         f"smallest p {1 / (count + 1):.3g} above alpha {settings.alpha:g} "
                         f"({', '.join(asked)})")
    TALLY.pairs += 1
    TALLY.seconds += time.perf_counter() - start
    return out, notes


def null_measures(null: NullSettings | None, selected: Iterable[str]) -> list[str]:
    """The measures a comparison draws a null for: those of `null` also selected."""
    chosen = set(selected)
    return [] if null is None else [m for m in null.chosen if m in chosen]


def null_keys(null: NullSettings | None, selected: Iterable[str]) -> list[str]:
    """The keys a comparison's result gains from its null: `<measure>_tau`, `_p`,
    `_calibrated` of each of null_measures (none without a null)."""
    return [f"{m}{s}" for m in null_measures(null, selected) for s in SUFFIXES]


def aggregate_null(observed: np.ndarray, null: np.ndarray, alpha: float,
                   aggregate: str = "max", distance: bool = False, score_max: float = 1.0,
                   ) -> tuple[float, float, float, float]:
    """(aggregate, tau, p, calibrated) of a table of scores as a whole (their Algorithm 2):
    `null` holds one table per draw (draws first), one reordering for every entry. The maximum
    (a distance's minimum) or mean is taken inside each draw: searching the table is paid for."""
    if aggregate not in ("max", "mean"):
        raise ValueError(f"aggregate must be 'max' or 'mean', got {aggregate!r}")
    reduce = np.nanmean if aggregate == "mean" else np.nanmin if distance else np.nanmax
    value = float(reduce(observed))
    draws = reduce(np.asarray(null, dtype=np.float64).reshape(len(null), -1), axis=1)
    return (value, *null_stats(value, draws, alpha, distance, score_max))


def layers_null(score: Callable[[Sequence[int] | None], np.ndarray], n: int,
                settings: NullSettings, aggregate: str = "max", distance: bool = False,
                score_max: float = 1.0) -> tuple[float, float, float, float]:
    """aggregate_null of a table of layer-pair scores: `score(order)` gives the whole table
    with the second model's n rows in `order` (None: as they are) in every layer at once."""
    orders, _, _ = permutations(n, settings.permutations, settings.seed)
    null = np.array([score(order) for order in orders], dtype=np.float64)
    return aggregate_null(score(None), null, settings.alpha, aggregate, distance, score_max)


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values of a table of p-values, same shape: a test is kept at false
    discovery rate alpha where q <= alpha. NaNs stay NaN and are not counted as tests."""
    p = np.asarray(p, dtype=np.float64)
    flat = p.ravel()
    seen = np.flatnonzero(np.isfinite(flat))
    q = np.full(flat.shape, np.nan)
    if len(seen):
        order = seen[np.argsort(flat[seen], kind="stable")]
        m = len(order)
        ranked = flat[order] * m / np.arange(1, m + 1)
        q[order] = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    return q.reshape(p.shape)
