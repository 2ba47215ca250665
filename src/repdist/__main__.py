"""Command line: `python -m repdist info FILE...` prints what produced a result file;
`python -m repdist diff DIR_A DIR_B` checks that two result folders hold the same data;
`python -m repdist progress [RESULTS]` shows how far a run (in progress or done) has got;
`python -m repdist job-times [RESULTS]` sums a run's per-job benchmark files by rule and width;
`python -m repdist compare MODEL... -o pairs.parquet` measures every pair of models.

Parquet files carry their provenance (config hash, package/torch/numpy versions, git commit,
experiment, seeds, settings) in the schema metadata; metrics.json files carry it inline; LaTeX
and Markdown tables in a first comment line; CSV tables in a `<name>.csv.provenance.json`
sidecar (a CSV stays plain: its first line is its header).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import __version__, compare_cli
from .io import read_parquet_metadata, read_table_metadata


def info(path: Path) -> dict:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        meta = read_parquet_metadata(path)
        pf = pq.ParquetFile(path)
        return {"rows": pf.metadata.num_rows, "columns": pf.schema_arrow.names, **meta}
    if path.suffix == ".json":
        return json.loads(path.read_text())
    if path.suffix in (".csv", ".tex", ".md"):
        meta = read_table_metadata(path)
        if not meta:
            where = "sidecar" if path.suffix == ".csv" else "line"
            raise SystemExit(f"repdist info: {path}: no repdist provenance {where}")
        return meta
    raise SystemExit(f"repdist info: {path}: expected a .parquet, .json, .csv, .tex or .md "
                     "output of repdist")


def diff(a: Path, b: Path) -> int:
    from .run_diff import diff_runs

    try:
        compared, problems = diff_runs(a, b)
    except FileNotFoundError as err:
        print(f"repdist diff: {err}", file=sys.stderr)
        return 2
    for line in problems:
        print(line)
    print(f"repdist diff: {len(compared)} data files compared, {len(problems)} differences")
    return 1 if problems or not compared else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="repdist", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"repdist {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="print the provenance of result files")
    p_info.add_argument("paths", nargs="+", type=Path)
    p_diff = sub.add_parser("diff", help="compare the data (parquet, CSV, LaTeX) of two result folders")
    p_diff.add_argument("a", type=Path)
    p_diff.add_argument("b", type=Path)
    p_progress = sub.add_parser("progress", help="the state of a run's training jobs")
    p_progress.add_argument("results", nargs="?", type=Path, default=Path("results"))
    p_times = sub.add_parser("job-times", help="a run's job times by rule and width, and machines")
    p_times.add_argument("results", nargs="?", type=Path, default=Path("results"))
    compare_cli.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "diff":
        return diff(args.a, args.b)
    if args.command == "compare":
        return compare_cli.run(args)
    if args.command == "job-times":
        from .job_times import report as job_times_report

        try:
            print(job_times_report(args.results))
        except (FileNotFoundError, ValueError) as err:
            print(f"repdist job-times: {err}", file=sys.stderr)
            return 2
        return 0
    if args.command == "progress":
        from .run_progress import report

        try:
            print(report(args.results))
        except FileNotFoundError as err:
            print(f"repdist progress: {err}", file=sys.stderr)
            return 2
        return 0
    for path in args.paths:
        if not path.exists():
            print(f"repdist info: {path}: no such file", file=sys.stderr)
            return 2
        print(f"== {path}")
        for key, value in info(path).items():
            print(f"{key}: {json.dumps(value) if isinstance(value, (dict, list)) else value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
