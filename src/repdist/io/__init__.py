"""Files in and out: atomic writers with provenance, representation tables and model files,
and the one downloader. Jobs import the writers and provenance helpers from here."""

from .files import (
    atomic_folder, atomic_path, checkpoint_sidecar, file_digest, json_default,
    read_checkpoint_sidecar, read_csv, read_npz_metadata, read_parquet_metadata,
    read_parquet_single_threaded, read_table_metadata, write_csv, write_json, write_npz,
    write_parquet, write_table, write_table_text, write_text,
)
from .provenance import config_hash, git_commit, provenance, table_provenance

__all__ = [
    "atomic_folder", "atomic_path", "checkpoint_sidecar", "config_hash", "file_digest",
    "git_commit", "json_default", "provenance", "read_checkpoint_sidecar", "read_csv",
    "read_npz_metadata", "read_parquet_metadata", "read_parquet_single_threaded",
    "read_table_metadata", "table_provenance", "write_csv", "write_json", "write_npz",
    "write_parquet", "write_table", "write_table_text", "write_text",
]
