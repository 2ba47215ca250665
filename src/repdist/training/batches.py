"""Batch orders: the original's torch DataLoader order (paper protocol) and a seeded numpy one,
each drawn whole before a run starts (`BatchOrder`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from ..io.host import to_host


@dataclass(frozen=True)
class BatchOrder:
    """`steps` index batches of size `batch_size` (each epoch's last short, or left out with
    `full_batches`) from `epochs`, an (E, n) int64 array of one permutation of range(n) each."""

    epochs: np.ndarray
    batch_size: int
    steps: int
    full_batches: bool = False

    @cached_property
    def n(self) -> int:
        return self.epochs.shape[1]

    @cached_property
    def per_epoch(self) -> int:
        return (self.n // self.batch_size if self.full_batches
                else math.ceil(self.n / self.batch_size))

    def on_device(self, device: str | torch.device) -> torch.Tensor:
        """The epochs one after another on `device`, copied once (from pinned memory,
        asynchronously, to CUDA): a run's steps take their batches as slices of it (bounds)."""
        device = torch.device(device)
        host = torch.from_numpy(np.ascontiguousarray(self.epochs.reshape(-1), dtype=np.int64))
        if device.type == "cuda":
            host = host.pin_memory()
        return host.to(device, non_blocking=True)

    def bounds(self, step: int) -> tuple[int, int]:
        """Where batch `step` starts and stops in the epochs one after another."""
        epoch, j = divmod(step, self.per_epoch)
        start = epoch * self.n + j * self.batch_size
        return start, min(start + self.batch_size, (epoch + 1) * self.n)

    def batches(self) -> Iterator[np.ndarray]:
        flat = self.epochs.reshape(-1)
        for step in range(self.steps):
            yield flat[slice(*self.bounds(step))]


# A `DataLoader(shuffle=True)` draws, from the global torch RNG, one int64 "base seed" when an
# iterator is created (for worker seeding) and one more when its RandomSampler starts, which seeds a
# private generator for `randperm(n)`; a `shuffle=False` test loader's iterator draws a base seed
# too. The original created a train iterator per epoch and a test iterator after the update of every
# step i with i % 2000 == 0, all after `torch.manual_seed(0)`. Replaying those draws on a private
# generator leaves the global RNG alone (tests hold this to a real DataLoader).
def dataloader_order(n: int, batch_size: int, epochs: int, seed: int,
                     test_pass_after: Callable[[int], bool] = lambda step: False) -> BatchOrder:
    """The batches DataLoader(range(n), batch_size, shuffle=True) yields over `epochs` epochs
    after torch.manual_seed(seed), with a test-loader iterator created after every step for
    which `test_pass_after(step)` is true."""
    rng = torch.Generator().manual_seed(seed)

    def draw() -> int:
        return int(torch.empty((), dtype=torch.int64).random_(generator=rng).item())

    per_epoch = math.ceil(n / batch_size)
    orders = np.empty((epochs, n), dtype=np.int64)
    for epoch in range(epochs):
        draw()  # the train iterator's base seed
        sampler = torch.Generator().manual_seed(draw())  # RandomSampler's seed
        orders[epoch] = to_host(torch.randperm(n, generator=sampler))
        for step in range(epoch * per_epoch, (epoch + 1) * per_epoch):
            if test_pass_after(step):
                draw()  # the test iterator's base seed
    return BatchOrder(orders, batch_size, epochs * per_epoch)


def numpy_order(n: int, batch_size: int, steps: int, seed: int,
                full_batches: bool = False, in_order: bool = False) -> BatchOrder:
    """Exactly `steps` batches from a fresh numpy permutation per epoch, the last of an epoch
    short, or left out with `full_batches` (different examples each epoch); `in_order`: never
    shuffled, as a DataLoader without shuffle (the seed is not read)."""
    if full_batches and 0 < n < batch_size:
        raise ValueError(f"full batches of {batch_size} from {n} examples: none")
    rng = np.random.default_rng(seed)
    per_epoch = n // batch_size if full_batches else math.ceil(n / batch_size)
    epochs = math.ceil(steps / per_epoch) if n else 0
    orders = np.empty((epochs, n), dtype=np.int64)
    for epoch in range(epochs):
        orders[epoch] = np.arange(n) if in_order else rng.permutation(n)
    return BatchOrder(orders, batch_size, steps, full_batches)
