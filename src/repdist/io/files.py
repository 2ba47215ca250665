"""Writing outputs so that they only ever appear complete, with provenance attached.

Every writer goes through `atomic_path` (a folder through `atomic_folder`): written under a
temporary name beside the target and renamed into place, so an interrupted job never leaves a
half-written file that Snakemake could mistake for a result."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

PROVENANCE_KEY = b"repdist"


def file_digest(path: str | os.PathLike[str], algorithm: str = "sha256") -> str:
    """The hex digest of a file's bytes (read in chunks: checkpoints and archives are large)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, algorithm).hexdigest()


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside `path`: renamed to `path` on success, deleted on error."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as err:  # a full disk, a file-size limit: say which output could not be made
        raise OSError(err.errno, f"cannot write {target}: {err.strerror or err}") from err
    finally:
        if tmp.exists():
            tmp.unlink()


@contextmanager
def atomic_folder(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty folder beside `path`: it replaces `path` on success, is deleted on error."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        os.replace(tmp, target)
    except OSError as err:  # a full disk, a file-size limit: say which output could not be made
        raise OSError(err.errno, f"cannot write {target}: {err.strerror or err}") from err
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=json_default) + "\n")


def json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj)}")


TABLE_PROVENANCE = "repdist provenance: "
# A CSV's provenance goes to a sidecar: spreadsheets and read.csv must see the header first.
_COMMENT = {".tex": ("% ", ""), ".md": ("<!-- ", " -->")}


def checkpoint_sidecar(path: str | os.PathLike[str]) -> Path:
    """`<checkpoint>.json` (step, total, time), for readers without torch (`repdist progress`)."""
    return Path(path).with_name(Path(path).name + ".json")


def read_checkpoint_sidecar(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """A checkpoint's sidecar, None where there is none or it is not whole JSON."""
    try:
        return json.loads(checkpoint_sidecar(path).read_text())
    except (OSError, ValueError):
        return None


def provenance_sidecar(path: str | os.PathLike[str]) -> Path:
    """`<name>.csv.provenance.json` beside a CSV table."""
    return Path(path).with_name(Path(path).name + ".provenance.json")


def write_csv(path: str | os.PathLike[str], frame: Any,
              metadata: Mapping[str, Any] | None = None) -> None:
    """A DataFrame as a plain CSV (full float precision, no index), and `metadata` to its
    provenance sidecar, written first: a table never appears without it."""
    if metadata is not None:
        write_text(provenance_sidecar(path), json.dumps(dict(metadata), indent=2,
                                                        sort_keys=True, default=json_default))
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        frame.to_csv(fh, index=False, float_format="%.17g")


def write_table_text(path: str | os.PathLike[str], text: str, metadata: Mapping[str, Any]) -> None:
    """Write a LaTeX (.tex) or Markdown (.md) table with its provenance as a first comment line."""
    start, end = _COMMENT[Path(path).suffix]
    blob = json.dumps(dict(metadata), sort_keys=True, default=json_default)
    write_text(path, f"{start}{TABLE_PROVENANCE}{blob}{end}\n{text}")


def read_table_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The provenance of a `write_csv` or `write_table_text` table; {} if it has none."""
    if Path(path).suffix == ".csv":
        sidecar = provenance_sidecar(path)
        return json.loads(sidecar.read_text()) if sidecar.exists() else {}
    with open(path) as fh:
        first = fh.readline().strip()
    start, end = _COMMENT.get(Path(path).suffix, ("# ", ""))
    head = f"{start}{TABLE_PROVENANCE}"
    if not first.startswith(head):
        return {}
    return json.loads(first[len(head): len(first) - len(end)])


def read_parquet_single_threaded(path: str | os.PathLike[str]) -> Any:
    """A parquet table read without Arrow's thread pools: a process that reads many files and
    exits (`repdist diff`) otherwise aborts now and then at exit, with status 134."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, use_threads=False, pre_buffer=False)
    return table.to_pandas(use_threads=False)


def read_csv(path: str | os.PathLike[str]) -> Any:
    """Read a CSV table (a plain CSV: `pd.read_csv` does the same)."""
    import pandas as pd

    return pd.read_csv(path)


def write_parquet(path: str | os.PathLike[str], frame: Any, metadata: Mapping[str, Any]) -> None:
    """Write a DataFrame as parquet with `metadata` (JSON) under the schema key b'repdist'."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    blob = json.dumps(dict(metadata), sort_keys=True, default=json_default).encode()
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), PROVENANCE_KEY: blob})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_parquet_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The repdist metadata of a parquet file written by `write_parquet` ({} if none)."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(PROVENANCE_KEY)
    return json.loads(raw) if raw else {}


def write_npz(path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray],
              metadata: Mapping[str, Any]) -> None:
    """Arrays as an uncompressed .npz, `metadata` (JSON) as the string array 'repdist'."""
    if PROVENANCE_KEY.decode() in arrays:
        raise ValueError(f"{path}: the array name {PROVENANCE_KEY.decode()!r} holds the provenance")
    meta = json.dumps(dict(metadata), sort_keys=True, default=json_default)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays, **{PROVENANCE_KEY.decode(): np.array(meta)})


def read_npz_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The repdist metadata of an .npz written by `write_npz` ({} if none)."""
    with np.load(path, allow_pickle=False) as data:
        name = PROVENANCE_KEY.decode()
        return json.loads(str(data[name])) if name in data.files else {}


def write_table(path: str | os.PathLike[str], frame: Any, metadata: Mapping[str, Any]) -> None:
    """A table as .parquet or .csv, chosen by the name's suffix, atomically, with provenance."""
    suffix = Path(path).suffix
    if suffix == ".parquet":
        write_parquet(path, frame, metadata)
    elif suffix == ".csv":
        write_csv(path, frame, metadata)
    else:
        raise ValueError(f"{path}: a table is written as .parquet or .csv, not {suffix!r}")
