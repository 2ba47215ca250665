"""What the Snakefile does to its process environment before jobs run."""

from __future__ import annotations

import os


def prepend_pythonpath(src: str) -> None:
    """Put `src` first on PYTHONPATH: jobs inherit it (conda envs and cluster nodes too), so
    `import repdist` needs no pip install into each env."""
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != src]
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *parts])
