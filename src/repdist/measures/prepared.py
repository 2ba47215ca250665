"""PreparedModel: one model's representations and the per-model work every pair reuses.

The expensive per-model pieces (float64 log-likelihoods, their covariance, bases for CCA, the
k-NN graph) are computed on first use and kept; `prepare` computes up front only those the
requested measures need. The f-side alignment measures read f through an AlignmentView, one
per preprocessing convention (conventions.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..io.host import to_host
from .cca import Spectrum, detect_precision, spectrum, varying_coordinates
from .conventions import AlignmentConventions
from .extra import (
    KDTREE_MAX_DIM,
    centred_log_probs,
    components_explaining,
    gram_norm,
    inverse_order,
    ip_knn_indices,
    knn_both_blockwise,
    knn_edge_keys,
    knn_indices,
    relabelled_neighbours,
)
from ..io.validation import representations
from .loglik import log_likelihoods
from .low_rank import (
    STREAM_LABELS,
    STREAM_ROWS,
    LogLikFactors,
    label_covariance,
    loglik_factors,
    streamed_lse,
    use_low_rank,
)
from .memory import prepare_bytes, require
from .prh import PRH_K, cknna_self, hsic_unbiased_linear, zscored_basis
from .selection import model_parts, select_measures, view_parts

MUTUAL_KNN_K = 10  # Platonic Representation Hypothesis, App. A
assert MUTUAL_KNN_K == PRH_K  # one neighbour search serves mutual k-NN and the PRH metrics
DEFAULT_CONVENTIONS = AlignmentConventions()


@dataclass(frozen=True, eq=False)
class AlignmentView:
    """f as the f-side alignment measures read it under one preprocessing (x: clamped and/or
    unit rows, or f itself), with the pieces they need. `unit` says x's rows have unit length:
    then PRH's inner-product neighbours are the cosine ones of `knn_idx`."""

    x: np.ndarray
    unit: bool = False

    @cached_property
    def knn_idx(self) -> np.ndarray | None:
        """Each input's MUTUAL_KNN_K nearest others by cosine, nearest first (None when N is
        too small for k neighbours)."""
        if len(self.x) <= MUTUAL_KNN_K:
            return None
        if self._searched_together:
            return self._both_searches[0]
        return knn_indices(self.x, MUTUAL_KNN_K)

    @property
    def _searched_together(self) -> bool:
        """Both neighbour searches scan x x^T block by block (beyond the k-d trees' dimension,
        rows not unit): one scan serves both (extra.knn_both_blockwise)."""
        return not self.unit and self.x.shape[1] > KDTREE_MAX_DIM

    @cached_property
    def _both_searches(self) -> tuple[np.ndarray, np.ndarray]:
        return knn_both_blockwise(self.x, MUTUAL_KNN_K)

    @cached_property
    def knn(self) -> np.ndarray | None:
        """The k-NN graph as sorted edge keys (mutual k-NN)."""
        return None if self.knn_idx is None else knn_edge_keys(self.knn_idx)

    @cached_property
    def ip_knn(self) -> np.ndarray | None:
        """CKNNA's top-k pairs by inner product of the rows as given (PRH metrics.py), as
        sorted edge keys; on unit rows, the cosine graph itself."""
        if len(self.x) <= MUTUAL_KNN_K:
            return None
        if self.unit:
            return self.knn
        if self._searched_together:
            return knn_edge_keys(self._both_searches[1])
        return knn_edge_keys(ip_knn_indices(self.x, MUTUAL_KNN_K))

    @cached_property
    def cknna_self(self) -> float:
        return float("nan") if self.ip_knn is None else cknna_self(self.x, self.ip_knn)

    @cached_property
    def hsic_self(self) -> float:
        """The unbiased HSIC of x's linear kernel with itself (NaN below N = 4)."""
        return float("nan") if len(self.x) < 4 else hsic_unbiased_linear(self.x, self.x)

    @cached_property
    def centred(self) -> np.ndarray:
        return self.x - self.x.mean(axis=0, keepdims=True)

    @cached_property
    def gram_norm(self) -> float:
        """linear CKA's ||Xc^T Xc||_F: 0 where x is constant to within rounding."""
        return gram_norm(self.x)

    @cached_property
    def spectrum(self) -> Spectrum:
        """x's centred SVD, from which a basis at any precision is a slice (cca.py)."""
        return spectrum(self.x)

    @cached_property
    def basis(self) -> np.ndarray:
        """x's orthonormal basis at the precision its values show."""
        return self.spectrum.basis()

    @cached_property
    def svcca_kept(self) -> int:
        """Principal components explaining 99% of x's variance."""
        return components_explaining(self.spectrum.s)

    @cached_property
    def zscored_basis(self) -> np.ndarray:
        return zscored_basis(self.x)


@dataclass(frozen=True, eq=False)
class PreparedModel:
    """One model's embeddings f (N x M), unembeddings g (K x M) and everything derived from them.
    `problem` is non-empty when they are unusable (NaN/inf, overflowing log-likelihoods): then
    every measure of its pairs is NaN."""

    f: np.ndarray
    g: np.ndarray
    problem: str = ""
    views: dict[tuple[float, bool], AlignmentView] = field(default_factory=dict, repr=False)

    @property
    def n_inputs(self) -> int:
        return self.f.shape[0]

    @property
    def num_labels(self) -> int:
        return self.g.shape[0]

    @property
    def rep_dim(self) -> int:
        return self.f.shape[1]

    @cached_property
    def loglik(self) -> np.ndarray:
        """log p(y|x), N x K float64 (the exact path; the low-rank path never builds it)."""
        require(8 * 2 * self.n_inputs * self.num_labels,
                f"the N x K log-likelihoods of N={self.n_inputs} inputs, K={self.num_labels} labels")
        return log_likelihoods(self.f, self.g)

    @cached_property
    def lse(self) -> np.ndarray:
        """log sum_y exp(f(x)^T g(y)) per input, streamed over labels, or left by a pair's KL
        pass (`keep_lse`)."""
        return streamed_lse(self.f, self.g)

    def keep_lse(self, lse: np.ndarray) -> None:
        self.__dict__.setdefault("lse", lse)

    @cached_property
    def loglik_factors(self) -> LogLikFactors:
        return loglik_factors(self.f, self.g, self.lse)

    @cached_property
    def g_cov(self) -> np.ndarray:
        """Covariance over labels of g's coordinates (M x M): the input side and d_logit."""
        return label_covariance(self.g, self.g)

    @cached_property
    def loglik_centred(self) -> np.ndarray:
        return self.loglik - self.loglik.mean(axis=0, keepdims=True)

    @cached_property
    def loglik_cov(self) -> np.ndarray:
        centred = self.loglik_centred
        return centred.T @ centred / (centred.shape[0] - 1)

    @property
    def f_basis(self) -> np.ndarray:
        """f's orthonormal basis (m_CCA), kept in the default view, where SVCCA shares it."""
        return self.view().basis

    @property
    def f_spectrum(self) -> Spectrum:
        """f's centred SVD (m_CCA's bases at any precision), kept in the default view."""
        return self.view().spectrum

    @cached_property
    def g_spectrum(self) -> Spectrum:
        return spectrum(self.g)

    @cached_property
    def g_basis(self) -> np.ndarray:
        return self.g_spectrum.basis()

    @cached_property
    def f_varying(self) -> int:
        """M less f's constant coordinates (a folded bias): m_CCA's most components."""
        return varying_coordinates(self.f)

    @cached_property
    def g_varying(self) -> int:
        return varying_coordinates(self.g)

    @cached_property
    def g_rounding(self) -> tuple[float, str]:
        """||g||_F and the precision g's values show: the low-rank m_CCA(g)'s rank tolerance
        (cca.covariance_cca_over_rank), without g's SVD."""
        return float(np.linalg.norm(self.g)), detect_precision(self.g)

    @cached_property
    def loglik_clr(self) -> np.ndarray:
        return centred_log_probs(self.loglik)

    def view(self, conventions: AlignmentConventions = DEFAULT_CONVENTIONS) -> AlignmentView:
        """f under these conventions' preprocessing, made once per model and convention."""
        key = conventions.view_key
        if key not in self.views:
            self.views[key] = _view(self.f, conventions)
        return self.views[key]

    def warm(self, measures: Iterable[str] | str | None = None,
             conventions: AlignmentConventions = DEFAULT_CONVENTIONS,
             method: str = "auto") -> PreparedModel:
        """Compute now every per-model quantity these measures need (`method` as in compare);
        returns self."""
        if not self.problem:
            selected = select_measures(measures)
            for part in model_parts(selected, use_low_rank(method, self.num_labels)):
                getattr(self, part)
            for part in view_parts(selected, conventions.svcca):
                getattr(self.view(conventions), part)
        return self


# How each per-model piece follows a permutation of the inputs (rows of f) or of the labels
# (rows of g), so that a permutation null (null.py) reuses it: rows (or label columns)
# reordered, unchanged or relabelled; any other is computed afresh (tests/test_null.py).
INPUT_ROWS = ("loglik", "loglik_centred", "loglik_clr", "lse")
INPUT_SAME = ("loglik_cov", "f_varying", "g_spectrum", "g_basis", "g_varying", "g_rounding",
              "g_cov")
LABEL_COLUMNS = ("loglik", "loglik_centred", "loglik_clr")
LABEL_SAME = ("lse", "f_varying", "g_varying", "g_rounding", "g_cov")
VIEW_ROWS = ("x", "centred", "basis", "zscored_basis")
VIEW_SAME = ("gram_norm", "svcca_kept", "hsic_self", "cknna_self")


def _reorder_spectrum(spec: Spectrum, order: np.ndarray) -> Spectrum:
    """The Spectrum of x[order]: centring and the singular values do not see row order."""
    return Spectrum(spec.u[order], spec.s, spec.shape, spec.norm, spec.detected)


def permuted_view(view: AlignmentView, order: np.ndarray) -> AlignmentView:
    """The view of x[order] (row i is the old row order[i]), its pieces carried over: rows
    reordered, neighbour lists relabelled (in their order: ties stay as first found)."""
    inverse = inverse_order(order)
    done = view.__dict__
    out = AlignmentView(view.x[order], view.unit)
    kept = {name: done[name][order] for name in VIEW_ROWS[1:] if name in done}
    kept.update({name: done[name] for name in VIEW_SAME if name in done})
    if "spectrum" in done:
        kept["spectrum"] = _reorder_spectrum(done["spectrum"], order)
    if done.get("knn_idx") is not None:
        kept["knn_idx"] = relabelled_neighbours(done["knn_idx"], order, inverse)
    elif "knn_idx" in done:
        kept.update(knn_idx=None, knn=None)
    if done.get("ip_knn") is not None and not view.unit:  # sorted edge keys i*N + j, k a row
        neighbours = (done["ip_knn"] % len(order)).reshape(len(order), -1)
        kept["ip_knn"] = knn_edge_keys(relabelled_neighbours(neighbours, order, inverse))
    elif "ip_knn" in done and done["ip_knn"] is None:
        kept["ip_knn"] = None
    out.__dict__.update(kept)
    return out


def permuted_inputs(model: PreparedModel, order: np.ndarray) -> PreparedModel:
    """The model that maps input i to what `model` maps input order[i] to (f's rows reordered),
    every piece already computed carried over: a permutation null's draw costs only the pair's
    work."""
    done = model.__dict__
    out = PreparedModel(model.f[order], model.g, model.problem)
    out.__dict__.update({name: done[name][order] for name in INPUT_ROWS if name in done})
    out.__dict__.update({name: done[name] for name in INPUT_SAME if name in done})
    out.views.update({key: permuted_view(view, order) for key, view in model.views.items()})
    return out


def permuted_labels(model: PreparedModel, order: np.ndarray) -> PreparedModel:
    """The model whose label k is `model`'s label order[k] (g's rows reordered, f as it is),
    every piece already computed carried over (the views are f's: shared)."""
    done = model.__dict__
    out = PreparedModel(model.f, model.g[order], model.problem, views=model.views)
    out.__dict__.update({name: done[name][:, order] for name in LABEL_COLUMNS if name in done})
    out.__dict__.update({name: done[name] for name in LABEL_SAME if name in done})
    if "loglik_cov" in done:
        out.__dict__["loglik_cov"] = done["loglik_cov"][np.ix_(order, order)]
    if "g_spectrum" in done:
        out.__dict__["g_spectrum"] = _reorder_spectrum(done["g_spectrum"], order)
    if "g_basis" in done:
        out.__dict__["g_basis"] = done["g_basis"][order]
    return out


def _view(f: np.ndarray, conventions: AlignmentConventions) -> AlignmentView:
    """f (float64, read-only) under these conventions' preprocessing, as an AlignmentView."""
    x = conventions.preprocess(f)
    if x is not f:
        x.setflags(write=False)
    return AlignmentView(x, bool(conventions.unit_rows))


def alignment_view(f: Any, conventions: AlignmentConventions = DEFAULT_CONVENTIONS
                   ) -> AlignmentView:
    """f alone, with no g (a hidden layer's states), as PreparedModel.view makes it: a float64
    read-only copy in f's own memory layout, so that a caller's later edits change nothing."""
    x = np.array(to_host(f, np.float64), dtype=np.float64, order="K")
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1:
        raise ValueError(f"f must be rows x M with at least 2 rows, got shape {x.shape}")
    x.setflags(write=False)
    return _view(x, conventions)


def _unusable(f64: np.ndarray, g64: np.ndarray, problem: str) -> PreparedModel:
    """A model whose measures are all NaN; its derived quantities are NaN/empty placeholders."""
    f64, g64 = (np.where(np.isfinite(x), x, np.nan) for x in (f64, g64))
    nan_nk = np.full((f64.shape[0], g64.shape[0]), np.nan)
    model = PreparedModel(f64, g64, problem=problem)
    empty = np.zeros((0, 0))
    model.__dict__.update(  # fill the cached properties: nothing is computed from NaN
        loglik=nan_nk, loglik_centred=nan_nk, loglik_cov=np.full((g64.shape[0],) * 2, np.nan),
        g_basis=empty, loglik_clr=None, f_varying=0, g_varying=0,
    )
    model.view().__dict__.update(
        basis=empty, knn_idx=None, knn=None, ip_knn=None, centred=None, gram_norm=0.0,
        svcca_kept=0, zscored_basis=empty, hsic_self=float("nan"), cknna_self=float("nan"),
    )
    return model


def _own_read_only(converted: np.ndarray, given: Any) -> np.ndarray:
    """The array itself if conversion made a fresh one, else a copy, made read-only: a caller
    who later edits their array in place must not change a prepared model behind its back."""
    if converted is given or converted.base is not None:
        converted = converted.copy()
    converted.setflags(write=False)
    return converted


def prepare(f: Any, g: Any, measures: Iterable[str] | str | None = None,
            conventions: AlignmentConventions = DEFAULT_CONVENTIONS,
            method: str = "auto") -> PreparedModel:
    """Validate a model's representations and precompute what `measures` (default: all) need,
    the alignment measures' under `conventions`, `method` as in compare; anything else is
    computed on first use. The model keeps its own read-only copy of f and g."""
    f_checked, g_checked = representations(f, g)
    f64, g64 = _own_read_only(f_checked, f), _own_read_only(g_checked, g)
    (n, m), k = f64.shape, g64.shape[0]
    selected = select_measures(measures)
    low_rank = use_low_rank(method, k)
    parts = (*model_parts(selected, low_rank), *view_parts(selected, conventions.svcca))
    require(prepare_bytes(n, k, m, parts, STREAM_ROWS * STREAM_LABELS if low_rank else 0),
            f"preparing a model of N={n} inputs, K={k} labels, M={m}")
    problems = [f"non-finite values in the {name}" for name, x in
                (("embeddings f", f64), ("unembeddings g", g64)) if not np.isfinite(x).all()]
    if problems:
        return _unusable(f64, g64, "; ".join(problems))
    model = PreparedModel(f64, g64)
    if not _logits_finite(model, low_rank):
        return PreparedModel(f64, g64, problem="log-likelihoods overflow (embedding or "
                             "unembedding norms too large)")
    return model.warm(selected, conventions, method)


def _largest_square(x: np.ndarray) -> float:
    """The largest squared norm of x's rows (no N x M temporary)."""
    return float(np.einsum("ij,ij->i", x, x).max())


def _logits_finite(model: PreparedModel, low_rank: bool) -> bool:
    """Whether log p(y|x) is finite everywhere: checked on the N x K log-likelihoods (kept, the
    exact path needs them) or, at vocabulary scale, by Cauchy-Schwarz on the largest norms
    (every logit finite), else on the streamed lse."""
    with np.errstate(over="ignore", invalid="ignore"):
        if not low_rank:
            return bool(np.isfinite(model.loglik).all())
        largest = np.sqrt(_largest_square(model.f) * _largest_square(model.g))
        return bool(largest < 1e300 or np.isfinite(model.lse).all())
