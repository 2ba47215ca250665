"""`repdist compare MODEL... -o pairs.parquet`: every measure for every pair of the given models.

For users with their own models (issue #16): each MODEL is a folder with our parquet files, an
.npz or a .pt holding f (N x M, the same N inputs for every model) and g (K x M); see
models_io. All pairs (i < j in the order given) go to one table, through the atomic writers
with provenance. Bad input stops with exit status 2 and a message naming the file and the
numbers, before anything is written; a failure later also leaves no output file.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from .measures import (
    CompareSettings,
    DegenerateRepresentationWarning,
    PreparedModel,
    compare_with_settings,
    prepare,
)
from .measures.selection import MEASURES, keys_for
from .measures.svd import MAX_LABEL_SETS
from .models_io import LoadedModel, ModelInputError, check_models, load_model, model_names

FORMATS = (".parquet", ".csv")
ALIASES = {"m_svd_f_min": "m_svd_f"}  # the table's column name for the list-valued m_svd_f
SUMMARY = ("d_llv", "d_fg", "mcca_f", "kl")
PROGRESS_EVERY_S = 2.0
EXIT_BAD_INPUT = 2


def add_parser(sub: Any) -> None:
    """Register `compare` on the `repdist` command's subparsers."""
    p = sub.add_parser(
        "compare",
        help="every measure for every pair of models given as folders, .npz or .pt files",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("models", nargs="+", type=Path, metavar="MODEL",
                   help="a folder with embeddings.parquet and unembeddings.parquet, an .npz "
                        "with arrays f and g, or a .pt dict of tensors f and g")
    p.add_argument("-o", "--output", type=Path, required=True,
                   help="the pairs table: .parquet or .csv")
    p.add_argument("--num-samples", type=int, default=200,
                   help="candidate diversity sets of M+1 inputs for d_LLV (default 200)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    p.add_argument("--lam", type=float, default=1e-5,
                   help="weight of the scale terms t3, t4 in d_LLV (default 1e-5)")
    p.add_argument("--max-label-sets", type=int, default=MAX_LABEL_SETS,
                   help="above this many label sets, m_SVD_f runs on a seeded sample of them "
                        f"and d_fg is an estimate (default {MAX_LABEL_SETS})")
    p.add_argument("--measures", default=None,
                   help=f"comma-separated subset of: {', '.join(MEASURES)} (default: all)")
    p.add_argument("--jobs", type=int, default=1,
                   help="pairs computed in this many processes, with the same results as one "
                        "(default 1); each uses the BLAS's threads, so with many jobs set "
                        "OPENBLAS_NUM_THREADS=1 (the same for every run you compare)")


def run(args: argparse.Namespace) -> int:
    """The `compare` subcommand; returns the exit status."""
    try:
        output, settings = _check_arguments(args)
        start = time.perf_counter()
        frame, meta = compare_models(args.models, settings, args.jobs)
        write_table(output, frame, meta)
    except (ModelInputError, ValueError, MemoryError) as err:
        print(f"repdist compare: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _summary(frame, len(meta["models"]), output, time.perf_counter() - start)
    return 0


def compare_models(
    paths: Sequence[str | Path], settings: CompareSettings, jobs: int = 1
) -> tuple[Any, dict[str, Any]]:
    """Read, check and compare every pair of the models at `paths`: the pairs table and its
    provenance. What `repdist compare` and the DAG's `models:` groups both run."""
    paths = [Path(p) for p in paths]
    models = [load_model(p) for p in paths]
    check_models(models)
    names = model_names(paths)
    prepared = [prepare(m.f, m.g, settings.selected) for m in models]
    frame = _table(list(_pair_rows(prepared, names, settings, jobs)), settings)
    return frame, _provenance(settings, models, names)


def _check_arguments(args: argparse.Namespace) -> tuple[Path, CompareSettings]:
    """Fail fast, before reading any model, on a bad output name or setting."""
    output = Path(args.output)
    if output.suffix not in FORMATS:
        raise ValueError(f"{output}: the output must end in .parquet or .csv, "
                         f"got {output.suffix or 'no suffix'!r}")
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    measures = None
    if args.measures is not None:
        measures = [ALIASES.get(name.strip(), name.strip()) for name in args.measures.split(",")]
    settings = CompareSettings(num_samples=args.num_samples, lam=args.lam, seed=args.seed,
                               max_label_sets=args.max_label_sets, measures=measures)
    return output, settings


# Worker state of the process pool: the prepared models and settings, sent once per worker.
_WORKER: dict[str, Any] = {}


def _init_worker(prepared: list[PreparedModel], settings: CompareSettings) -> None:
    _WORKER.update(prepared=prepared, settings=settings)


def _compare_pairs(pairs: list[tuple[int, int]]) -> list[tuple[int, int, dict[str, Any]]]:
    prepared, settings = _WORKER["prepared"], _WORKER["settings"]
    return [(i, j, _quiet_compare(prepared[i], prepared[j], settings)) for i, j in pairs]


def _quiet_compare(m1: PreparedModel, m2: PreparedModel, s: CompareSettings) -> dict[str, Any]:
    """One pair; a degenerate pair's reason goes to the `warning` column, not to stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateRepresentationWarning)
        return compare_with_settings(m1, m2, s)


def _pair_rows(
    prepared: list[PreparedModel], names: list[str], settings: CompareSettings, jobs: int
) -> Iterator[dict[str, Any]]:
    """One table row per pair (i < j), in pair order, computed serially or in `jobs` processes."""
    pairs = list(itertools.combinations(range(len(prepared)), 2))
    progress = _Progress(len(pairs))
    results: dict[tuple[int, int], dict[str, Any]] = {}
    if jobs == 1 or len(pairs) < 2:
        for i, j in pairs:
            results[i, j] = _quiet_compare(prepared[i], prepared[j], settings)
            progress.step(1)
    else:
        n_chunks = min(len(pairs), 4 * jobs)
        chunks = [pairs[c::n_chunks] for c in range(n_chunks)]
        # Workers inherit the environment, so their BLAS runs as many threads as ours: a
        # different thread count can change sums over inputs in the last bit.
        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=get_context("spawn"), initializer=_init_worker,
            initargs=(prepared, settings),
        ) as pool:
            futures = [pool.submit(_compare_pairs, chunk) for chunk in chunks]
            try:
                for future in as_completed(futures):
                    done = future.result()
                    results.update({(i, j): r for i, j, r in done})
                    progress.step(len(done))
            except BaseException:
                pool.shutdown(cancel_futures=True)  # a failed pair: do not wait for the rest
                raise
    progress.finish()
    for i, j in pairs:
        yield _row(names[i], names[j], results[i, j])


class _Progress:
    """'k/n pairs' on stderr at most every PROGRESS_EVERY_S seconds, once a run is that long."""

    def __init__(self, total: int, write: Callable[[str], Any] | None = None) -> None:
        self.total, self.done = total, 0
        self.start = self.last = time.perf_counter()
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.shown = False

    def step(self, n: int) -> None:
        self.done += n
        now = time.perf_counter()
        if now - self.last >= PROGRESS_EVERY_S and self.done < self.total:
            self.last, self.shown = now, True
            self.write(f"repdist compare: {self.done}/{self.total} pairs "
                       f"({100 * self.done / self.total:.0f}%), {now - self.start:.0f} s")

    def finish(self) -> None:
        if self.shown:
            self.write(f"repdist compare: {self.total}/{self.total} pairs, "
                       f"{time.perf_counter() - self.start:.0f} s")


def _row(name_a: str, name_b: str, result: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"model_a": name_a, "model_b": name_b}
    for key, value in result.items():
        if key == "m_svd_f":  # one value per label set: the table keeps the minimum
            row["m_svd_f_min"] = float(np.min(value)) if len(value) else math.nan
        else:
            row[key] = value
    return row


def table_columns(settings: CompareSettings) -> list[str]:
    """The table's columns for these settings: the models, then the measures, then warning."""
    back = {measure: column for column, measure in ALIASES.items()}
    return ["model_a", "model_b", *(back.get(k, k) for k in keys_for(settings.selected))]


def _table(rows: list[dict[str, Any]], settings: CompareSettings) -> Any:
    import pandas as pd

    return pd.DataFrame(rows, columns=table_columns(settings))


def _provenance(settings: CompareSettings, models: Sequence[LoadedModel],
                names: list[str]) -> dict[str, Any]:
    from .io import provenance

    options = asdict(settings)
    options["measures"] = sorted(settings.selected)
    for unused in ("input_set", "y_pivot", "y_leave_out"):
        options.pop(unused)
    return provenance(
        None,
        tool="repdist compare",
        settings=options,
        models=[{"name": name, "path": str(m.path), "resolved_path": str(m.path.resolve()),
                 "shape": m.shape_text} for name, m in zip(names, models, strict=True)],
    )


def write_table(output: str | Path, frame: Any, meta: dict[str, Any]) -> None:
    """The pairs table as .parquet or .csv (by the name's suffix), atomically, with provenance."""
    from .io import write_csv, write_parquet

    output = Path(output)
    if output.suffix == ".parquet":
        write_parquet(output, frame, meta)
    else:
        write_csv(output, frame, meta)


def _summary(frame: Any, n_models: int, output: Path, seconds: float) -> None:
    print(f"repdist compare: {n_models} models, {len(frame)} pairs -> {output} ({seconds:.1f} s)")
    for column in SUMMARY:
        if column in frame:
            values = frame[column].to_numpy(dtype=np.float64)
            finite = values[np.isfinite(values)]
            if finite.size:
                line = (f"  {column:<7} mean {finite.mean():.6g}  min {finite.min():.6g}  "
                        f"max {finite.max():.6g}")
            else:
                line = f"  {column:<7} no finite value"
            nan = values.size - finite.size
            print(line + (f"  ({nan} NaN)" if nan else ""))
    if "d_fg_estimate" in frame and frame["d_fg_estimate"].any():
        print("  d_fg is an estimate (a lower bound): m_SVD_f ran on a sample of "
              f"{int(frame['m_svd_label_sets'].iloc[0])} label sets")
    flagged = int((frame["warning"] != "").sum())
    if flagged:
        print(f"  {flagged} pair(s) with a warning (see the warning column)")


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m repdist.compare_cli ...`, the same as `repdist compare ...`."""
    parser = argparse.ArgumentParser(prog="repdist")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(["compare", *(argv if argv is not None else sys.argv[1:])]))


if __name__ == "__main__":
    sys.exit(main())
