"""Synthetic experiments (paper §5 and App. F.7; the original's `src/training/train.py` on the
radial data): a configuration's seeds trained together, each written as if trained alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...data.radial import label_codes, make_radial
from ...io import provenance
from ...models.extract import extract
from ...models.mlp import build_synthetic_model
from ...models.stacked import StackedModelClass
from ...training.loop import RunOptions, TrainConfig, TrainData, TrainLog, train
from ..outputs import SeedFiles, SeedRepresentations, write_seed


@dataclass(frozen=True)
class SyntheticModelConfig:
    """One synthetic configuration's models, from config.yaml's `synthetic`."""

    num_classes: int
    width: int
    fix_g: float
    fix_f: float
    seeds: Sequence[int]
    rep_dim: int
    n_train: int
    n_test: int
    train_data_seed: int
    test_data_seed: int


FINAL_LOSS_NOTE = {
    "paper": "final_test_loss: the last test loss logged during training, as the original "
             "recorded it (at the last multiple of eval_every; the mean of the batch means, "
             "batches of the training batch size); final_test_loss_eval: the whole test set "
             "after training",
    "clean": "final_test_loss = final_test_loss_eval: the whole test set after training",
}


def synthetic_data(cfg: SyntheticModelConfig) -> TrainData:
    """The radial training and test sets of a configuration, and its label codes."""
    k = cfg.num_classes
    train_d = make_radial(cfg.n_train, k, cfg.train_data_seed)
    test_d = make_radial(cfg.n_test, k, cfg.test_data_seed)
    return TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels,
                     label_codes(np.arange(k), k))


def synthetic_stack(cfgs: Sequence[SyntheticModelConfig]) -> StackedModelClass:
    """Every seed of every configuration, each initialised as the original's seed s."""
    return StackedModelClass([
        build_synthetic_model(seed, c.num_classes, c.width, c.rep_dim, c.fix_g, c.fix_f)
        for c in cfgs for seed in c.seeds
    ])


def stack_identity(model_cfgs: Sequence[SyntheticModelConfig]) -> dict[str, Any]:
    """A stack's checkpoint identity: the shared settings and every (fix_g, fix_f, seeds)."""
    member_keys = ("fix_g", "fix_f", "seeds")
    shared = {k: v for k, v in asdict(model_cfgs[0]).items() if k not in member_keys}
    members = [{"fix_g": c.fix_g, "fix_f": c.fix_f, "seeds": list(c.seeds)} for c in model_cfgs]
    return {"model": shared, "members": members}


def _check_stackable(model_cfgs: Sequence[SyntheticModelConfig],
                     files: Sequence[Sequence[SeedFiles]]) -> None:
    if len(files) != len(model_cfgs):
        raise ValueError(f"{len(files)} sets of output paths for {len(model_cfgs)} configurations")
    for cfg, cfg_files in zip(model_cfgs, files, strict=True):
        if len(cfg_files) != len(cfg.seeds):
            raise ValueError(f"{len(cfg_files)} output sets for {len(cfg.seeds)} seeds")
    shared = {replace(c, fix_g=0.0, fix_f=0.0, seeds=()) for c in model_cfgs}
    if len(shared) != 1:
        raise ValueError("configurations trained together may differ only in fix_g and fix_f")


def train_configurations(model_cfgs: Sequence[SyntheticModelConfig], train_cfg: TrainConfig,
                         files: Sequence[Sequence[SeedFiles]], run_config: Mapping[str, Any],
                         checkpoint: str | Path | None = None,
                         device: str | torch.device = "cpu", cuda_graph: bool = False) -> None:
    """Train every seed of configurations differing only in fix_g and fix_f as one stack: narrow
    nets spend a step mostly in per-op overhead, paid once. Write each seed as if trained alone."""
    _check_stackable(model_cfgs, files)
    data = synthetic_data(model_cfgs[0])
    stack = synthetic_stack(model_cfgs)
    log, finals = train(stack, data, train_cfg, RunOptions(
        checkpoint=checkpoint, device=device, identity=stack_identity(model_cfgs),
        cuda_graph=cuda_graph))
    f_all, g_all = extract(stack, data.test_x, data.codes)
    stack.cpu()
    shared = provenance(run_config)
    members = [(cfg, seed, out) for cfg, cfg_files in zip(model_cfgs, files, strict=True)
               for seed, out in zip(cfg.seeds, cfg_files, strict=True)]
    for i, (cfg, seed, out) in enumerate(members):
        meta = {"experiment": "synthetic", "K": cfg.num_classes, "M": cfg.rep_dim,
                "width": cfg.width, "fix_g": cfg.fix_g, "fix_f": cfg.fix_f,
                "steps": train_cfg.steps, "steps_total": finals["steps_total"],
                "protocol": train_cfg.protocol, **shared, "seed": int(seed)}
        reps = SeedRepresentations(g_all[i], {"test": f_all[i]}, {"test": data.test_labels})
        metrics = {**seed_metrics(log, finals, i), **speed_metrics(finals),
                   "loss_note": FINAL_LOSS_NOTE[train_cfg.protocol],
                   "wall_time_note": f"one job trained {len(members)} models together"}
        write_seed(out, reps, meta, metrics, stack.state_dict_of(i))


def seed_metrics(log: TrainLog, finals: Mapping[str, Any], i: int) -> dict[str, Any]:
    """Model i's curves and final values from a stack's training log and finals."""
    return {"train_loss_steps": log.train_steps, "train_loss": [v[i] for v in log.train_loss],
            "test_loss_steps": log.test_steps, "test_loss": [v[i] for v in log.test_loss],
            "final_test_loss": finals["test_loss"][i],
            "final_test_loss_eval": finals["test_loss_eval"][i],
            "test_accuracy": finals["test_accuracy"][i], "wall_time_s": finals["wall_time_s"]}


def speed_metrics(finals: Mapping[str, Any]) -> dict[str, Any]:
    """The job's speed, the same for every model: the steps this process ran (a resumed job
    counts from its checkpoint), their rate, and the CUDA graphs' captures and error."""
    speed = {"steps_run": finals["steps_run"],
             "steps_per_s": finals["steps_run"] / max(finals["wall_time_s"], 1e-9),
             "step_graphs": finals["step_graphs"]}
    if "step_graph_sizes" in finals:
        speed["step_graph_sizes"] = finals["step_graph_sizes"]
        speed["step_graph_error"] = finals["step_graph_error"]
    return speed
