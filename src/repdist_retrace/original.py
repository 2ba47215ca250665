"""The authors' source tree (`--original`, their repository's root) on the import path, with the
one shim their modules need where it is not installed: tqdm, whose progress bars they wrap loops
in, becomes the loop's iterable unchanged (named in SHIMS_USED, which the checks print)."""

from __future__ import annotations

import importlib.machinery
import sys
import types
from pathlib import Path

SHIMS_USED: list[str] = []


def put_on_path(folder: Path) -> None:
    """Let `from src... import ...` load the authors' modules from `folder`."""
    sys.path.insert(0, str(Path(folder).resolve()))
    try:
        import tqdm  # noqa: F401  (their loops' progress bars)
    except ImportError:
        shim = types.ModuleType("tqdm")
        shim.__spec__ = importlib.machinery.ModuleSpec("tqdm", None)  # torch probes specs
        shim.tqdm = lambda iterable, **_: iterable
        sys.modules["tqdm"] = shim
        SHIMS_USED.append("tqdm (not installed) -> its iterable unchanged")
