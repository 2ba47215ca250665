"""What the Snakefile does to its process environment before jobs run."""

from __future__ import annotations

import os


def prepend_pythonpath(src: str) -> None:
    """Put the package's source folder first on PYTHONPATH for every job this workflow starts:
    jobs inherit it (in conda envs and on cluster nodes too), so `import repdist` needs no pip
    install into each env."""
    current = os.environ.get("PYTHONPATH", "")
    parts = [p for p in current.split(os.pathsep) if p and p != src]
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *parts])
