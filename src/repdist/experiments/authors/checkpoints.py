"""The authors' models in the DAG: their shipped SmallMLP checkpoints extracted into the same
parquet files as ours (then compared as ours are, and seed by seed with ours in
`ours_vs_authors`); our initialisation checked against theirs; stand-ins in their format."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...data.radial import label_codes, make_radial
from ...io import file_digest
from ...io.download import DownloadError, download, zenodo_files
from ...measures import log_likelihoods
from ...models.authors import (load_state_dict, load_synthetic_model, parse_name,
                               synthetic_name, verify, write_checksums)
from ...models.extract import extract
from ...models.mlp import build_synthetic_model
from ...training.checkpoint import write_atomically
from ...training.loop import TrainConfig, TrainData, train
from ..outputs import SeedFiles, SeedRepresentations, predictions, write_seed


def extract_synthetic(checkpoints: Sequence[str | Path], checksums: Mapping[str, str],
                      files: Sequence[SeedFiles], n_test: int, test_data_seed: int,
                      provenance_meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Verify and read the authors' trained checkpoints of one configuration and write, per seed,
    what our training writes (metrics measured here: the authors shipped none)."""
    rows = []
    for path, out in zip(checkpoints, files, strict=True):
        verify(path, checksums)
        name = parse_name(path)
        k = name.num_classes
        test = make_radial(n_test, k, test_data_seed)
        f, g = extract(load_synthetic_model(path), test.x, label_codes(np.arange(k), k))
        meta = {"experiment": "authors_synthetic", "source": Path(path).name,
                "sha256": checksums[Path(path).name], "K": name.num_classes, "M": name.rep_dim,
                "width": name.width, "fix_g": name.fix_g, "fix_f": name.fix_f,
                "steps": name.steps, **provenance_meta, "seed": name.seed}
        metrics = eval_metrics(f, g, test.labels, "test")
        metrics["final_test_loss"] = metrics.pop("final_test_loss_eval")
        write_seed(out, SeedRepresentations(g, {"test": f}, {"test": test.labels}), meta, metrics)
        rows.append({**metrics, **meta})
    return rows


def eval_metrics(f: np.ndarray, g: np.ndarray, labels: np.ndarray, split: str) -> dict[str, float]:
    """Mean NLL and accuracy of a model's representations on one split."""
    loglik = log_likelihoods(f, g)
    return {f"final_{split}_loss_eval": float(-loglik[np.arange(len(labels)), labels].mean()),
            f"{split}_accuracy": float((predictions(f, g) == labels).mean())}


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


def write_standin(folder: str | Path, configurations: Sequence[tuple[int, int]],
                  seeds: Sequence[int], train_cfg: TrainConfig, n_train: int,
                  train_data_seed: int) -> dict[str, str]:
    """Checkpoints in the authors' format and naming, for offline tests and `make quick`: per
    (K, width) and seed, the initial weights and a model trained briefly with the clean
    protocol (so it differs from ours); writes and returns SHA256SUMS.tsv."""
    folder = Path(folder)
    checksums = {}
    for k, width in configurations:
        data = make_radial(n_train, k, train_data_seed)
        briefly = TrainData(data.x, data.labels, data.x[:200], data.labels[:200],
                            label_codes(np.arange(k), k))
        for seed in seeds:
            model = build_synthetic_model(seed, k, width, 2, 0.0, 0.0)
            for trained in (False, True):
                if trained:
                    train(model, briefly, train_cfg)
                path = folder / str(synthetic_name(k, seed, width, trained=trained))
                write_atomically(path, {n: t.detach().clone() for n, t in
                                        model.state_dict().items()})
                checksums[path.name] = file_digest(path)
    write_checksums(folder / "SHA256SUMS.tsv", checksums)
    return checksums


def fetch(url_base: str, names: Sequence[str], folder: str | Path,
          checksums: Mapping[str, str], timeout: float = 60.0) -> None:
    """Download the authors' files (url_base/name) into `folder`, each verified; a file already
    there and intact is kept, a corrupt one fetched again."""
    folder = Path(folder)
    for name in names:
        target = folder / name
        if target.exists():
            try:
                verify(target, checksums)
                continue
            except ValueError:
                target.unlink()
        download(f"{url_base.rstrip('/')}/{name}", target, f"sha256:{checksums[name]}", timeout)


def extract_cifar(checkpoints: Sequence[str | Path], data: Any, files: Sequence[SeedFiles],
                  eval_batch_size: int, provenance_meta: Mapping[str, Any],
                  device: str = "auto") -> list[dict[str, Any]]:
    """The authors' ResNetCIFAR10 checkpoints, each written as our CIFAR models' files on
    `device`, its metrics measured here in eval mode (their train-mode losses were not shipped)."""
    from ...data.cifar10 import normalise
    from ...models.authors import load_cifar_model
    from ...training.devices import resolve_device

    torch_device = resolve_device(device, "cifar10.device")
    codes = label_codes(np.arange(10), 10)
    splits = {"test": (data.test_images, data.test_labels),
              "train": (data.train_images, data.train_labels)}
    rows = []
    for path, out in zip(checkpoints, files, strict=True):
        name = parse_name(path)
        model = load_cifar_model(path).to(torch_device)
        meta = {"experiment": "authors_cifar10", "source": Path(path).name,
                "sha256": file_digest(path), "standin_data": data.standin, "K": 10,
                "M": name.rep_dim, "width": name.width, "steps": name.steps,
                **provenance_meta, "seed": name.seed}
        reps = {split: extract(model, normalise(images), codes, eval_batch_size)
                for split, (images, _) in splits.items()}
        f, g = {split: r[0] for split, r in reps.items()}, reps["test"][1]
        metrics: dict[str, Any] = {}
        for split, (_, labels) in splits.items():
            metrics.update(eval_metrics(f[split], g, labels, split))
        metrics["final_test_loss"] = metrics["final_test_loss_eval"]
        metrics["loss_note"] = ("measured here in eval mode; the authors' train-mode test "
                                "losses were not shipped with their checkpoints")
        labels = {split: split_labels for split, (_, split_labels) in splits.items()}
        write_seed(out, SeedRepresentations(g, f, labels), meta, metrics)
        rows.append({**metrics, **meta})
    return rows


def fetch_cifar(record_url: str, names: Sequence[str], folder: str | Path,
                timeout: float = 600.0) -> None:
    """The authors' CIFAR checkpoints from their Zenodo record, each checked by its checksum."""
    try:
        files = zenodo_files(record_url, names)
    except DownloadError as err:
        raise DownloadError(f"{err}: set authors_models.cifar_root to a folder with the "
                            "checkpoints instead") from err
    for name, info in files.items():
        download(info["url"], Path(folder) / name, info["checksum"], timeout, "record's")


def write_cifar_standin(folder: str | Path, seeds: Sequence[int], base_width: int) -> list[Path]:
    """ResNetCIFAR10 checkpoints in the authors' format and naming, made here (our
    initialisation at `base_width`): for offline tests of the authors' CIFAR branch."""
    from ...models.authors import cifar_name
    from ...models.resnet import build_cifar_model

    paths = []
    for seed in seeds:
        model = build_cifar_model(seed + 1000, 2, 10, 128, base_width)  # not our seed's init
        path = Path(folder) / str(cifar_name(seed))
        write_atomically(path, {n: t.detach().clone() for n, t in model.state_dict().items()})
        paths.append(path)
    return paths
