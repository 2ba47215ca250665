"""`repdist info FILE...`: what produced a result file, read from where `io.files` puts it
(parquet schema metadata, an .npz's 'repdist' array, a table's comment line or CSV sidecar)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..io import read_npz_metadata, read_parquet_metadata, read_table_metadata

NAME = "info"
HELP = "print the provenance of result files"
DESCRIPTION = ("Print what produced each result file: its config hash, versions, git commit, "
               "experiment and settings. It reads parquet tables, metrics.json files, the .npz "
               "files of repdist extract, and CSV, LaTeX and Markdown tables.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", type=Path, metavar="FILE",
                   help="a result file: .parquet, .json, .npz, .csv, .tex or .md")


def info(path: Path) -> dict:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        meta = read_parquet_metadata(path)
        pf = pq.ParquetFile(path)
        return {"rows": pf.metadata.num_rows, "columns": pf.schema_arrow.names, **meta}
    if path.suffix == ".json":
        return json.loads(path.read_text())
    if path.suffix in (".npz", ".csv", ".tex", ".md"):
        meta = read_npz_metadata(path) if path.suffix == ".npz" else read_table_metadata(path)
        if not meta:
            where = {".npz": "array", ".csv": "sidecar"}.get(path.suffix, "line")
            raise SystemExit(f"repdist info: {path}: no repdist provenance {where}")
        return meta
    raise SystemExit(f"repdist info: {path}: expected a .parquet, .json, .npz, .csv, .tex or .md "
                     "output of repdist")


def run(args: argparse.Namespace) -> int:
    for path in args.paths:
        if not path.exists():
            print(f"repdist info: {path}: no such file", file=sys.stderr)
            return 2
        print(f"== {path}")
        for key, value in info(path).items():
            print(f"{key}: {json.dumps(value) if isinstance(value, (dict, list)) else value}")
    return 0
