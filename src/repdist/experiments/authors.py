"""The authors' models in the DAG: their shipped SmallMLP checkpoints extracted into the same
parquet files as ours (then compared pair by pair as ours are, and seed by seed with ours in
`experiments.retrace`); our initialisation checked against theirs; a stand-in in their format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..authors import (
    load_state_dict,
    load_synthetic_model,
    parse_name,
    sha256sum,
    synthetic_name,
    verify,
    write_checksums,
)
from ..data.radial import label_codes, make_radial
from ..io import atomic_path, write_json, write_parquet
from ..models.mlp import build_synthetic_model
from ..representations import embeddings_frame, unembeddings_frame
from ..training.checkpoint import write_atomically
from ..training.loop import TrainConfig, train

def extract_synthetic(
    checkpoints: Sequence[str | Path],
    checksums: Mapping[str, str],
    outputs: Sequence[Mapping[str, str | Path]],
    n_test: int,
    test_data_seed: int,
    provenance_meta: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """Verify and read the authors' trained checkpoints of one configuration and write, per
    seed, what our training writes: embeddings/unembeddings of the test set and metrics (the
    authors shipped no metrics: accuracy and loss are measured here, as for ours)."""
    rows = []
    for path, out in zip(checkpoints, outputs, strict=True):
        verify(path, checksums)
        name = parse_name(path)
        model = load_synthetic_model(path)
        k = name.num_classes
        test = make_radial(n_test, k, test_data_seed)
        codes = torch.from_numpy(label_codes(np.arange(k), k))
        with torch.no_grad():
            f = model.embed(torch.from_numpy(test.x)).double().numpy()
            g = model.unembed(codes).double().numpy()
        log_probs = f @ g.T
        log_probs = log_probs - np.logaddexp.reduce(log_probs, axis=1, keepdims=True)
        preds = log_probs.argmax(axis=1)
        meta = {"experiment": "authors_synthetic", "source": Path(path).name,
                "sha256": checksums[Path(path).name], "K": k, "M": name.rep_dim,
                "width": name.width, "fix_g": name.fix_g, "fix_f": name.fix_f,
                "steps": name.steps, "split": "test", **provenance_meta, "seed": name.seed}
        write_parquet(out["embeddings"], embeddings_frame(f, test.labels, preds), meta)
        write_parquet(out["unembeddings"], unembeddings_frame(g), meta)
        metrics = {"final_test_loss": float(-log_probs[np.arange(len(preds)), test.labels].mean()),
                   "test_accuracy": float((preds == test.labels).mean()), **meta}
        write_json(out["metrics"], metrics)
        rows.append(metrics)
    return rows


def initialisation_table(untrained: Sequence[str | Path],
                         checksums: Mapping[str, str]) -> pd.DataFrame:
    """Our initialisation (torch.manual_seed(s), then f, then g) against each of the authors'
    untrained checkpoints: the largest absolute weight difference, and whether it is bit-exact."""
    rows = []
    for path in untrained:
        verify(path, checksums)
        name = parse_name(path)
        theirs = load_state_dict(path)
        ours = build_synthetic_model(name.seed, name.num_classes, name.width, name.rep_dim,
                                     name.fix_g, name.fix_f).state_dict()
        diff = max(float((ours[k] - theirs[k]).abs().max()) for k in theirs)
        rows.append({"K": name.num_classes, "width": name.width, "seed": name.seed,
                     "date": name.date, "max_abs_diff": diff,
                     "bit_exact": all(torch.equal(ours[k], theirs[k]) for k in theirs),
                     "file": Path(path).name})
    return pd.DataFrame(rows).sort_values(["K", "width", "seed"], ignore_index=True)


def write_standin(
    folder: str | Path,
    configurations: Sequence[tuple[int, int]],
    seeds: Sequence[int],
    train_cfg: TrainConfig,
    n_train: int,
    train_data_seed: int,
) -> dict[str, str]:
    """Checkpoints in exactly the authors' format and naming, for offline tests and `make
    quick`: for each (K, width) and seed, the initial weights (untrained) and a model trained
    briefly with the clean protocol (so it differs from ours). Writes SHA256SUMS.tsv; returns it."""
    folder = Path(folder)
    checksums = {}
    for k, width in configurations:
        data = make_radial(n_train, k, train_data_seed)
        codes = label_codes(np.arange(k), k)
        for seed in seeds:
            model = build_synthetic_model(seed, k, width, 2, 0.0, 0.0)
            for trained in (False, True):
                if trained:
                    train(model, data.x, data.labels, data.x[:200], data.labels[:200], codes,
                          train_cfg)
                path = folder / str(synthetic_name(k, seed, width, trained=trained))
                write_atomically(path, {n: t.detach().clone() for n, t in
                                        model.state_dict().items()})
                checksums[path.name] = sha256sum(path)
    write_checksums(folder / "SHA256SUMS.tsv", checksums)
    return checksums


def fetch(url_base: str, names: Sequence[str], folder: str | Path,
          checksums: Mapping[str, str], timeout: float = 60.0) -> None:
    """Download the authors' files (url_base/name) into `folder`, each verified, atomically."""
    import shutil
    import urllib.request

    folder = Path(folder)
    for name in names:
        target = folder / name
        if target.exists():
            try:
                verify(target, checksums)
                continue
            except ValueError:
                target.unlink()
        with atomic_path(target) as tmp:
            with urllib.request.urlopen(f"{url_base.rstrip('/')}/{name}", timeout=timeout) as r, \
                    open(tmp, "wb") as fh:
                shutil.copyfileobj(r, fh)
            verify(tmp, checksums, name)  # a bad download never takes the file's name
