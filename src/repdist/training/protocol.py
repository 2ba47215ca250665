"""The two training protocols: `paper`, what the authors' code did, and `clean`, a simpler one.
`paper` does what the authors' code did wherever that changes a number (the original's
`src/training/train.py` and `training_models.py` with its `configs/`). `clean` is the simpler
protocol this pipeline used before it retraced the authors' models.

`paper` runs whole epochs in the original's batch order, with a train-mode test pass after the
update; each of its rules is a field of `Protocol`. `clean` runs exactly `steps` steps in a seeded
numpy batch order. Its test losses are eval-mode losses on the whole test set, before the step they
are logged at; the final test loss is measured in eval mode after training."""

from __future__ import annotations

import math
from dataclasses import dataclass

PROTOCOLS = ("paper", "clean")


# `paper`'s rules, one field each:
# - whole_epochs: whole epochs, the last batch of each epoch short: ceil(15,000 / 157) = 96 epochs =
#   15,072 synthetic steps, ceil(20,000 / 1,563) = 13 epochs = 20,319 CIFAR steps;
# - dataloader_order: batches in the order the original's `DataLoader(shuffle=True)` drew them from
#   the global torch RNG after `torch.manual_seed(data_seed)`, counting the draws its test-loader
#   passes made (`batches.dataloader_batches`), so seed s sees the authors' batches in their order;
# - test_pass_after_update, train_mode_test_loss: a test pass after the update of every step i with
#   i % eval_every == 0, in train mode: the test set in batches of the training batch size, in
#   order, the loss the mean of the batch means (BatchNorm uses batch statistics and updates its
#   running statistics, as the original's passes did). The recorded final test loss is the last such
#   value (step 20,000 for CIFAR);
# - loss_window_ends_at_step: the training loss logged at step i (i % log_every == 0) is the mean
#   over steps i - log_every + 1 .. i (step 0: its own loss), as the original logged it.
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
