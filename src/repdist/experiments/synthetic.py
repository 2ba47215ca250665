"""Synthetic experiments (spec Part B §1.1, §3, §5.1): train a configuration's seeds together,
write each model and its representations, then compare every pair of seeds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.radial import label_codes, make_radial
from ..io import atomic_path, provenance, write_json, write_parquet
from ..models.mlp import build_synthetic_model
from ..models.stacked import StackedModelClass
from ..representations import embeddings_frame, unembeddings_frame
from ..training.loop import TrainConfig, train


@dataclass(frozen=True)
class SyntheticModelConfig:
    num_classes: int
    width: int
    fix_g: float
    fix_f: float
    seeds: Sequence[int]
    rep_dim: int = 2
    n_train: int = 20_000
    n_test: int = 2_000
    train_data_seed: int = 0
    test_data_seed: int = 1


@dataclass(frozen=True)
class SeedPaths:
    model: Path
    metrics: Path
    embeddings: Path
    unembeddings: Path


def train_configuration(
    model_cfg: SyntheticModelConfig,
    train_cfg: TrainConfig,
    paths: Sequence[SeedPaths],
    run_config: Mapping[str, Any],
    checkpoint: str | Path | None = None,
) -> None:
    """Train all seeds of one configuration in one stacked model, then write every seed's files."""
    if len(paths) != len(model_cfg.seeds):
        raise ValueError(f"{len(paths)} output sets for {len(model_cfg.seeds)} seeds")
    k = model_cfg.num_classes
    train_data = make_radial(model_cfg.n_train, k, model_cfg.train_data_seed)
    test_data = make_radial(model_cfg.n_test, k, model_cfg.test_data_seed)
    codes = label_codes(np.arange(k), k)
    models = [
        build_synthetic_model(s, k, model_cfg.width, model_cfg.rep_dim, model_cfg.fix_g,
                              model_cfg.fix_f)
        for s in model_cfg.seeds
    ]
    stack = StackedModelClass(models)
    log, finals = train(
        stack, train_data.x, train_data.labels, test_data.x, test_data.labels, codes, train_cfg,
        checkpoint=checkpoint,
    )
    stack.eval()
    with torch.no_grad():
        x = torch.from_numpy(test_data.x)
        f_all = stack.embed(x).double().numpy()  # (S, N, M)
        g_all = stack.unembed(torch.from_numpy(codes)).double().numpy()  # (S, K, M)
    base_meta = {
        "experiment": "synthetic",
        "K": k,
        "M": model_cfg.rep_dim,
        "width": model_cfg.width,
        "fix_g": model_cfg.fix_g,
        "fix_f": model_cfg.fix_f,
        "steps": train_cfg.steps,
        "split": "test",
        **provenance(run_config),
    }
    for i, (seed, p) in enumerate(zip(model_cfg.seeds, paths, strict=True)):
        preds = np.argmax(f_all[i] @ g_all[i].T, axis=1)
        meta = {**base_meta, "seed": int(seed)}
        write_parquet(p.embeddings, embeddings_frame(f_all[i], test_data.labels, preds), meta)
        write_parquet(p.unembeddings, unembeddings_frame(g_all[i]), meta)
        write_json(
            p.metrics,
            {
                "seed": int(seed),
                "steps": train_cfg.steps,
                "train_loss_steps": log.train_steps,
                "train_loss": [v[i] for v in log.train_loss],
                "test_loss_steps": log.test_steps,
                "test_loss": [v[i] for v in log.test_loss],
                "final_test_loss": finals["test_loss"][i],
                "test_accuracy": finals["test_accuracy"][i],
                "wall_time_s": finals["wall_time_s"],
                "wall_time_note": f"one job trained {len(paths)} seeds together",
                **meta,
            },
        )
        with atomic_path(p.model) as tmp:
            torch.save(stack.state_dict_of(i), tmp)
