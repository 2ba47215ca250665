"""Roeder et al. (2021) §5.1 and App. A.2, the simulation the NeurIPS paper builds on: seeds of
a deeper MLP classifier on angle-labelled Gaussian points (with and without 20 noise inputs),
compared pair by pair at dense snapshots: m_CCA (their Fig. 2b) and, beyond Roeder, d_LLV and
d_{f,g}. Fig. 2c reads the seed files written here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...data.radial import label_codes
from ...data.roeder import make_roeder
from ...io import provenance
from ...models.extract import extract
from ...models.mlp import build_roeder_model
from ...models.stacked import StackedModelClass
from ...training.loop import TrainConfig, TrainData
from ..synthetic.dynamics import train_with_snapshots
from ..outputs import SeedFiles, SeedRepresentations, write_seed
from ..synthetic.training import seed_metrics


@dataclass(frozen=True)
class RoederModelConfig:
    """One data variant's models, from config.yaml's `roeder`."""

    num_classes: int
    noise_dims: int
    width: int
    depth: int
    g_depth: int
    rep_dim: int
    seeds: Sequence[int]
    n_train: int
    n_test: int
    train_data_seed: int
    test_data_seed: int


def roeder_data(cfg: RoederModelConfig) -> TrainData:
    """The variant's training and test sets (make_roeder) and the K label codes g takes."""
    k = cfg.num_classes
    train_d = make_roeder(cfg.n_train, cfg.train_data_seed, k, cfg.noise_dims)
    test_d = make_roeder(cfg.n_test, cfg.test_data_seed, k, cfg.noise_dims)
    return TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels,
                     label_codes(np.arange(k), k))


def roeder_stack(cfg: RoederModelConfig) -> StackedModelClass:
    """Every seed of the variant, seed s initialised by torch.manual_seed(s)."""
    return StackedModelClass([
        build_roeder_model(seed, cfg.num_classes, 2 + cfg.noise_dims, cfg.width, cfg.depth,
                           cfg.rep_dim, cfg.g_depth)
        for seed in cfg.seeds
    ])


def train_roeder(cfg: RoederModelConfig, train_cfg: TrainConfig, snapshot_steps: Sequence[int],
                 measure_kwargs: Mapping[str, Any], files: Sequence[SeedFiles],
                 run_config: Mapping[str, Any]) -> pd.DataFrame:
    """Train the seeds with snapshots; write each seed's files; return the snapshots."""
    if len(files) != len(cfg.seeds):
        raise ValueError(f"{len(files)} output sets for {len(cfg.seeds)} seeds")
    data = roeder_data(cfg)
    stack = roeder_stack(cfg)
    run = train_with_snapshots(stack, data, cfg.seeds, train_cfg, snapshot_steps,
                               measure_kwargs)
    f_all, g_all = extract(stack, data.test_x, data.codes)
    shared = provenance(run_config)
    for i, (seed, out) in enumerate(zip(cfg.seeds, files, strict=True)):
        meta = {"experiment": "roeder", "K": cfg.num_classes, "M": cfg.rep_dim,
                "noise_dims": cfg.noise_dims, "width": cfg.width, "depth": cfg.depth,
                "steps": train_cfg.steps, "protocol": train_cfg.protocol, **shared,
                "seed": int(seed)}
        reps = SeedRepresentations(g_all[i], {"test": f_all[i]}, {"test": data.test_labels})
        metrics = {**seed_metrics(run.log, run.finals, i),
                   "wall_time_note": f"one job trained {len(cfg.seeds)} models together"}
        write_seed(out, reps, meta, metrics, stack.state_dict_of(i))
    return run.snapshots


def roeder_metadata(cfg: RoederModelConfig, train_cfg: TrainConfig,
                    measure_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshots table's parquet metadata."""
    return {"experiment": "roeder", "noise_dims": cfg.noise_dims, "lr": train_cfg.lr,
            "seeds": list(cfg.seeds), "protocol": train_cfg.protocol,
            "measures": dict(measure_kwargs), **provenance(asdict(cfg))}
