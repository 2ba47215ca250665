"""The Platonic Representation Hypothesis' study score (Huh et al. 2024, `measure_alignment.py`):
one of their eight metrics between every layer of one model and every layer of another, plus
each model's layers concatenated (their App. C.2); the best pair is kept. Its permutation null
takes the maximum inside each draw (null.aggregate_null), so searching the layer pairs is paid
for."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from . import prh
from .alignment import FROM_INDICES
from .extra import (
    inverse_order,
    knn_edge_keys,
    knn_indices,
    linear_cka,
    relabelled_neighbours,
    unit_rows,
)
from .null import NullSettings, layers_null

# their eight metrics (metrics.AlignmentMetrics.SUPPORTED_METRICS); the k-NN ones read k
METRICS = ("mutual_knn", "cycle_knn", "lcs_knn", "edit_distance_knn", "cka", "unbiased_cka",
           "cknna", "svcca")
KNN_METRICS = frozenset({"mutual_knn", "cycle_knn", "lcs_knn", "edit_distance_knn"})
SCORE_MAX = {"lcs_knn": float(prh.PRH_K)}  # a length of k lists, not a share


class ModelLayers:
    """One model's prepared layers (prepare_layers) and, found once when first asked, their
    k-NN graphs: what every pair the model is in reuses."""

    def __init__(self, layers: Sequence[np.ndarray]) -> None:
        self.layers = list(layers)
        self._graphs: dict[int, KnnGraphs] = {}

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def n(self) -> int:
        return len(self.layers[0])

    def graphs(self, k: int) -> KnnGraphs:
        if k not in self._graphs:
            self._graphs[k] = KnnGraphs(self.layers, k)
        return self._graphs[k]


def prepare_layers(layers: Sequence[np.ndarray], q: float = prh.PRH_OUTLIER_QUANTILE,
                   exact: bool = False, concatenated: bool = True) -> ModelLayers:
    """One model's layers as their metrics read them (their `prepare_features`, `compute_score`):
    clamped at one threshold over all layers side by side (prh.clamp_outliers), each layer's rows
    L2-normalised, and last the concatenation of the clamped layers, normalised as a whole."""
    if not len(layers):
        raise ValueError("a model needs at least one layer")
    arrays = [prh.as_float64(x) for x in layers]
    n = {len(x) for x in arrays}
    if len(n) != 1:
        raise ValueError(f"a model's layers must hold the same inputs, got {sorted(n)} rows")
    clamped = prh.clamp_outliers(np.concatenate(arrays, axis=1), q, exact)
    ends = np.cumsum([x.shape[1] for x in arrays])[:-1]
    out = [unit_rows(part) for part in np.split(clamped, ends, axis=1)]
    return ModelLayers(out + [unit_rows(clamped)] if concatenated else out)


class KnnGraphs:
    """One model's k-NN graphs, one per layer, as sorted edge keys i * N + j, and the union of
    its edges with the layers that hold each (packed bits, one row an edge). A draw of the null
    relabels the second model's graphs, so its whole mutual k-NN table is one lookup of each in
    the first model's union. The other metrics are recomputed on the reordered rows."""

    def __init__(self, layers: Sequence[np.ndarray], k: int) -> None:
        self.n, self.k, self.count = len(layers[0]), k, len(layers)
        self.neighbours = [knn_indices(x, k) for x in layers]
        self.keys = [knn_edge_keys(nn) for nn in self.neighbours]
        self.union = np.unique(np.concatenate(self.keys))
        member = np.zeros((len(self.union), self.count), dtype=bool)
        for layer, keys in enumerate(self.keys):
            member[np.searchsorted(self.union, keys), layer] = True
        self.packed = np.packbits(member, axis=1)

    def overlap(self, keys: np.ndarray) -> np.ndarray:
        """For each of this model's layers, how many of `keys` (edges of another graph on the
        same inputs) it holds."""
        pos = np.minimum(np.searchsorted(self.union, keys), len(self.union) - 1)
        hit = pos[self.union[pos] == keys]
        bits = np.unpackbits(self.packed[hit], axis=1, count=self.count)
        return bits.sum(axis=0, dtype=np.int64)


def relabelled(keys: np.ndarray, n: int, order: np.ndarray | None) -> np.ndarray:
    """The edge keys of a graph on rows reordered by `order` (row i of the new holds row
    order[i] of the old): edge (p, q) becomes (inv[p], inv[q])."""
    if order is None:
        return keys
    inverse = inverse_order(order).astype(np.int64)
    return inverse[keys // n] * n + inverse[keys % n]


def mutual_knn_table(x: KnnGraphs, y: KnnGraphs, order: np.ndarray | None = None) -> np.ndarray:
    """Mutual k-NN of every layer pair (x's layers down, y's across), y's rows in `order`."""
    if (x.n, x.k) != (y.n, y.k):
        raise ValueError(f"the graphs differ: N, k = {(x.n, x.k)} and {(y.n, y.k)}")
    cols = [x.overlap(relabelled(keys, y.n, order)) for keys in y.keys]
    return np.stack(cols, axis=1) / (x.n * x.k)


def score_table(metric: str, x: ModelLayers, y: ModelLayers, k: int,
                ) -> Callable[[np.ndarray | None], np.ndarray]:
    """score(order): the table of `metric` over every layer pair, y's rows in `order` (None:
    as they are), from prepared layers (prepare_layers); per-model work done once."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
    if metric in KNN_METRICS:
        gx, gy = x.graphs(k), y.graphs(k)
        if metric == "mutual_knn":
            return lambda order: mutual_knn_table(gx, gy, order)
        pair = FROM_INDICES[f"{metric}_f"]  # the pairs tables' own
        return lambda order: np.array([[pair(a, b if order is None
                                             else relabelled_neighbours(b, order))
                                        for b in gy.neighbours] for a in gx.neighbours])
    pair = {"cka": linear_cka, "unbiased_cka": prh.unbiased_cka, "svcca": prh.svcca_zscored,
            "cknna": lambda a, b: prh.cknna(a, b, k)}[metric]
    return lambda order: np.array([[pair(a, b if order is None else b[order]) for b in y.layers]
                                   for a in x.layers])


@dataclass(frozen=True)
class LayerAlignment:
    """The best layer pair's score and indices (the concatenation last), the whole table, and
    the null's tau, p and calibrated score of the maximum (NaN without a null)."""

    score: float
    best: tuple[int, int]
    table: np.ndarray = field(repr=False)
    tau: float = float("nan")
    p: float = float("nan")
    calibrated: float = float("nan")
    permutations: int = 0


def layer_alignment(x: ModelLayers, y: ModelLayers, metric: str = "mutual_knn",
                    k: int = prh.PRH_K, null: NullSettings | None = None) -> LayerAlignment:
    """`metric` maximised over every layer pair of prepared layers x and y (their
    compute_score: the first maximum in x-major order), with the null of the maximum."""
    if x.n != y.n:
        raise ValueError(f"the two models saw different inputs: {x.n} and {y.n} rows")
    score = score_table(metric, x, y, k)
    table = score(None)
    flat = int(np.nanargmax(table)) if np.isfinite(table).any() else 0
    best = (flat // table.shape[1], flat % table.shape[1])
    if null is None:
        return LayerAlignment(float(table.flat[flat]), best, table)
    value, tau, p, calibrated = layers_null(score, x.n, null,
                                            score_max=SCORE_MAX.get(metric, 1.0))
    return LayerAlignment(value, best, table, tau, p, calibrated, null.permutations)
