"""`repdist diff RESULTS_A RESULTS_B`: did a run elsewhere reproduce this one? Provenance may
differ (commit, versions), so it is left out; so are figures, whose bytes depend on fonts and
library versions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import plural

NAME = "diff"
HELP = "compare the data (parquet, CSV, LaTeX) of two result folders"
DESCRIPTION = ("Compare the data of two result folders: did a run elsewhere reproduce this one? "
               "Parquet tables are compared by value, CSV and LaTeX tables line by line without "
               "their provenance. Figures, logs and benchmark timings are left out. Exit status: "
               "0 for the same data, 1 for differences or no data file, 2 for a missing folder.")
DATA_SUFFIXES = (".parquet", ".csv", ".tex")
SKIPPED_PARTS = {"benchmarks", "logs", ".snakemake"}


def data_files(root: Path) -> list[Path]:
    """The data files under `root`, relative to it, sorted."""
    return sorted(p.relative_to(root) for p in root.rglob("*")
                  if p.is_file() and p.suffix in DATA_SUFFIXES and not p.name.startswith(".")
                  and not SKIPPED_PARTS.intersection(p.relative_to(root).parts))


def _table_lines(path: Path) -> list[str]:
    comment = "%" if path.suffix == ".tex" else "#"
    return [line for line in path.read_text().splitlines() if not line.startswith(comment)]


def diff_file(a: Path, b: Path) -> str | None:
    """None when the two files hold the same data, else a one-line reason."""
    if a.suffix == ".parquet":
        import pandas as pd

        from ..io import read_parquet_single_threaded

        left, right = read_parquet_single_threaded(a), read_parquet_single_threaded(b)
        try:
            pd.testing.assert_frame_equal(left, right, check_exact=True)
        except AssertionError as err:
            return " ".join(str(err).split())[:300]
        return None
    left_lines, right_lines = _table_lines(a), _table_lines(b)
    if left_lines == right_lines:
        return None
    for i, (x, y) in enumerate(zip(left_lines, right_lines)):
        if x != y:
            return f"line {i + 1}: {x[:120]!r} != {y[:120]!r}"
    return f"{len(left_lines)} lines != {len(right_lines)} lines"


def diff_runs(a: str | Path, b: str | Path) -> tuple[list[Path], list[str]]:
    """(the files compared, the differences found) between two result folders."""
    a, b = Path(a), Path(b)
    for root in (a, b):
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: not a folder")
    files_a, files_b = data_files(a), data_files(b)
    problems = [f"only in {a}: {p}" for p in sorted(set(files_a) - set(files_b))]
    problems += [f"only in {b}: {p}" for p in sorted(set(files_b) - set(files_a))]
    common = sorted(set(files_a) & set(files_b))
    for rel in common:
        reason = diff_file(a / rel, b / rel)
        if reason:
            problems.append(f"{rel}: {reason}")
    return common, problems


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", type=Path, metavar="RESULTS_A", help="one results folder")
    p.add_argument("b", type=Path, metavar="RESULTS_B", help="the folder to compare it with")


def run(args: argparse.Namespace) -> int:
    try:
        compared, problems = diff_runs(args.a, args.b)
    except FileNotFoundError as err:
        print(f"repdist diff: {err}", file=sys.stderr)
        return 2
    for line in problems:
        print(line)
    print(f"repdist diff: {plural(len(compared), 'data file')} compared, "
          f"{plural(len(problems), 'difference')}")
    return 1 if problems or not compared else 0
