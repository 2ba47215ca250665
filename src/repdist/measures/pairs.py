"""The one loop over pairs of models: every caller that compares models pair by pair hands it
prepared models and gets one result per pair, in pair order. Pairs run serially or in a process
pool (`jobs`) with the same results. A degenerate pair's reason is in its `warning` key, and
also a DegenerateRepresentationWarning unless `quiet` (or in a worker)."""

from __future__ import annotations

import itertools
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from typing import Any

from .compare import (
    CompareSettings,
    DegenerateRepresentationWarning,
    PivotSampleWarning,
    compare_with_settings,
)
from .prepared import PreparedModel

PROGRESS_EVERY_S = 2.0

Pair = tuple[int, int]


def all_pairs(n: int) -> list[Pair]:
    """Every unordered pair (i < j) of n models, in order."""
    return list(itertools.combinations(range(n), 2))


def compare_quietly(m1: PreparedModel, m2: PreparedModel,
                    settings: CompareSettings) -> dict[str, Any]:
    """One pair; a degenerate pair's reason, and an unproven pivot search, go to the `warning`
    key, not to stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateRepresentationWarning)
        warnings.simplefilter("ignore", PivotSampleWarning)
        return compare_with_settings(m1, m2, settings)


# Worker state of the process pool: the prepared models and settings, sent once per worker.
_WORKER: dict[str, Any] = {}


def _init_worker(prepared: Sequence[PreparedModel], settings: CompareSettings) -> None:
    _WORKER.update(prepared=prepared, settings=settings)


def _compare_chunk(pairs: list[Pair]) -> list[tuple[int, int, dict[str, Any]]]:
    prepared, settings = _WORKER["prepared"], _WORKER["settings"]
    return [(i, j, compare_quietly(prepared[i], prepared[j], settings)) for i, j in pairs]


def compare_pairs(prepared: Sequence[PreparedModel], settings: CompareSettings,
                  pairs: Sequence[Pair] | None = None, jobs: int = 1, name: str = "pairs",
                  quiet: bool = False) -> list[dict[str, Any]]:
    """The result of every pair (default: all pairs i < j), in the order of `pairs`."""
    pairs = all_pairs(len(prepared)) if pairs is None else list(pairs)
    for model in prepared:  # each model's work once, here, not once per pair or worker
        model.warm(settings.selected, settings.conventions, settings.method)
    progress = Progress(len(pairs), name)
    one_pair = compare_quietly if quiet else compare_with_settings
    results: dict[Pair, dict[str, Any]] = {}
    if jobs == 1 or len(pairs) < 2:
        for i, j in pairs:
            results[i, j] = one_pair(prepared[i], prepared[j], settings)
            progress.step(1)
    else:
        for i, j, result in _in_pool(prepared, settings, pairs, jobs, progress):
            results[i, j] = result
    progress.finish()
    return [results[pair] for pair in pairs]


def _in_pool(prepared: Sequence[PreparedModel], settings: CompareSettings, pairs: list[Pair],
             jobs: int, progress: Progress) -> list[tuple[int, int, dict[str, Any]]]:
    n_chunks = min(len(pairs), 4 * jobs)
    chunks = [pairs[c::n_chunks] for c in range(n_chunks)]
    done: list[tuple[int, int, dict[str, Any]]] = []
    # Workers inherit the environment, so their BLAS runs as many threads as ours: a
    # different thread count can change sums over inputs in the last bit.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn"),
                             initializer=_init_worker, initargs=(prepared, settings)) as pool:
        futures = [pool.submit(_compare_chunk, chunk) for chunk in chunks]
        try:
            for future in as_completed(futures):
                chunk = future.result()
                done += chunk
                progress.step(len(chunk))
        except BaseException:
            pool.shutdown(cancel_futures=True)  # a failed pair: do not wait for the rest
            raise
    return done


class Progress:
    """'<name>: k/n pairs' on stderr at most every PROGRESS_EVERY_S seconds, once a run is
    that long."""

    def __init__(self, total: int, name: str, write: Callable[[str], Any] | None = None) -> None:
        self.total, self.done, self.name = total, 0, name
        self.start = self.last = time.perf_counter()
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.shown = False

    def step(self, n: int) -> None:
        self.done += n
        now = time.perf_counter()
        if now - self.last >= PROGRESS_EVERY_S and self.done < self.total:
            self.last, self.shown = now, True
            self.write(f"{self.name}: {self.done}/{self.total} pairs "
                       f"({100 * self.done / self.total:.0f}%), {now - self.start:.0f} s")

    def finish(self) -> None:
        if self.shown:
            self.write(f"{self.name}: {self.total}/{self.total} pairs, "
                       f"{time.perf_counter() - self.start:.0f} s")
