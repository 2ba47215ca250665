"""Tolerances for floats that two computations rounded each their own way (another batching,
code path, device, or another CPU's kernels): a number of units of the dtype's rounding,
relative, and the same units of the values' magnitude, absolute, for values that cross zero.
tests/test_float_comparisons.py holds every exact comparison of floats to a stated reason."""

from typing import Any

import numpy as np
import torch

FLOAT32_ROUNDING = float(np.finfo(np.float32).eps)  # 2^-23
FLOAT64_ROUNDING = float(np.finfo(np.float64).eps)  # 2^-52
ULPS = 16  # a few units of rounding in each of a few operations apart


def rounding(dtype: Any) -> float:
    """The unit of rounding (machine epsilon) of a numpy or torch floating dtype."""
    if isinstance(dtype, torch.dtype):
        return float(torch.finfo(dtype).eps)
    return float(np.finfo(dtype).eps)


def magnitude(values: Any) -> float:
    """The largest |value| of an array or tensor: the scale of an absolute tolerance."""
    return float(abs(values).max())


def close_in(dtype: Any, scale: float = 0.0, ulps: int = ULPS) -> dict[str, float]:
    """rtol and atol (np.testing.assert_allclose's and torch.testing.assert_close's keywords):
    `ulps` units of `dtype`'s rounding relative, and of `scale` absolute."""
    unit = ulps * rounding(dtype)
    return {"rtol": unit, "atol": unit * float(scale)}
