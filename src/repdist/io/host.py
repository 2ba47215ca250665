"""The one place where values leave a device: a tensor becomes a numpy array only through `to_host`.

numpy cannot read a CUDA tensor: `host_copies_guarded()` makes the rule checkable without a GPU.
torch is never imported here: measures and file readers take tensors without needing torch."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

GUARD_ENV = "REPDIST_GUARD_HOST_COPIES"
_STATE = threading.local()


class ImplicitHostCopy(TypeError):
    """A tensor met numpy outside `to_host` while host copies are guarded."""


def is_tensor(value: Any) -> bool:
    """A torch tensor, told without importing torch."""
    return hasattr(value, "detach") and hasattr(value, "device")


def to_host(value: Any, dtype: Any = None) -> np.ndarray:
    """`value` (a tensor on any device, or anything numpy takes) as a numpy array on the host; a
    tensor is made float64 on its device if asked (bfloat16 too), then copied: the sync point."""
    if not is_tensor(value):
        return np.asarray(value, dtype=dtype)
    tensor = value.detach()
    if dtype is not None and np.dtype(dtype) == np.float64:
        tensor = tensor.double()
    _STATE.inside = getattr(_STATE, "inside", 0) + 1
    try:
        array = tensor.cpu().numpy()
    finally:
        _STATE.inside -= 1
    return array if dtype is None else array.astype(dtype, copy=False)


@contextlib.contextmanager
def host_copies_guarded(scope: str | None = None) -> Iterator[None]:
    """Within the block, `Tensor.__array__` (np.asarray, pandas) and `Tensor.numpy()` outside
    `to_host` raise ImplicitHostCopy on any device, as a CUDA tensor would (tests and jobs with
    REPDIST_GUARD_HOST_COPIES=1). Only conversions with a file under `scope` on the stack fail."""
    try:
        import torch
    except ImportError:  # no torch, no tensors: nothing to guard
        yield
        return

    saved = {name: torch.Tensor.__dict__.get(name) for name in ("__array__", "numpy")}
    base_array, base_numpy = torch.Tensor.__array__, torch.Tensor.numpy

    def refuse_array(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _in_scope(scope):
            return base_array(self, *args, **kwargs)
        raise ImplicitHostCopy(
            f"numpy converted a {self.device} tensor of shape {tuple(self.shape)} implicitly "
            "(np.asarray, pandas, ...): on a GPU this fails; use repdist.io.host.to_host")

    def numpy_through_to_host(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_STATE, "inside", 0) or not _in_scope(scope):
            return base_numpy(self, *args, **kwargs)
        raise ImplicitHostCopy(
            f"Tensor.numpy() on a {self.device} tensor of shape {tuple(self.shape)} outside "
            "repdist.io.host.to_host: on a GPU this fails unless moved to the host first")

    torch.Tensor.__array__ = refuse_array
    torch.Tensor.numpy = numpy_through_to_host
    try:
        yield
    finally:
        for name, original in saved.items():
            if original is None:
                delattr(torch.Tensor, name)
            else:
                setattr(torch.Tensor, name, original)


def _in_scope(scope: str | None) -> bool:
    """Whether the conversion happening now is guarded: always without a scope, else when a
    frame of a file under `scope` (this one aside: guards may nest) is on the call stack."""
    if scope is None:
        return True
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(scope) and name != __file__:
            return True
        frame = frame.f_back
    return False
