"""Training dynamics (Roeder et al.'s question, beyond the paper): how m_CCA, d_LLV and d_{f,g}
between seeds evolve during training, for one synthetic configuration.

The seeds train together (stacked, as the paper-scale runs); at each snapshot step the stack's
test-set embeddings and unembeddings are compared for every pair of seeds.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..data.radial import label_codes, make_radial
from ..io import provenance
from ..measures import compare_prepared, prepare
from ..models.mlp import build_synthetic_model
from ..models.stacked import StackedModelClass
from ..training.loop import TrainConfig, train
from .synthetic import SyntheticModelConfig

SNAPSHOT_COLUMNS = ["step", "seed_a", "seed_b", "kl", "d_llv", "d_fg", "mcca_f", "d_logit",
                    "warning"]


def training_dynamics(
    model_cfg: SyntheticModelConfig,
    train_cfg: TrainConfig,
    snapshot_steps: Sequence[int],
    measure_kwargs: Mapping[str, Any],
) -> pd.DataFrame:
    k = model_cfg.num_classes
    train_d = make_radial(model_cfg.n_train, k, model_cfg.train_data_seed)
    test_d = make_radial(model_cfg.n_test, k, model_cfg.test_data_seed)
    codes = label_codes(np.arange(k), k)
    stack = StackedModelClass([
        build_synthetic_model(s, k, model_cfg.width, model_cfg.rep_dim, model_cfg.fix_g,
                              model_cfg.fix_f)
        for s in model_cfg.seeds
    ])
    x, all_codes = torch.from_numpy(test_d.x), torch.from_numpy(codes)
    wanted = set(int(s) for s in snapshot_steps)
    rows: list[dict[str, Any]] = []

    def snapshot(done: int) -> None:
        if done not in wanted:
            return
        was_training = stack.training
        stack.eval()
        with torch.no_grad():
            f_all = stack.embed(x).double().numpy()
            g_all = stack.unembed(all_codes).double().numpy()
        stack.train(was_training)
        prepared = [prepare(f, g) for f, g in zip(f_all, g_all, strict=True)]
        for i, j in itertools.combinations(range(len(prepared)), 2):
            r = compare_prepared(prepared[i], prepared[j], **measure_kwargs)
            rows.append({"step": done, "seed_a": int(model_cfg.seeds[i]),
                         "seed_b": int(model_cfg.seeds[j]),
                         **{c: r[c] for c in SNAPSHOT_COLUMNS[3:]}})

    train(stack, train_d.x, train_d.labels, test_d.x, test_d.labels, codes, train_cfg,
          on_step=snapshot)
    return pd.DataFrame(rows, columns=SNAPSHOT_COLUMNS)


def snapshots_metadata(model_cfg: SyntheticModelConfig, protocol: str,
                       measure_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshots table's parquet metadata: what was trained, how it was compared."""
    from dataclasses import asdict

    return {"experiment": "training_dynamics", "K": model_cfg.num_classes,
            "width": model_cfg.width, "seeds": list(model_cfg.seeds), "protocol": protocol,
            "measures": dict(measure_kwargs), **provenance(asdict(model_cfg))}
