"""What produced an output: package and library versions, git commit, the config's hash.
`io.files` attaches it to every table and metrics file; `repdist info` prints it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .files import json_default


def config_hash(config: Mapping[str, Any]) -> str:
    """Stable short hash of a (JSON-serialisable) configuration mapping."""
    blob = json.dumps(config, sort_keys=True, default=json_default).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def git_commit(directory: str | os.PathLike[str] | None = None) -> str:
    """The commit of the source tree, or "" when not in a git checkout."""
    where = Path(directory) if directory else Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _installed_version(distribution: str) -> str:
    """The installed version of a distribution, without importing it ("" when absent): the
    measures and figure environments have no torch, and importing it costs seconds."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return ""


def table_provenance(config: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """Provenance of a rule's table: versions, commit, config hash, root seed, training protocol."""
    return provenance(config, seed=config.get("seed"), protocol=config.get("protocol"), **extra)


def provenance(config: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """What produced an output: package, library versions, git commit and the config's hash."""
    from .. import __version__

    info: dict[str, Any] = {
        "package_version": __version__,
        "numpy_version": np.__version__,
        "git_commit": git_commit(),
        "torch_version": _installed_version("torch"),
    }
    if config is not None:
        info["config_hash"] = config_hash(config)
    info.update(extra)
    return info


def models_provenance(models: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The provenance of a table of several models (name -> metadata): a key with one value for all
    models as it is, any other as {model: value} (never the first model's value alone)."""
    keys = list(dict.fromkeys(k for meta in models.values() for k in meta))
    merged: dict[str, Any] = {}
    for key in keys:
        values = {name: meta[key] for name, meta in models.items() if key in meta}
        blobs = {json.dumps(v, sort_keys=True, default=json_default) for v in values.values()}
        shared = len(values) == len(models) and len(blobs) == 1
        merged[key] = next(iter(values.values())) if shared else values
    return merged
