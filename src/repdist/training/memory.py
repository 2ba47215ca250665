"""Keep freed memory for reuse: glibc may otherwise return large buffers to the kernel.

A step's tensors of a few MB above glibc's mmap threshold are unmapped on free, and the next
step page-faults on every page it writes. The first evaluation usually raises glibc's dynamic
threshold; pinning it at its maximum (32 MiB) makes this not depend on the allocation order."""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024  # glibc's upper limit on 64-bit
TRIM_THRESHOLD = 1024 * 1024 * 1024


def keep_freed_memory() -> bool:
    """Tell glibc's malloc to keep and reuse freed buffers up to 32 MiB; False if not glibc."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX) == 1
    return mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and ok
