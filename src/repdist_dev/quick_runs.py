"""Quick-DAG runs shared between the parts of CI: `make test-slurm` (tests/slurm/slurm_check.py
--keep-runs DIR) runs the quick DAG locally and through SLURM, and `make test-slow` and `make test`
then read those two runs (REPDIST_QUICK_RUNS=DIR) instead of running the DAG three more times.
A kept run is used only when it was made from the same workflow (the files that make the DAG's
outputs, fingerprinted); otherwise the tests run their own, saying why."""

from __future__ import annotations

import hashlib
import os
import subprocess
import warnings
from pathlib import Path

from repdist_dev.checkout import ROOT

RUNS_ENV = "REPDIST_QUICK_RUNS"
STAMP = "workflow-fingerprint.txt"
# what a quick run's outputs come from (tests, docs and the README do not change them)
SOURCES = ("Snakefile", "config.yaml", "config.quick.yaml", "rules", "workflow", "src",
           "profiles", "report", "envs")


def fingerprint(root: Path = ROOT) -> str:
    """sha256 of the names and bytes of the workflow's files (git's tracked and untracked but
    not ignored ones under SOURCES)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard", "--", *SOURCES], cwd=root,
                            capture_output=True, check=True).stdout.split(b"\0")
    digest = hashlib.sha256()
    for name in sorted(filter(None, listed)):
        path = root / name.decode()
        if path.is_file():
            digest.update(name + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def keep(runs: dict[str, Path], folder: Path, root: Path = ROOT) -> None:
    """Move finished quick runs (their whole --directory, by name) into `folder`, stamped."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, work in runs.items():
        work.rename(folder / name)
    (folder / STAMP).write_text(fingerprint(root) + "\n")


def shared_run(name: str) -> Path | None:
    """The kept run `name` ("local" or "slurm") when REPDIST_QUICK_RUNS names a folder of runs
    made from this workflow; None (with a warning when one was named but does not fit)."""
    folder = os.environ.get(RUNS_ENV)
    if not folder:
        return None
    stamp, run = Path(folder) / STAMP, Path(folder) / name
    if not stamp.is_file() or not (run / "results/quick").is_dir():
        warnings.warn(f"{RUNS_ENV}={folder} holds no kept run {name!r}: running the DAG here")
        return None
    if stamp.read_text().strip() != fingerprint():
        warnings.warn(f"{RUNS_ENV}={folder}: made from another workflow: running the DAG here")
        return None
    return run
