"""The paper's settings as config.yaml holds them, for the benchmarks (run from the checkout:
`python benchmarks/NAME.py`, which puts this folder on sys.path)."""

from pathlib import Path

import yaml

from repdist.training.settings import TrainConfig
from repdist.training.settings import train_config as from_config

PAPER_CONFIG = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())


def train_config(section: str = "synthetic", **overrides) -> TrainConfig:
    """A TrainConfig of config.yaml's `section`, with overrides."""
    return from_config(PAPER_CONFIG, section, **overrides)
