"""A model's representations as the pipeline keeps them: f over inputs and g over labels,
taken once per model in eval mode (BatchNorm on its running statistics), without gradients,
as float64 numpy arrays. Pairwise steps and figures then never run a network again."""

from __future__ import annotations

import numpy as np
import torch

from ..io.host import to_host


@torch.no_grad()
def extract(model: torch.nn.Module, inputs: np.ndarray, codes: np.ndarray,
            batch_size: int | None = None, channels_last: bool = False
            ) -> tuple[np.ndarray, np.ndarray]:
    """(f, g): f is (N, M), or (S, N, M) for a stack of S models; g is (K, M) or (S, K, M).
    Inputs go to the model's device `batch_size` at a time (None: all at once)."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        g = to_host(model.unembed(torch.as_tensor(codes).to(device)), np.float64)
        step = batch_size or len(inputs)
        parts = []
        for start in range(0, len(inputs), step):
            x = torch.as_tensor(inputs[start : start + step]).to(device)
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            parts.append(model.embed(x).double().cpu())
        f = to_host(torch.cat(parts, dim=-2))
    finally:
        model.train(was_training)
    return f, g
