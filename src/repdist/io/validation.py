"""The one place that checks representations before any measure reads them (every command and
the Python API). Each failure is an InputError naming what was read and the numbers involved."""

from __future__ import annotations

from typing import Any

import numpy as np

from .host import is_tensor, to_host

# |values| above this cannot be squared in float64 (variances overflow past 1.8e308).
LARGEST_VALUE = 1e150


class InputError(ValueError):
    """Input that cannot be measured: the message says which input and why."""


def real_array(value: Any, what: str) -> np.ndarray:
    """`value` (an array, tensor or nested list) as real numbers (a tensor: float64 on the host)."""
    if is_tensor(value):
        kind = "c" if value.is_complex() else "b" if str(value.dtype) == "torch.bool" else "f"
        arr, dtype = None, str(value.dtype).removeprefix("torch.")
    else:
        arr = np.asarray(value)
        kind, dtype = arr.dtype.kind, str(arr.dtype)
    if kind == "c":
        raise InputError(f"{what} holds complex numbers ({dtype}): the measures need real "
                         "numbers; pass the real part yourself if that is what you mean")
    if kind == "b":
        raise InputError(f"{what} holds booleans: the measures need real numbers")
    if kind not in "iuf":
        raise InputError(f"{what} is not a numeric array (dtype {dtype})")
    return to_host(value, np.float64) if arr is None else arr


def representation_matrix(value: Any, what: str, rows: str) -> np.ndarray:
    """A non-empty 2-D real array as float64 (`rows` names its shape, e.g. "N x M")."""
    arr = real_array(value, what)
    if arr.ndim != 2 or 0 in arr.shape:
        raise InputError(f"{what} must be a non-empty 2-D array ({rows}), got shape "
                         f"{arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float64)


def check_finite(arr: np.ndarray, what: str) -> None:
    """No NaN or infinite value (named by count and the first position)."""
    bad = ~np.isfinite(arr)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise InputError(f"{what} has {int(bad.sum())} NaN or infinite values (the first at "
                         f"row {row}, column {col})")


def check_magnitude(f: np.ndarray, g: np.ndarray, what: str) -> None:
    """Values and logits f·g small enough that their squares fit in float64."""
    for name, arr in (("f", f), ("g", g)):
        top = float(np.max(np.abs(arr), initial=0.0))
        if top > LARGEST_VALUE:
            raise InputError(f"{what}: {name} has values up to {top:.3g}; above "
                             f"{LARGEST_VALUE:g} their squares overflow float64")
    bound = float(np.max(np.linalg.norm(f, axis=1))) * float(np.max(np.linalg.norm(g, axis=1)))
    if bound > LARGEST_VALUE:
        raise InputError(f"{what}: logits f·g reach up to {bound:.3g}; above {LARGEST_VALUE:g} "
                         "their variances overflow float64")


def check_widths(f: np.ndarray, g: np.ndarray, what: str) -> None:
    """f (N x M) and g (K x M) share M."""
    if f.shape[1] != g.shape[1]:
        raise InputError(_of(what, f"f and g must share the representation dimension: f has "
                                   f"M={f.shape[1]} columns but g has {g.shape[1]} (f is N x M, "
                                   "g K x M)"))


def _of(what: str, text: str) -> str:
    return f"{what}: {text}" if what else text


def representations(f: Any, g: Any, what: str = "") -> tuple[np.ndarray, np.ndarray]:
    """f and g as float64, real 2-D arrays of one width M, at least 2 inputs and 2 labels.
    Non-finite or huge values pass: the measures report them as NaN with the reason."""
    f64 = representation_matrix(f, _of(what, "f"), "N x M")
    g64 = representation_matrix(g, _of(what, "g"), "K x M")
    check_widths(f64, g64, what)
    if f64.shape[0] < 2:
        raise InputError(_of(what, f"need at least 2 inputs, got N={f64.shape[0]}"))
    if g64.shape[0] < 2:
        raise InputError(_of(what, f"need at least 2 labels, got K={g64.shape[0]}"))
    return f64, g64
