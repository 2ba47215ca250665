"""The measures' benchmark family of models: seeds that share a structure up to a random
linear map plus noise, at any size (benchmarks/measures.py and its kin, the GPU check's measures
part at GPT-2's shapes)."""

from __future__ import annotations

import numpy as np


def model_family(n_models: int, n_inputs: int, num_labels: int, rep_dim: int, seed: int = 0):
    """Models that share a structure up to a random linear map plus noise, like trained seeds."""
    rng = np.random.default_rng(seed)
    angles = rng.uniform(0, 2 * np.pi, n_inputs)
    base_f = np.stack([np.cos(angles), np.sin(angles)], 1) * rng.uniform(2, 6, (n_inputs, 1))
    if rep_dim > 2:
        base_f = np.hstack([base_f, rng.normal(size=(n_inputs, rep_dim - 2))])
    base_g = rng.normal(size=(num_labels, rep_dim)) * 3
    models = []
    for _ in range(n_models):
        a = np.eye(rep_dim) + 0.3 * rng.normal(size=(rep_dim, rep_dim))
        f = base_f @ a.T + 0.2 * rng.normal(size=base_f.shape)
        g = base_g @ np.linalg.inv(a) + 0.2 * rng.normal(size=base_g.shape)
        models.append((f.astype(np.float32), g.astype(np.float32)))
    return models
