"""The two training protocols. `paper` does what the authors' code did wherever that changes a
number (the original's `src/training/train.py` and `training_models.py` with its `configs/`).
`clean` runs exactly `steps` steps in a seeded numpy batch order, its test losses in eval mode on
the whole test set, before the step they are logged at, and after training."""

from __future__ import annotations

import math
from dataclasses import dataclass

PROTOCOLS = ("paper", "clean")


# `paper`'s rules, one field each, as the original did:
# - whole_epochs: the last batch of each epoch short: ceil(15,000 / 157) = 96 epochs = 15,072
#   synthetic steps, ceil(20,000 / 1,563) = 13 epochs = 20,319 CIFAR steps;
# - dataloader_order: its `DataLoader(shuffle=True)` order after `torch.manual_seed(data_seed)`
#   (batches.dataloader_order), so seed s sees the authors' batches in their order;
# - test_pass_after_update, train_mode_test_loss: a test pass after the update of every step i with
#   i % eval_every == 0, in train mode (loop.train_mode_test_loss); the final test loss is the last
#   (step 20,000 for CIFAR);
# - loss_window_ends_at_step: the loss logged at step i is the mean of steps i - log_every + 1 .. i.
@dataclass(frozen=True)
class Protocol:
    name: str
    whole_epochs: bool
    dataloader_order: bool
    test_pass_after_update: bool
    train_mode_test_loss: bool
    loss_window_ends_at_step: bool


def protocol(name: str) -> Protocol:
    """The rules of protocol `name` ('paper' or 'clean')."""
    if name not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {name!r}")
    paper = name == "paper"
    return Protocol(name, paper, paper, paper, paper, paper)


def batches_per_epoch(n: int, batch_size: int) -> int:
    return math.ceil(n / batch_size)


def steps_to_run(steps: int, n: int, batch_size: int, rules: Protocol) -> int:
    """Optimisation steps a run takes: `steps`, or whole epochs covering them (paper)."""
    if not rules.whole_epochs:
        return steps
    per_epoch = batches_per_epoch(n, batch_size)
    return math.ceil(steps / per_epoch) * per_epoch
