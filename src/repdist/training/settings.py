"""A run's training settings, without torch: the DAG builds them on a login node too."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .protocol import Protocol, protocol, steps_to_run


@dataclass(frozen=True)
class TrainConfig:
    """A run's training settings: a section's `training` of config.yaml and the run's
    `protocol` (`training_settings` gathers them); `steps` is nominal, the paper protocol runs
    whole epochs covering them; checkpoint_every 0 writes no checkpoints."""

    steps: int
    batch_size: int
    lr: float
    data_seed: int
    log_every: int
    eval_every: int
    checkpoint_every: int
    protocol: str

    @property
    def rules(self) -> Protocol:
        return protocol(self.protocol)

    def steps_for(self, n_train: int) -> int:
        """Steps actually run on n_train examples (15,072 for the paper's synthetic runs)."""
        return steps_to_run(self.steps, n_train, self.batch_size, self.rules)

    def identity(self) -> dict[str, Any]:
        """What changes the trained models (checkpoint spacing does not)."""
        return {k: v for k, v in asdict(self).items() if k != "checkpoint_every"}


def training_settings(config: Mapping[str, Any], section: str, **overrides: Any) -> dict[str, Any]:
    """TrainConfig's fields for config[section]: its `training`, the protocol, the overrides."""
    return {**config[section]["training"], "protocol": config["protocol"], **overrides}


def train_config(config: Mapping[str, Any], section: str, **overrides: Any) -> TrainConfig:
    """The TrainConfig of config[section] (see `training_settings`)."""
    return TrainConfig(**training_settings(config, section, **overrides))


@dataclass(frozen=True)
class EpochSchedule:
    """The follow-up's learning-rate schedule, stepped once an epoch (their utils/train.py:
    SequentialLR of ConstantLR(factor, total_iters=warmup_epochs) then ExponentialLR(decay) at
    the milestone warmup_epochs): lr x warmup_factor for the first warmup_epochs epochs, then
    lr x decay^(epoch - warmup_epochs)."""

    warmup_epochs: int = 20
    warmup_factor: float = 1e-3
    decay: float = 0.995

    def factor(self, epoch: int) -> float:
        if epoch < self.warmup_epochs:
            return self.warmup_factor
        return self.decay ** (epoch - self.warmup_epochs)

    def per_step(self, steps_per_epoch: int) -> Callable[[int], float]:
        """The factor of optimisation step i (epoch i // steps_per_epoch)."""
        return lambda step: self.factor(step // steps_per_epoch)
