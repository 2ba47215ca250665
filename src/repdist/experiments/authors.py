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


def extract_cifar(
    checkpoints: Sequence[str | Path],
    data: Any,
    outputs: Sequence[Mapping[str, str | Path]],
    eval_batch_size: int,
    provenance_meta: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """The authors' ResNetCIFAR10 checkpoints, each written as our CIFAR models' files:
    eval-mode embeddings of the test and train images, unembeddings, and metrics (loss and
    accuracy measured here in eval mode: their train-mode losses were not shipped)."""
    from ..authors import load_cifar_model
    from ..data.cifar10 import normalise
    from ..devices import resolve_device

    device = resolve_device("auto", "cifar10.device")
    codes = torch.from_numpy(label_codes(np.arange(10), 10)).to(device)
    rows = []
    for path, out in zip(checkpoints, outputs, strict=True):
        name = parse_name(path)
        model = load_cifar_model(path).to(device)
        with torch.no_grad():
            g = model.unembed(codes).double().cpu().numpy()
        meta = {"experiment": "authors_cifar10", "source": Path(path).name,
                "sha256": sha256sum(path), "standin_data": data.standin, "K": 10,
                "M": name.rep_dim, "width": name.width, "steps": name.steps,
                **provenance_meta, "seed": name.seed}
        metrics: dict[str, Any] = {}
        for split, images, labels in (("test", data.test_images, data.test_labels),
                                      ("train", data.train_images, data.train_labels)):
            x = normalise(images)
            parts = []
            with torch.no_grad():
                for i in range(0, len(x), eval_batch_size):
                    batch = torch.from_numpy(x[i:i + eval_batch_size]).to(device)
                    parts.append(model.embed(batch).double().cpu().numpy())
            f = np.concatenate(parts)
            logits = f @ g.T
            log_probs = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
            preds = log_probs.argmax(axis=1)
            write_parquet(out[f"embeddings_{split}"], embeddings_frame(f, labels, preds),
                          {**meta, "split": split})
            metrics[f"final_{split}_loss_eval"] = float(
                -log_probs[np.arange(len(labels)), labels].mean())
            metrics[f"{split}_accuracy"] = float((preds == labels).mean())
        write_parquet(out["unembeddings"], unembeddings_frame(g), {**meta, "split": "labels"})
        metrics["final_test_loss"] = metrics["final_test_loss_eval"]
        metrics["loss_note"] = ("measured here in eval mode; the authors' train-mode test "
                                "losses were not shipped with their checkpoints")
        write_json(out["metrics"], {**metrics, **meta})
        rows.append({**metrics, **meta})
    return rows


def fetch_cifar(record_url: str, names: Sequence[str], folder: str | Path,
                timeout: float = 600.0) -> None:
    """The authors' CIFAR checkpoints from their Zenodo record, each checked against the
    record's checksum, written atomically."""
    import shutil
    import urllib.request

    from ..authors import verify_zenodo_checksum, zenodo_files

    folder = Path(folder)
    for name, info in zenodo_files(record_url, names).items():
        target = folder / name
        with atomic_path(target) as tmp:
            with urllib.request.urlopen(info["url"], timeout=timeout) as r, open(tmp, "wb") as fh:
                shutil.copyfileobj(r, fh)
            verify_zenodo_checksum(tmp, info["checksum"])


def write_cifar_standin(folder: str | Path, seeds: Sequence[int], base_width: int) -> list[Path]:
    """ResNetCIFAR10 checkpoints in the authors' format and naming, made here (our
    initialisation at `base_width`): for offline tests of the authors' CIFAR branch."""
    from ..authors import cifar_name
    from ..models.resnet import build_cifar_model

    paths = []
    for seed in seeds:
        model = build_cifar_model(seed + 1000, 2, 10, 128, base_width)  # not our seed's init
        path = Path(folder) / str(cifar_name(seed))
        write_atomically(path, {n: t.detach().clone() for n, t in model.state_dict().items()})
        paths.append(path)
    return paths
