"""The authors' own checkpoints (their repository's `checkpoints/`, and their Zenodo record for
CIFAR-10): their names, their format, and reading them into this pipeline's models, so that our
seed s can be compared with the authors' seed s. No network here (`io.download` fetches them).

Format: `torch.save(model.state_dict())` with the original's keys (`f_net.l1.weight`, ...), some
files holding `cuda:0` tensors (the 2025-04-22 trained ones): loaded with map_location="cpu".
Names: `{date}trained_{dataset}_{model_type}{_fixf<F>}{_fixg<G>}_classes{K}_seed{s}_features{w}
_fd{M}_data{N}_lr{lr}_steps{steps}` and `{date}untrained_..._features{w}_fd{M}` (the initial
weights); the fix suffixes carry str() of the length with '.' -> '_' (20 -> "20")."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where weights are read: the DAG reads names only
    import torch

    from .mlp import ModelClass

CHECKSUMS = Path(__file__).resolve().parent / "authors_sha256.tsv"  # commit b7a002c
SYNTHETIC_DATES = {4: "2025-04-22", 6: "2024-12-06", 10: "2024-12-06", 18: "2025-04-22"}
CIFAR_DATE = "2025-04-22"
SYNTHETIC_DATASET = "radial_classification"

_NAME = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2})(?P<kind>trained|untrained)_(?P<dataset>[a-z0-9_]+?)_"
    r"(?P<model>SmallMLP|ResNetCIFAR10)(?:_fixf(?P<fix_f>[\d_]+))?(?:_fixg(?P<fix_g>[\d_]+))?"
    r"_classes(?P<K>\d+)_seed(?P<seed>\d+)_features(?P<width>\d+)_fd(?P<M>\d+)"
    r"(?:_data(?P<data>\d+)_lr(?P<lr>[\d_e-]+)_steps(?P<steps>\d+))?$"
)


class AuthorsCheckpointError(ValueError):
    """A file that is not one of the authors' checkpoints, or not as its name says."""


@dataclass(frozen=True)
class CheckpointName:
    date: str
    trained: bool
    dataset: str
    model_type: str
    num_classes: int
    seed: int
    width: int
    rep_dim: int
    fix_g: float = 0.0
    fix_f: float = 0.0
    n_data: int | None = None
    lr: float | None = None
    steps: int | None = None

    def __str__(self) -> str:
        return checkpoint_name(self)


def _length_suffix(tag: str, value: float) -> str:
    if not value:
        return ""
    text = str(int(value)) if float(value).is_integer() else str(value)
    return f"_{tag}{text.replace('.', '_')}"


def checkpoint_name(n: CheckpointName) -> str:
    """The original's file name (naming.get_trained_model_name / get_untrained_model_name)."""
    core = (f"{n.dataset}_{n.model_type}{_length_suffix('fixf', n.fix_f)}"
            f"{_length_suffix('fixg', n.fix_g)}_classes{n.num_classes}_seed{n.seed}"
            f"_features{n.width}_fd{n.rep_dim}")
    if not n.trained:
        return f"{n.date}untrained_{core}"
    lr = str(n.lr).replace(".", "_")
    return f"{n.date}trained_{core}_data{n.n_data}_lr{lr}_steps{n.steps}"


def synthetic_name(num_classes: int, seed: int, width: int, trained: bool = True,
                   rep_dim: int = 2) -> CheckpointName:
    """The name of the authors' SmallMLP checkpoint of one configuration and seed (they shipped
    the unnormalised variant only: no fixed lengths)."""
    return CheckpointName(
        date=SYNTHETIC_DATES.get(num_classes, SYNTHETIC_DATES[6]), trained=trained,
        dataset=SYNTHETIC_DATASET, model_type="SmallMLP", num_classes=num_classes, seed=seed,
        width=width, rep_dim=rep_dim, n_data=20_000 if trained else None,
        lr=1e-4 if trained else None, steps=15_000 if trained else None)


def cifar_name(seed: int, rep_dim: int = 2, g_width: int = 128) -> CheckpointName:
    """The name of the authors' trained ResNet-18 checkpoint of one seed."""
    return CheckpointName(date=CIFAR_DATE, trained=True, dataset="cifar10",
                          model_type="ResNetCIFAR10", num_classes=10, seed=seed, width=g_width,
                          rep_dim=rep_dim, n_data=50_000, lr=1e-4, steps=20_000)


def parse_name(name: str) -> CheckpointName:
    m = _NAME.match(Path(name).name)
    if not m:
        raise AuthorsCheckpointError(f"{name}: not an authors' checkpoint name")
    trained = m["kind"] == "trained"
    if trained != (m["data"] is not None):
        raise AuthorsCheckpointError(f"{name}: trained files carry data/lr/steps, untrained not")

    def length(text: str | None) -> float:
        return float(text.replace("_", ".")) if text else 0.0

    return CheckpointName(
        date=m["date"], trained=trained, dataset=m["dataset"], model_type=m["model"],
        num_classes=int(m["K"]), seed=int(m["seed"]), width=int(m["width"]),
        rep_dim=int(m["M"]), fix_g=length(m["fix_g"]), fix_f=length(m["fix_f"]),
        n_data=int(m["data"]) if trained else None,
        lr=float(m["lr"].replace("_", ".")) if trained else None,
        steps=int(m["steps"]) if trained else None)


def read_checksums(path: str | os.PathLike[str]) -> dict[str, str]:
    """name -> sha256 from a two-column TSV with a header (`name<TAB>sha256`)."""
    rows = Path(path).read_text().splitlines()[1:]
    return dict(line.split("\t") for line in rows if line.strip())


def write_checksums(path: str | os.PathLike[str], checksums: Mapping[str, str]) -> None:
    from ..io import write_text

    lines = ["name\tsha256", *(f"{n}\t{d}" for n, d in sorted(checksums.items()))]
    write_text(path, "\n".join(lines) + "\n")


def verify(path: str | os.PathLike[str], checksums: Mapping[str, str],
           name: str | None = None) -> None:
    """Raise unless `path` has the sha256 listed for `name` (default: its own file name)."""
    from ..io.download import verify_checksum

    name = name or Path(path).name
    if name not in checksums:
        raise AuthorsCheckpointError(f"{path}: not in the checksum list of the authors' files")
    verify_checksum(path, f"sha256:{checksums[name]}")


def load_state_dict(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """An authors' checkpoint as a CPU state dict (their CUDA-saved files included)."""
    import torch

    try:
        state = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as err:  # noqa: BLE001 (torch raises many kinds for a bad file)
        raise AuthorsCheckpointError(f"{path}: cannot be read as a torch checkpoint ({err})") \
            from err
    if not isinstance(state, Mapping) or not all(torch.is_tensor(v) for v in state.values()):
        raise AuthorsCheckpointError(f"{path}: not a state dict of tensors")
    return dict(state)


def load_synthetic_model(path: str | os.PathLike[str]) -> ModelClass:
    """One of the authors' SmallMLP checkpoints as our ModelClass (fix lengths from its name)."""
    from .mlp import build_synthetic_model

    name = parse_name(path)
    if name.model_type != "SmallMLP":
        raise AuthorsCheckpointError(f"{path}: a {name.model_type}, not a SmallMLP")
    model = build_synthetic_model(0, name.num_classes, name.width, name.rep_dim, name.fix_g,
                                  name.fix_f)
    return _loaded(model, load_state_dict(path), path, "SmallMLP")


def load_cifar_model(path: str | os.PathLike[str]) -> ModelClass:
    """One of the authors' ResNetCIFAR10 checkpoints as our (ResNet-18 f, MLP g) ModelClass,
    in eval mode; the ResNet's width is read from the weights (64 for theirs)."""
    from .resnet import build_cifar_model

    name = parse_name(path)
    if name.model_type != "ResNetCIFAR10":
        raise AuthorsCheckpointError(f"{path}: a {name.model_type}, not a ResNetCIFAR10")
    state = load_state_dict(path)
    if "f_net.conv1.weight" not in state:
        raise AuthorsCheckpointError(f"{path}: no f_net.conv1.weight: not a ResNet-18 state dict")
    base_width = int(state["f_net.conv1.weight"].shape[0])
    model = build_cifar_model(0, name.rep_dim, name.num_classes, name.width, base_width)
    return _loaded(model, state, path, "ResNet-18")


def _loaded(model: ModelClass, state: Mapping[str, torch.Tensor],
            path: str | os.PathLike[str], what: str) -> ModelClass:
    """`model` holding `state`, in eval mode; a clear error when their keys differ."""
    expected = set(model.state_dict())
    if set(state) != expected:
        raise AuthorsCheckpointError(
            f"{path}: keys {sorted(set(state) ^ expected)[:6]} differ from the {what} model's")
    model.load_state_dict(state)
    return model.eval()
