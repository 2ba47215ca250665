"""Keep freed memory for reuse: glibc otherwise returns every large buffer to the kernel.

A training step allocates and frees tensors of a few MB (activations, gradients, Adam's
temporaries). glibc serves such sizes with mmap and unmaps them on free, so the next step takes
a page fault on every 4 KiB page it writes: ~500 faults per step at width 128, ~1,100 at 256,
about 10% of the step. Raising the mmap threshold to its maximum (32 MiB) and the trim
threshold far above it makes freed buffers stay in the heap, and the next step reuses them.
"""

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
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX) == 1
    return mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and ok
