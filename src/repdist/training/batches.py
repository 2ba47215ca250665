"""Batch orders: the original's torch DataLoader order (paper protocol) and a seeded numpy one.

A `DataLoader(shuffle=True)` draws, from the global torch RNG, one int64 "base seed" when an
iterator is created (for worker seeding) and one more when its RandomSampler starts, which
seeds a private generator for `randperm(n)`; a `shuffle=False` test loader's iterator draws a
base seed too. The original created a train iterator per epoch and a test iterator after the
update of every step i with i % 2000 == 0, all after `torch.manual_seed(0)`. Replaying those
draws on a private generator seeded the same way gives its batches in its order without
touching the global RNG (tests hold this to a real DataLoader).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import torch

from ..io.host import to_host


def dataloader_batches(
    n: int,
    batch_size: int,
    epochs: int,
    seed: int,
    test_pass_after: Callable[[int], bool] = lambda step: False,
) -> Iterator[np.ndarray]:
    """Index batches as DataLoader(range(n), batch_size, shuffle=True) yields them over `epochs`
    epochs after torch.manual_seed(seed), with a test-loader iterator created after every step
    for which `test_pass_after(step)` is true."""
    rng = torch.Generator().manual_seed(seed)

    def draw() -> int:
        return int(torch.empty((), dtype=torch.int64).random_(generator=rng).item())

    step = 0
    for _ in range(epochs):
        draw()  # the train iterator's base seed
        sampler = torch.Generator().manual_seed(draw())  # RandomSampler's seed
        order = to_host(torch.randperm(n, generator=sampler))
        for start in range(0, n, batch_size):
            yield order[start : start + batch_size]
            if test_pass_after(step):
                draw()  # the test iterator's base seed
            step += 1


def numpy_batches(n: int, batch_size: int, steps: int, seed: int) -> Iterator[np.ndarray]:
    """Exactly `steps` batches: epochs of a fresh numpy permutation each, the last batch of an
    epoch short (the clean protocol)."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < steps:
        perm = rng.permutation(n)
        for start in range(0, n, batch_size):
            if done == steps:
                return
            yield perm[start : start + batch_size]
            done += 1


def device_batches(batches: Iterable[np.ndarray], device: str | torch.device,
                   chunk: int = 1024) -> Iterator[torch.Tensor]:
    """The index batches of `batches` as int64 tensors on `device`, in the same order: `chunk`
    batches are copied at a time (from pinned memory, asynchronously, to CUDA), so a training
    step takes its batch as a slice of a tensor already there instead of waiting for a copy
    from the host."""
    device = torch.device(device)
    batches = iter(batches)
    while group := list(itertools.islice(batches, chunk)):
        host = torch.from_numpy(np.concatenate(group).astype(np.int64, copy=False))
        if device.type == "cuda":
            host = host.pin_memory()
        flat = host.to(device, non_blocking=True)
        start = 0
        for batch in group:
            yield flat[start : start + len(batch)]
            start += len(batch)
