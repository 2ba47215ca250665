"""Training dynamics (Roeder et al.'s question, beyond the paper): how m_CCA, d_LLV and d_{f,g}
between seeds evolve during training, for one synthetic configuration and for Roeder et al.'s
own simulation (experiments/roeder.py).

The seeds train together (stacked, as the paper-scale runs); at each snapshot step the stack's
test-set embeddings and unembeddings are compared for every pair of seeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from ..io import provenance
from ..measures import CompareSettings, prepare
from ..measures.pairs import all_pairs, compare_pairs
from ..models.extract import extract
from ..models.stacked import StackedModelClass
from ..training.loop import RunOptions, TrainConfig, TrainData, TrainLog, train
from .synthetic import SyntheticModelConfig, synthetic_data, synthetic_stack

SNAPSHOT_COLUMNS = ["step", "seed_a", "seed_b", "kl", "d_llv", "d_fg", "mcca_f", "d_logit",
                    "warning"]


def training_dynamics(
    model_cfg: SyntheticModelConfig,
    train_cfg: TrainConfig,
    snapshot_steps: Sequence[int],
    measure_kwargs: Mapping[str, Any],
) -> pd.DataFrame:
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


def train_with_snapshots(
    stack: StackedModelClass,
    data: TrainData,
    seeds: Sequence[int],
    train_cfg: TrainConfig,
    snapshot_steps: Sequence[int],
    measure_kwargs: Mapping[str, Any],
) -> SnapshotRun:
    """Train `stack` (its models being `seeds`, in order) in place; at each snapshot step the
    stack's test-set f and g are compared for every pair of seeds (SNAPSHOT_COLUMNS)."""
    settings = CompareSettings(**measure_kwargs)
    wanted = set(int(s) for s in snapshot_steps)
    rows: list[dict[str, Any]] = []

    def snapshot(done: int) -> None:
        if done not in wanted:
            return
        f_all, g_all = extract(stack, data.test_x, data.codes)
        prepared = [prepare(f, g) for f, g in zip(f_all, g_all, strict=True)]
        pairs = all_pairs(len(prepared))
        for (i, j), r in zip(pairs, compare_pairs(prepared, settings, pairs), strict=True):
            rows.append({"step": done, "seed_a": int(seeds[i]), "seed_b": int(seeds[j]),
                         **{c: r[c] for c in SNAPSHOT_COLUMNS[3:]}})

    log, finals = train(stack, data, train_cfg, RunOptions(on_step=snapshot))
    return SnapshotRun(pd.DataFrame(rows, columns=SNAPSHOT_COLUMNS), log, finals)


def snapshots_metadata(model_cfg: SyntheticModelConfig, protocol: str,
                       measure_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshots table's parquet metadata: what was trained, how it was compared."""
    return {"experiment": "training_dynamics", "K": model_cfg.num_classes,
            "width": model_cfg.width, "seeds": list(model_cfg.seeds), "protocol": protocol,
            "measures": dict(measure_kwargs), **provenance(asdict(model_cfg))}
