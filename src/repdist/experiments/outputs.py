"""The files every model of the pipeline leaves: embeddings per split, unembeddings, metrics and
(for models trained here) the weights. Every model goes through `write_seed`, so a pairs step,
a figure or `repdist compare` reads any of them the same way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..io import write_json, write_parquet
from ..io.representations import embeddings_frame, unembeddings_frame


@dataclass(frozen=True)
class SeedFiles:
    """Where one model's outputs go; `embeddings` maps a split ("test", "train") to its table."""

    embeddings: Mapping[str, Path]
    unembeddings: Path
    metrics: Path
    model: Path | None = None


def seed_files(output: Any) -> list[SeedFiles]:
    """Each seed's files from a training rule's outputs (`models`, `metrics`, `embeddings` of
    the test inputs, `unembeddings`: one path per seed, in the same order)."""
    return [SeedFiles({"test": Path(e)}, Path(u), Path(me), Path(m))
            for m, me, e, u in zip(output.models, output.metrics, output.embeddings,
                                   output.unembeddings, strict=True)]


def train_test_seed_files(output: Any) -> list[SeedFiles]:
    """Each model's files from a rule's outputs of CIFAR_MODEL_TABLES (`embeddings_test`,
    `embeddings_train`, `unembeddings`, `metrics`, and `models` where it writes weights: one
    path per model, in the same order; a single path where the rule writes one model)."""

    def listed(files: Any) -> list[Path]:
        return [Path(files)] if isinstance(files, str) else [Path(f) for f in files]

    models = listed(output.models) if "models" in output.keys() else None
    test, train = listed(output.embeddings_test), listed(output.embeddings_train)
    unembeddings, metrics = listed(output.unembeddings), listed(output.metrics)
    return [SeedFiles({"test": e, "train": t}, u, me, None if models is None else models[i])
            for i, (e, t, u, me) in enumerate(zip(test, train, unembeddings, metrics, strict=True))]


@dataclass(frozen=True)
class SeedRepresentations:
    """One model's g (K x M), and per split its f (N x M) and the inputs' labels."""

    g: np.ndarray
    f: Mapping[str, np.ndarray] = field(default_factory=dict)
    labels: Mapping[str, np.ndarray] = field(default_factory=dict)


def predictions(f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The most likely label of each input: argmax_y f(x)^T g(y)."""
    return np.argmax(f @ g.T, axis=1)


def write_seed(files: SeedFiles, reps: SeedRepresentations, meta: Mapping[str, Any],
               metrics: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> None:
    """Every file of one model, each atomically; `meta` (provenance, K, M, seed ...) goes into
    each table's metadata (with its split) and into the metrics."""
    for split, path in files.embeddings.items():
        f = reps.f[split]
        frame = embeddings_frame(f, reps.labels[split], predictions(f, reps.g))
        write_parquet(path, frame, {**meta, "split": split})
    write_parquet(files.unembeddings, unembeddings_frame(reps.g), {**meta, "split": "labels"})
    write_json(files.metrics, {**metrics, **meta})
    if state is not None:
        if files.model is None:
            raise ValueError(f"{files.metrics}: weights given but no model file to write them to")
        from ..training.checkpoint import write_atomically

        write_atomically(files.model, state)
