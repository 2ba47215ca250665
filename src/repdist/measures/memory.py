"""Memory the measures need, estimated from N, K, M, checked against what the machine has.

A comparison far beyond what fits stops at once with a MemoryError naming the sizes, rather than
grind into swap or die by the OOM killer without a word. The estimates count the float64 arrays
each step holds at its peak (tracemalloc: a prepare holds ~3 N x K arrays, a pair ~6 more), with
some margin; they only refuse what cannot work, never size anything."""

from __future__ import annotations

import os
from collections.abc import Collection
from contextlib import suppress
from pathlib import Path

from .extra import IP_BLOCK_ELEMENTS, KNN_BLOCK_ROWS, MIPS_KDTREE_MAX_DIM

CHECK_ABOVE = 256 << 20  # below this many bytes, do not even look
KNN_COLUMNS = 11  # k + 1 neighbours per input while querying the k-d tree
GIB = 1 << 30


def available_bytes() -> int | None:
    """Memory this process can still get: MemAvailable, lowered by a cgroup (container) limit;
    None where neither can be read (then nothing is refused)."""
    limits = []
    with suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                limits.append(int(line.split()[1]) * 1024)
    with suppress(OSError, ValueError):
        cgroup = Path("/sys/fs/cgroup")
        limit = (cgroup / "memory.max").read_text().strip()
        if limit != "max":
            limits.append(int(limit) - int((cgroup / "memory.current").read_text()))
    if not limits:
        try:
            limits.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (OSError, ValueError, AttributeError):
            return None
    return max(0, min(limits))


def require(nbytes: int, what: str) -> None:
    """Raise MemoryError naming `what` (the step and its sizes) if nbytes will not fit."""
    if nbytes < CHECK_ABOVE:
        return
    free = available_bytes()
    if free is not None and nbytes > free:
        raise MemoryError(f"{what} needs about {nbytes / GIB:.1f} GiB of memory, but only "
                          f"{free / GIB:.1f} GiB is available: use fewer inputs or labels, or a "
                          "bigger machine")


def prepare_bytes(n: int, k: int, m: int, parts: Collection[str], stream_block: int = 0) -> int:
    """Peak bytes of `prepare` for N inputs, K labels, width M and these parts; with `stream_block`,
    by the low-rank path (logits streamed that many at a time, factors K x (M+1), N x (M+1))."""
    if stream_block:
        total = 8 * (4 * stream_block + 4 * n * m + 4 * k * (m + 1))
    else:
        nk_arrays = 3 + ("loglik_centred" in parts) + ("loglik_clr" in parts)
        total = 8 * (nk_arrays * n * k + 4 * n * m)
    if "loglik_cov" in parts:
        total += 8 * k * k
    if {"knn_idx", "ip_knn"} & set(parts):
        total += 8 * n * KNN_COLUMNS * 5  # distances, indices, the kept ones, keys, their sort
    if "ip_knn" in parts and m + 1 > MIPS_KDTREE_MAX_DIM:  # similarity rows, their negative,
        total += 8 * 4 * min(KNN_BLOCK_ROWS * n, IP_BLOCK_ELEMENTS)  # argpartition's, a gather
    return total + 8 * 3 * n * m  # f clamped, with unit rows, centred (alignment conventions)


def pair_bytes(n: int, k: int, m: int, label_side: bool, n_sets: int, set_chunk: int = 65_536,
               neighbours: bool = False) -> int:
    """Peak bytes of one pair's measures (beyond the two prepared models): KL and d_logit
    temporaries; with the label side, the pivot terms (N x K), the K x K objective and its
    blocks (bool + float64 of OBJECTIVE_BLOCK elements), and m_SVD_f's label-set blocks; with
    the PRH neighbour measures, cycle_knn's N x k x k table and CKNNA's masked kernels."""
    total = 8 * 3 * n * k
    if neighbours:
        total += 8 * n * KNN_COLUMNS * (KNN_COLUMNS + 12)
    if label_side:
        total += 8 * (6 * n * k + 16 * k * k) + 9 * (1 << 22)
        total += 8 * n_sets * (m + 2) + 8 * 3 * min(n_sets, set_chunk) * m * m
    return total


def low_rank_pair_bytes(n: int, k: int, m: int, stream_block: int, pivot_block: int,
                        block_elements: int) -> int:
    """Peak bytes of one pair by the low-rank path: the KL pass's blocks of logits (~6:
    both models' logits, their difference, weights, products), the pivot search's rows (~12
    pivot_block x K arrays), two K x (M+1) products, and m_SVD_f's (sets, M, M) blocks."""
    return 8 * (6 * stream_block + 12 * pivot_block * k + 4 * k * (m + 2)
                + 6 * block_elements + 2 * n * (m + 1))


def label_sets_bytes(count: int, m: int) -> int:
    """Bytes of listing all `count` label sets of size M (tuples, then an array)."""
    return count * (72 + 16 * m)
