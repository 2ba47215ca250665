"""The one downloader: a file takes its final name only once complete and checked.

CIFAR archives (published MD5) and the authors' checkpoints (sha256, Zenodo checksums) come
through `download`. `unreachable` tells an offline machine in seconds, before any job starts."""

from __future__ import annotations

import json
import os
import shutil
import socket
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from .files import atomic_path, file_digest

ALGORITHMS = ("md5", "sha256")


class DownloadError(RuntimeError):
    """A download that cannot be made (a record without the file, an unreachable host)."""


class ChecksumError(ValueError):
    """A file whose digest is not the one published for it."""


def verify_checksum(path: str | os.PathLike[str], checksum: str,
                    published_by: str = "published") -> None:
    """Raise ChecksumError unless the file's digest is `checksum` ("md5:<hex>", "sha256:<hex>")."""
    algorithm, _, want = checksum.partition(":")
    if algorithm not in ALGORITHMS:
        raise ChecksumError(f"{path}: checksum {checksum!r} names no algorithm of {ALGORITHMS}")
    got = file_digest(path, algorithm)
    if got != want:
        raise ChecksumError(
            f"{path}: {algorithm} {got} does not match the {published_by} {want}; the file is "
            "corrupt or not the one expected (delete it to download it again)")


def download(url: str, target: str | os.PathLike[str], checksum: str | None = None,
             timeout: float = 60.0, published_by: str = "published") -> Path:
    """Fetch `url` into `target`; with a checksum the bytes are verified before the rename."""
    with atomic_path(target) as tmp:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(tmp, "wb") as fh:
            shutil.copyfileobj(response, fh)
        if checksum is not None:
            verify_checksum(tmp, checksum, published_by)
    return Path(target)


def unreachable(url: str, timeout: float = 3.0) -> str | None:
    """Why `url` cannot be fetched here, or None when its host (or proxy) accepts a connection."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "file":
        found = Path(urllib.request.url2pathname(parts.path)).exists()
        return None if found else f"{url}: no such file"
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname or ""):
        parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as err:
        return f"cannot connect to {host}:{port} ({err})"


def zenodo_files(record_url: str, names: Sequence[str],
                 timeout: float = 60.0) -> dict[str, dict[str, str]]:
    """name -> {"url", "checksum"} of a Zenodo record's files; DownloadError if one is absent."""
    with urllib.request.urlopen(record_url, timeout=timeout) as response:
        record = json.load(response)
    files = {f["key"]: {"url": f["links"]["self"], "checksum": f["checksum"]}
             for f in record.get("files", [])}
    missing = [n for n in names if n not in files]
    if missing:
        raise DownloadError(
            f"{record_url}: the record has no {missing[:3]}{' ...' if len(missing) > 3 else ''}; "
            f"it holds {sorted(files)[:5]}")
    return {n: files[n] for n in names}
