"""benchmarks/records/: where the committed records of runs on other machines live (`make
gpu-check`'s, `run.sh run-synthetic`'s, `make timings`'), how a machine's name enters a record's
file name, and which commit ran (where `git` is there to ask). Standard library only."""

from __future__ import annotations

import re
import shutil
import subprocess

from repdist_dev.checkout import ROOT

RECORDS = ROOT / "benchmarks" / "records"


def slug(name: str) -> str:
    """A machine's name as a file name's part: "NVIDIA H200" -> nvidia-h200."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"


def git(*args: str) -> str | None:
    """git's answer in the checkout; None where git is not installed or the copy is no
    repository (a checkout carried to an offline machine)."""
    if shutil.which("git") is None:
        return None
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def commit() -> tuple[str, bool | None]:
    """The checkout's commit and whether tracked files changed ("unknown", None without git)."""
    head = git("rev-parse", "--short=12", "HEAD")
    if not head:
        return "unknown", None
    status = git("status", "--porcelain", "--untracked-files=no")
    return head, None if status is None else bool(status)
