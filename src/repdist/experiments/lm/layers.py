"""Language models compared layer by layer (Roeder et al. 2021, Fig. 4). They compared GPT-2's
four sizes by SVCCA at 16, 64, 256 and 768 components per layer, averaged over the pairs of
models; the head's input, the identifiable representation, came out the most linearly related."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...io import atomic_folder, read_parquet_metadata, write_json, write_parquet
from ...io.provenance import models_provenance
from ...io.representations import columns_of, embeddings_frame, read_embeddings
from ...measures.alignment import alignment_measures
from ...measures.cca import mean_cca_over_rank
from ...measures.extra import svcca_from_bases
from ...measures.null import NullSettings, aggregate_null, null_stats, permutations
from ...measures.pairs import all_pairs
from ...measures.prepared import (
    DEFAULT_CONVENTIONS,
    AlignmentView,
    alignment_view,
    permuted_view,
)

INDEX = "layers.json"
LAYER_COLUMNS = ["model_a", "model_b", "slot", "layer_a", "layer_b", "head_input", "measure",
                 "components", "components_used", "value", "warning"]
SUMMARY_COLUMNS = ["slot", "layer", "head_input", "measure", "components", "pairs", "mean",
                   "min", "max"]
NULL_COLUMNS = ["tau", "p", "calibrated"]  # beside `value`, with a null
BEST_COLUMNS = ["model_a", "model_b", "measure", "slots", "best_slot", "value", *NULL_COLUMNS]
BEST_MEASURES = ("cka", "mcca")  # one value a slot, over each pair's whole widths


def layer_file(index: int) -> str:
    return f"layer{index}.parquet"


def write_layers(folder: str | Path, states: Mapping[int, np.ndarray], labels: np.ndarray,
                 preds: np.ndarray, info: Mapping[str, Any]) -> None:
    """Each layer's states as a parquet in the embeddings format (`repdist compare` reads it),
    then the index (`info`: count, head_input, provenance); the folder appears only complete."""
    with atomic_folder(folder) as tmp:
        for index, f in sorted(states.items()):
            write_parquet(tmp / layer_file(index), embeddings_frame(f, labels, preds),
                          {**info, "layer": int(index), "width": int(f.shape[1]),
                           "split": "test"})
        write_json(tmp / INDEX, {**info, "layers": sorted(int(i) for i in states),
                                 "widths": {str(i): int(f.shape[1]) for i, f in states.items()}})


@dataclass(frozen=True)
class LayerSet:
    """One model's layers on disk and its index (layers written, count, head_input)."""

    name: str
    folder: Path
    index: Mapping[str, Any]

    @property
    def count(self) -> int:
        return int(self.index["count"])

    @property
    def head_input(self) -> int:
        return int(self.index["head_input"])

    @property
    def written(self) -> list[int]:
        return [int(i) for i in self.index["layers"]]

    def states(self, layer: int) -> np.ndarray:
        return columns_of(read_embeddings(self.folder / layer_file(layer)), "f_")


def read_layer_set(name: str, folder: str | Path) -> LayerSet:
    folder = Path(folder)
    return LayerSet(name, folder, json.loads((folder / INDEX).read_text()))


def layer_slots(models: Sequence[LayerSet], selected: str | Sequence[int]) -> list[list[int]]:
    """Per model, its layer at each slot. With `lm.layers: all`, slot i of the shallowest model's
    S is layer round(i (L_m - 1) / (S - 1)) of a model with L_m: the first slot is the embeddings
    and the last the head's input. With a list, slot k is each model's k-th listed layer."""
    if selected != "all":
        slots = [m.written for m in models]
        if len({len(s) for s in slots}) > 1:
            raise ValueError("lm.layers names different numbers of layers in these models "
                             f"({', '.join(f'{m.name}: {s}' for m, s in zip(models, slots))}): "
                             "indices that coincide in a shallow model count once")
        return slots
    shallow = min(m.count for m in models)
    if shallow == 1:
        return [[m.head_input] for m in models]
    return [[round(i * (m.count - 1) / (shallow - 1)) for i in range(shallow)] for m in models]


def pair_rows(a: AlignmentView, b: AlignmentView,
              components: Sequence[int]) -> list[dict[str, Any]]:
    """SVCCA at each component count (capped by the widths, then by the ranks: used), linear CKA
    and m_CCA of one pair of layers, prepared as the measures prepare f (alignment_view)."""
    width = min(a.x.shape[1], b.x.shape[1])
    rank = min(a.basis.shape[1], b.basis.shape[1])
    rows = []
    for k in sorted({min(int(k), width) for k in components}):
        used = min(k, rank)
        rows.append({"measure": "svcca", "components": k, "components_used": used,
                     "value": svcca_from_bases(a.basis, b.basis, k, k),
                     "warning": "" if used == k else f"rank {rank} < {k} components"})
    cka = alignment_measures(a, b, frozenset({"cka_f"}), DEFAULT_CONVENTIONS, [])["cka_f"]
    rows.append({"measure": "cka", "components": width, "components_used": width,
                 "value": cka, "warning": ""})
    # the directions both vary in (a final LayerNorm's f: M - 1), as compare's mcca_f
    mcca = mean_cca_over_rank(a.basis, b.basis, width)
    rows.append({"measure": "mcca", "components": width, "components_used": mcca.components,
                 "value": mcca.value, "warning": mcca.reason})
    return rows


def null_draws(a: AlignmentView, b: AlignmentView, counts: Sequence[int],
               null: NullSettings) -> np.ndarray:
    """pair_rows' values with b's inputs reordered, one row per draw, the same at every slot."""
    orders, count, _ = permutations(len(b.x), null.permutations, null.seed)
    draws = [[row["value"] for row in pair_rows(a, permuted_view(b, order), counts)]
             for order in orders]
    return np.array(draws, dtype=np.float64).reshape(count, -1)


@dataclass(frozen=True)
class LayerTables:
    """The layer table and, with a null, each pair's best slot calibrated as a whole."""

    table: pd.DataFrame
    best: pd.DataFrame


def layer_tables(models: Sequence[LayerSet], selected: str | Sequence[int],
                 components: Sequence[int], null: NullSettings | None = None) -> LayerTables:
    """Every pair at every slot, one row per measure and component count (capped by the slot's
    narrowest width); with a null, each row's chance level and the best slots (_best_slots)."""
    if len(models) < 2:
        raise ValueError(f"need at least two models to compare layer by layer, got {len(models)}")
    slots = layer_slots(models, selected)
    rows: list[dict[str, Any]] = []
    whole: dict[tuple[int, int, str], list[tuple[float, np.ndarray]]] = {}
    for slot in range(len(slots[0])):
        layers = [alignment_view(m.states(s[slot])) for m, s in zip(models, slots, strict=True)]
        narrowest = min(layer.x.shape[1] for layer in layers)
        counts = [min(int(k), narrowest) for k in components]
        for i, j in all_pairs(len(models)):
            la, lb = slots[i][slot], slots[j][slot]
            head = la == models[i].head_input and lb == models[j].head_input
            found = pair_rows(layers[i], layers[j], counts)
            if null is not None:
                draws = null_draws(layers[i], layers[j], counts, null)
                for c, row in enumerate(found):
                    row.update(zip(NULL_COLUMNS, null_stats(row["value"], draws[:, c],
                                                            null.alpha), strict=True))
                    if row["measure"] in BEST_MEASURES:
                        whole.setdefault((i, j, row["measure"]), []).append(
                            (row["value"], draws[:, c]))
            rows += [{"model_a": models[i].name, "model_b": models[j].name, "slot": slot,
                      "layer_a": la, "layer_b": lb, "head_input": head, **row} for row in found]
    columns = [*LAYER_COLUMNS, *(NULL_COLUMNS if null is not None else [])]
    return LayerTables(pd.DataFrame(rows, columns=columns),
                       _best_slots(models, whole, null))


def _best_slots(models: Sequence[LayerSet],
                whole: Mapping[tuple[int, int, str], list[tuple[float, np.ndarray]]],
                null: NullSettings | None) -> pd.DataFrame:
    """Per pair and measure, the best slot's value against the maximum over slots inside each
    draw (Gröger et al.'s Algorithm 2), so that searching over layers is paid for."""
    rows = []
    for (i, j, measure), per_slot in whole.items():
        assert null is not None
        observed = np.array([value for value, _ in per_slot])
        best, *chance = aggregate_null(observed, np.stack([d for _, d in per_slot], axis=1),
                                       null.alpha)
        rows.append({"model_a": models[i].name, "model_b": models[j].name, "measure": measure,
                     "slots": len(per_slot), "best_slot": int(np.nanargmax(observed)),
                     "value": best, **dict(zip(NULL_COLUMNS, chance, strict=True))})
    return pd.DataFrame(rows, columns=BEST_COLUMNS)


def layer_table(models: Sequence[LayerSet], selected: str | Sequence[int],
                components: Sequence[int], null: NullSettings | None = None) -> pd.DataFrame:
    """layer_tables' table alone."""
    return layer_tables(models, selected, components, null).table


def layer_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean, min and max over pairs per slot, measure and component count (and the null's
    means); CKA and m_CCA: one row per slot, `components` the narrowest pair's."""
    keys = ["slot", "measure", "components"]
    table = table.copy()
    whole = table["measure"] != "svcca"
    table.loc[whole, "components"] = (table[whole].groupby(["slot", "measure"])["components"]
                                      .transform("min"))
    grouped = table.groupby(keys, sort=True)
    out = grouped["value"].agg(pairs="count", mean="mean", min="min", max="max").reset_index()
    first = grouped[["layer_a", "head_input"]].first().reset_index()
    out = out.merge(first, on=keys).rename(columns={"layer_a": "layer"})
    chance = [c for c in ("tau", "calibrated") if c in table]  # with a null: their means
    if chance:
        out = out.merge(grouped[chance].mean().add_suffix("_mean").reset_index(), on=keys)
    return out[[*SUMMARY_COLUMNS, *(f"{c}_mean" for c in chance)]]


# the layer files' metadata that is one layer's or one model's (in the table's `models`)
LAYER_OWN_KEYS = ("layer", "width", "seed", "name", "count", "head_input")


def layers_metadata(models: Sequence[LayerSet], selected: Any,
                    components: Sequence[int]) -> dict[str, Any]:
    """The layer table's metadata: models, settings, provenance (differing keys per model)."""
    metas = {m.name: {k: v for k, v in read_parquet_metadata(
        m.folder / layer_file(m.written[0])).items() if k not in LAYER_OWN_KEYS}
        for m in models}
    return {**models_provenance(metas),
            "models": [{"name": m.name, "count": m.count, "head_input": m.head_input}
                       for m in models],
            "layers": selected, "components": list(components)}
