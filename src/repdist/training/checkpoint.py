"""Training checkpoints that record their run's configuration (readable values and their hash).

A job resumes only a checkpoint of its own configuration. Any other is set aside under a new name,
never deleted, with a log line naming what changed: a resumed run never mixes two configurations.
A JSON sidecar (`<checkpoint>.json`: step, total, time) lets `repdist progress` read it without
torch."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..io import atomic_path, checkpoint_sidecar, config_hash, write_json

if TYPE_CHECKING:  # torch is imported where a checkpoint is read or written: the sidecar
    import torch  # readers (`repdist progress`) run without it

LOG = logging.getLogger("repdist")


def flatten(identity: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{'training': {'lr': 1e-4}} -> {'lr': 1e-4}: nested keys by their last name where that is
    unique, else by their dotted path."""
    leaves: dict[str, Any] = {}
    for key, value in identity.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            leaves.update(flatten(value, f"{path}."))
        else:
            leaves[path] = value
    last = [p.rsplit(".", 1)[-1] for p in leaves]
    return {(name if last.count(name) == 1 else path): leaves[path]
            for path, name in zip(leaves, last, strict=True)}


def describe_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """'lr 0.0001 -> 0.0003, steps 15000 -> 300': every key whose value differs."""
    a, b = flatten(old), flatten(new)
    parts = [f"{k} {a.get(k, '(none)')} -> {b.get(k, '(none)')}"
             for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return ", ".join(parts) or "no readable difference (hash differs)"


def _normalised(identity: Mapping[str, Any]) -> dict[str, Any]:
    """JSON round trip: tuples become lists, so a stored identity compares equal to a new one."""
    return json.loads(json.dumps(dict(identity), sort_keys=True, default=str))


def _set_aside(path: Path, old_hash: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.stem}.set-aside-{old_hash or 'unknown'}-{stamp}{path.suffix}")
    os.replace(path, aside)
    sidecar = checkpoint_sidecar(path)
    if sidecar.exists():
        os.replace(sidecar, checkpoint_sidecar(aside))
    return aside


def _read_checkpoint(path: Path, map_location: Any) -> tuple[Any, str]:
    """The checkpoint's content, or (None, why) for a file that is not a whole checkpoint (cut
    short by a full disk or a copy, damaged, or of another format)."""
    import pickle
    import zipfile

    import torch

    try:
        return torch.load(path, weights_only=False, map_location=map_location), ""
    except (RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError,
            zipfile.BadZipFile, AttributeError, ImportError) as err:
        return None, f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"


def load_resumable(path: str | os.PathLike[str] | None, identity: Mapping[str, Any],
                   total_steps: int, map_location: str | torch.device = "cpu"
                   ) -> dict[str, Any] | None:
    """This configuration's checkpoint at `path` if within the run, else None (set aside)."""
    if path is None or not Path(path).exists():
        return None
    path = Path(path)
    state, unreadable = _read_checkpoint(path, map_location)
    want = _normalised(identity)
    have = state.get("identity") if isinstance(state, dict) else None
    if unreadable:
        why = f"it cannot be read ({unreadable})"
    elif have is None:
        why = "it records no configuration (written by an older repdist)"
    elif state.get("identity_hash") != config_hash(want):
        why = describe_changes(have, want)
    elif not 0 < int(state["step"]) < total_steps:
        why = f"its step {state['step']} is not within this run's {total_steps} steps"
    else:
        return state
    aside = _set_aside(path, state.get("identity_hash", "") if isinstance(state, dict) else "")
    LOG.info("checkpoint set aside: %s (kept as %s); starting fresh", why, aside.name)
    return None


def save_checkpoint(path: str | os.PathLike[str], identity: Mapping[str, Any], step: int,
                    total_steps: int, **state: Any) -> None:
    """Write the checkpoint atomically (with its configuration), then its JSON sidecar."""
    ident = _normalised(identity)
    payload = {"identity": ident, "identity_hash": config_hash(ident), "step": step, **state}
    write_atomically(path, payload)
    write_json(checkpoint_sidecar(path), {"step": step, "total_steps": total_steps,
                                          "identity_hash": payload["identity_hash"],
                                          "saved_at": time.time()})


def remove_checkpoint(path: str | os.PathLike[str] | None) -> None:
    """A finished run's checkpoint is spent: remove it and its sidecar."""
    if path is None:
        return
    for p in (Path(path), checkpoint_sidecar(path)):
        p.unlink(missing_ok=True)


def write_atomically(path: str | os.PathLike[str], obj: Any) -> None:
    """torch.save through a temporary file (a model file appears complete or not at all)."""
    import torch

    with atomic_path(path) as tmp:
        torch.save(obj, tmp)
