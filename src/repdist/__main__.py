"""Command line: `python -m repdist info FILE...` prints what produced a result file.

Parquet files carry their provenance (config hash, package/torch/numpy versions, git commit,
experiment, seeds, settings) in the schema metadata; metrics.json files carry it inline.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import __version__
from .io import read_parquet_metadata


def info(path: Path) -> dict:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        meta = read_parquet_metadata(path)
        pf = pq.ParquetFile(path)
        return {"rows": pf.metadata.num_rows, "columns": pf.schema_arrow.names, **meta}
    if path.suffix == ".json":
        return json.loads(path.read_text())
    raise SystemExit(f"repdist info: {path}: expected a .parquet or .json output of repdist")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="repdist", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"repdist {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="print the provenance of result files")
    p_info.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
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
