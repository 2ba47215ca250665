"""Paper Fig. 16 (left): d_LLV vs d_{f,g} for an evenly spaced classifier and noisy copies of it.

As the original's `experiments/making_constructed_models.py`: f2 = f1 + (i+1) * noise_level *
N(0, I) for i = 0..num_levels-1, same g. As there, the diversity input set is frozen after the
first level while the pivot and left-out labels are re-chosen at every level."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...models.constructed import evenly_spaced_classifier
from ...measures import compare_prepared, prepare


@dataclass(frozen=True)
class ConstructedBoundConfig:
    """One classifier of config.yaml's `constructed`, its shared settings, the d_LLV settings
    of `measures` and the root seed."""

    num_classes: int
    noise_level: float
    n_per_class: int
    num_levels: int
    num_samples: int
    lam: float
    f_length: float
    g_length: float
    dist_type: str
    sum_or_max: str
    seed: int


def constructed_bound_sweep(cfg: ConstructedBoundConfig) -> pd.DataFrame:
    """One row per noise level: d_llv, its terms, m_SVD's, d_fg and the bound 2 M d_llv."""
    rng = np.random.default_rng([cfg.seed, cfg.num_classes])
    f, g = evenly_spaced_classifier(rng, cfg.num_classes, cfg.n_per_class, cfg.f_length,
                                    cfg.g_length)
    rep_dim = f.shape[1]
    base = prepare(f, g)
    input_set = None
    rows = []
    for i in range(cfg.num_levels):
        noise_std = (i + 1) * cfg.noise_level
        noisy = prepare(f + noise_std * rng.standard_normal(f.shape), g)
        r = compare_prepared(base, noisy, num_samples=cfg.num_samples, lam=cfg.lam, seed=cfg.seed,
                             input_set=input_set, dist_type=cfg.dist_type,
                             sum_or_max=cfg.sum_or_max)
        input_set = r["input_set"]
        rows.append({"num_classes": cfg.num_classes, "level": i, "noise_std": noise_std,
                     **{k: r[k] for k in ("d_llv", "t1", "t2", "t3", "t4")},
                     "m_svd_f_min": float(np.min(r["m_svd_f"])), "m_svd_g": r["m_svd_g"],
                     "d_fg": r["d_fg"], "bound": 2 * rep_dim * r["d_llv"], "kl": r["kl"],
                     "y_pivot": r["y_pivot"], "y_leave_out": r["y_leave_out"]})
    return pd.DataFrame(rows)
