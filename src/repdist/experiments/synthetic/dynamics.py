"""Training dynamics (Roeder et al.'s question, beyond the paper): how the measures between
seeds evolve during training, for a synthetic configuration and Roeder's own simulation."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...io import provenance
from ...measures import CompareSettings, PreparedModel, prepare
from ...measures.null import null_keys
from ...measures.pairs import Pair, all_pairs, compare_pairs
from ...models.extract import extract
from ...models.stacked import StackedModelClass
from ...training.loop import RunOptions, TrainConfig, TrainData, TrainLog, train
from .training import SyntheticModelConfig, synthetic_data, synthetic_stack

SNAPSHOT_COLUMNS = ["step", "seed_a", "seed_b", "kl", "d_llv", "d_fg", "mcca_f", "d_logit",
                    "warning"]


def training_dynamics(model_cfg: SyntheticModelConfig, train_cfg: TrainConfig,
                      snapshot_steps: Sequence[int],
                      measure_kwargs: Mapping[str, Any]) -> pd.DataFrame:
    """Every pair of seeds compared at each snapshot step (after that many optimisation steps)."""
    run = train_with_snapshots(synthetic_stack([model_cfg]), synthetic_data(model_cfg),
                               model_cfg.seeds, train_cfg, snapshot_steps, measure_kwargs)
    return run.snapshots


@dataclass(frozen=True)
class SnapshotRun:
    """A stack trained with snapshots: the pairs table, and the run's curves and finals."""

    snapshots: pd.DataFrame
    log: TrainLog
    finals: dict[str, Any]


def train_with_snapshots(stack: StackedModelClass, data: TrainData, seeds: Sequence[int],
                         train_cfg: TrainConfig, snapshot_steps: Sequence[int],
                         measure_kwargs: Mapping[str, Any]) -> SnapshotRun:
    """Train `stack` (its models `seeds`, in order) in place, with Snapshots of every pair."""
    snapshots = Snapshots(lambda: extract(stack, data.test_x, data.codes), seeds,
                          snapshot_steps, measure_kwargs)
    return run_with_snapshots(stack, data, train_cfg, snapshots)


# what a snapshot records of a pair beyond compare()'s keys (its columns among `columns`)
PairExtra = Callable[[PreparedModel, PreparedModel], Mapping[str, Any]]


class Snapshots:
    """At each snapshot step (the loop's `on_step`), `representations()` compared for the given
    pairs (default every pair): step, seed_a, seed_b, then compare()'s keys (and its null's) or
    `extra`'s. Resumable: the rows so far travel with the run's checkpoint."""

    def __init__(self, representations: Callable[[], tuple[np.ndarray, np.ndarray]],
                 seeds: Sequence[int], steps: Sequence[int], measure_kwargs: Mapping[str, Any],
                 pairs: Sequence[Pair] | None = None,
                 columns: Sequence[str] = tuple(SNAPSHOT_COLUMNS),
                 extra: PairExtra | None = None) -> None:
        self.representations, self.seeds = representations, [int(s) for s in seeds]
        self.wanted = {int(s) for s in steps}
        self.settings = CompareSettings(**measure_kwargs)
        self.pairs = all_pairs(len(self.seeds)) if pairs is None else [tuple(p) for p in pairs]
        self.columns = [*columns, *null_keys(self.settings.null, self.settings.selected)]
        self.extra = extra
        self.rows: list[dict[str, Any]] = []

    def __call__(self, done: int) -> None:
        if done not in self.wanted:
            return
        f_all, g_all = self.representations()
        prepared = [prepare(f, g) for f, g in zip(f_all, g_all, strict=True)]
        results = compare_pairs(prepared, self.settings, self.pairs)
        for (i, j), r in zip(self.pairs, results, strict=True):
            more = self.extra(prepared[i], prepared[j]) if self.extra is not None else {}
            self.rows.append({"step": done, "seed_a": self.seeds[i], "seed_b": self.seeds[j],
                              **{c: more[c] if c in more else r[c] for c in self.columns[3:]}})

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=self.columns)

    def state_dict(self) -> dict[str, Any]:
        return {"rows": list(self.rows)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rows = list(state["rows"])


def run_with_snapshots(stack: torch.nn.Module, data: TrainData, train_cfg: TrainConfig,
                       snapshots: Snapshots, options: RunOptions | None = None) -> SnapshotRun:
    """train() with `snapshots` taken along the way (and kept in the run's checkpoints)."""
    options = options or RunOptions()
    options = replace(options, on_step=snapshots,
                      resumables={**options.resumables, "snapshots": snapshots})
    log, finals = train(stack, data, train_cfg, options)
    return SnapshotRun(snapshots.table(), log, finals)


def snapshots_metadata(model_cfg: SyntheticModelConfig, protocol: str,
                       measure_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshots table's parquet metadata."""
    return {"experiment": "training_dynamics", "K": model_cfg.num_classes,
            "width": model_cfg.width, "seeds": list(model_cfg.seeds), "protocol": protocol,
            "measures": dict(measure_kwargs), **provenance(asdict(model_cfg))}
