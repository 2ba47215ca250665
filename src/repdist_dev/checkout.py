"""The checkout the developer's tools, benchmarks and checks run in, and the paper's settings as
its config.yaml holds them (the rules read the same file).

Standard library only at import: `make lock` runs repdist_dev.lock with the system's python3,
before any venv; PyYAML and repdist are imported when the paper's settings are asked for."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # src/repdist_dev/checkout.py: the checkout
SHARED = ROOT.parent / "shared"  # where the authors' code and checkpoints sit beside a checkout


@cache
def paper_config() -> dict[str, Any]:
    """config.yaml of the checkout: the paper's settings."""
    import yaml

    path = ROOT / "config.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is not there: the benchmarks and checks run from a "
                                "checkout of the project (its src/ on the path)")
    return yaml.safe_load(path.read_text())


def train_config(section: str = "synthetic", **overrides: Any) -> Any:
    """A TrainConfig (repdist.training.settings) of config.yaml's `section`, with overrides."""
    from repdist.training.settings import train_config as from_config

    return from_config(paper_config(), section, **overrides)
