"""Flush subnormal floats to zero in a job's process. Confident models (few classes,
unnormalised lengths) push activations and gradients below float32's smallest normal (1.2e-38);
on Intel CPUs each operation on such a value takes a microcode slow path, slowing training late
(benchmarks/subnormals.py). The x86 MXCSR FTZ|DAZ bits make them exact zeros, 1e-38 below
anything the measures look at. The bits are per thread, inherited by threads started later."""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys

import numpy as np

MXCSR_FTZ_DAZ = 0x8040  # flush-to-zero (bit 15) | denormals-are-zero (bit 6)
_FENV_MXCSR_OFFSET = 28  # glibc's x86-64 fenv_t: the x87 environment (28 bytes), then mxcsr


def subnormals_flushed() -> bool:
    """Whether arithmetic in this thread turns a subnormal float64 into zero."""
    return float((np.array([1e-310]) * 1.0)[0]) == 0.0


def _set_mxcsr_bits() -> bool:
    if platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("m")
    if not name:
        return False
    try:
        libm = ctypes.CDLL(name)
        env = (ctypes.c_uint8 * 64)()  # room beyond fenv_t's 32 bytes
        if libm.fegetenv(env) != 0:
            return False
        mxcsr = ctypes.c_uint32.from_buffer(env, _FENV_MXCSR_OFFSET)
        mxcsr.value |= MXCSR_FTZ_DAZ
        return libm.fesetenv(env) == 0 and subnormals_flushed()
    except (OSError, AttributeError):
        return False


def flush_subnormals() -> str:
    """Treat subnormal floats as zero in this thread and those it starts; how: "mxcsr" (x86-64
    Linux), "torch" (torch.set_flush_denormal, e.g. on ARM), or "" where neither works."""
    if _set_mxcsr_bits():
        return "mxcsr"
    torch = sys.modules.get("torch")
    if torch is not None and torch.set_flush_denormal(True):
        return "torch"
    return ""
