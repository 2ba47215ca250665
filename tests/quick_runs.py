"""Quick-DAG runs for the tests, shared between CI's parts or run beside the tests.

`make test-slurm` (tests/slurm/slurm_check.py --keep-runs DIR) runs the quick DAG locally and
through SLURM. `make test-slow` and `make test` then read those two runs (REPDIST_QUICK_RUNS=DIR)
instead of running the DAG again. A kept run is used only when it was made from the same workflow
(the files that make the DAG's outputs, fingerprinted). Otherwise a test session runs its own beside
its other tests (`BesideRun`, started from tests/conftest.py)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

from repdist.pipeline.warm import alive
from repdist_dev.checkout import ROOT

RUNS_ENV = "REPDIST_QUICK_RUNS"
STAMP = "workflow-fingerprint.txt"
# what a quick run's outputs come from (tests, docs and the README do not change them)
SOURCES = ("Snakefile", "config.yaml", "config.quick.yaml", "rules", "workflow", "src",
           "profiles", "report", "envs")


def fingerprint(root: Path = ROOT) -> str:
    """sha256 of the names and bytes of the workflow's files (git's tracked and untracked but
    not ignored ones under SOURCES)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard", "--", *SOURCES], cwd=root,
                            capture_output=True, check=True).stdout.split(b"\0")
    digest = hashlib.sha256()
    for name in sorted(filter(None, listed)):
        path = root / name.decode()
        if path.is_file():
            digest.update(name + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def keep(runs: dict[str, Path], folder: Path, root: Path = ROOT) -> None:
    """Move finished quick runs (their whole --directory, by name) into `folder`, stamped."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, work in runs.items():
        work.rename(folder / name)
    (folder / STAMP).write_text(fingerprint(root) + "\n")


def shared_run(name: str) -> Path | None:
    """The kept run `name` ("local" or "slurm") when REPDIST_QUICK_RUNS names a folder of runs
    made from this workflow; None (with a warning when one was named but does not fit)."""
    folder = os.environ.get(RUNS_ENV)
    if not folder:
        return None
    stamp, run = Path(folder) / STAMP, Path(folder) / name
    if not stamp.is_file() or not (run / "results/quick").is_dir():
        warnings.warn(f"{RUNS_ENV}={folder} holds no kept run {name!r}: running the DAG here")
        return None
    if stamp.read_text().strip() != fingerprint():
        warnings.warn(f"{RUNS_ENV}={folder}: made from another workflow: running the DAG here")
        return None
    return run



QUICK_CONFIG = ROOT / "config.quick.yaml"
WORKSTATION = ROOT / "profiles" / "workstation"
BESIDE = "quick-dag"  # the folder of the run beside the tests, in the session's shared scratch
STATUS = "status.json"  # written by the runner when Snakemake has ended
LOG = "snakemake.log"


def local_command(work: Path, cores: int = 2, max_threads: int | None = None,
                  configs: tuple[Path, ...] = (QUICK_CONFIG,)) -> list[str]:
    """The quick DAG as `make quick` runs it (profiles/workstation), into `work`/results/quick,
    Snakemake a module of this interpreter; `max_threads` caps every job's threads."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"),
           "--profile", str(WORKSTATION), "--cores", str(cores), "--directory", str(work)]
    if max_threads is not None:
        cmd += ["--max-threads", str(max_threads)]
    return [*cmd, "--configfile", *map(str, configs)]  # one flag: a second would replace the first


def stop_group(proc: subprocess.Popen, grace: float = 60.0) -> None:
    """SIGTERM to a process group led by `proc` (Snakemake stops its jobs), SIGKILL after
    `grace` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_beside(folder: Path, watch: int, cores: int) -> int:
    """The runner of a quick DAG beside the tests: Snakemake into `folder` (every job on one
    thread, as it shares the cores with the tests; every torch job under the host-copy guard),
    its output in snakemake.log, then status.json. Ended early, with the DAG stopped, when the
    process `watch` (the test session) ends first."""
    from repdist.io.host import GUARD_ENV

    start = time.monotonic()
    with open(folder / LOG, "w") as fh:
        proc = subprocess.Popen(local_command(folder, cores, max_threads=1), stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, GUARD_ENV: "1"})
    note = None
    while proc.poll() is None:
        if not alive(watch):
            note = f"stopped: the test session (pid {watch}) ended first"
            stop_group(proc)
            break
        time.sleep(0.5)
    status = {"exit": proc.returncode, "seconds": round(time.monotonic() - start, 1),
              "cores": cores, "note": note}
    tmp = folder / (STATUS + ".tmp")
    tmp.write_text(json.dumps(status) + "\n")
    tmp.replace(folder / STATUS)
    return 0


# A session's first process to ask starts a runner (`python tests/quick_runs.py beside`). It
# runs the DAG as `make quick` does, every job on one thread as it shares the cores, and writes
# status.json when Snakemake has ended. Every process of the session waits for that one run where it
# needs its outputs.
class BesideRun:
    """A quick DAG running beside the tests, shared by every process of one test session: the
    first to ask starts it (`start_or_join`), each waits for it where it needs its outputs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def start_or_join(cls, shared: Path, watch: int, cores: int) -> BesideRun:
        """Start the runner in `shared`/quick-dag unless a process of this session already has;
        it stops the DAG if the process `watch` ends first."""
        folder = shared / BESIDE
        try:
            folder.mkdir()
        except FileExistsError:
            return cls(folder)
        with open(folder / "runner.log", "w") as err:
            subprocess.Popen([sys.executable, __file__, "beside", str(folder), "--watch",
                              str(watch), "--cores", str(cores)],
                             stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        return cls(folder)

    def status(self) -> dict | None:
        path = self.folder / STATUS
        return json.loads(path.read_text()) if path.is_file() else None

    def wait(self, timeout: float) -> Path:
        """results/quick once the run has ended well; AssertionError with the tail of its log
        if it failed, or did not end within `timeout` seconds of this call."""
        deadline = time.monotonic() + timeout
        while (status := self.status()) is None and time.monotonic() < deadline:
            time.sleep(0.5)
        if status is not None and status["exit"] == 0:
            return self.folder / "results" / "quick"
        log = self.folder / LOG
        tail = "".join(log.read_text().splitlines(keepends=True)[-60:]) if log.is_file() else ""
        runner = (self.folder / "runner.log").read_text() if (
            self.folder / "runner.log").is_file() else ""
        state = status or f"still running after {timeout:.0f} s"
        raise AssertionError(f"the quick DAG beside the tests: {state} ({log}):\n{tail}{runner}")


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python tests/quick_runs.py",
                                     description="run the quick DAG beside a test session")
    sub = parser.add_subparsers(dest="command", required=True)
    beside = sub.add_parser("beside", help=run_beside.__doc__.splitlines()[0])
    beside.add_argument("folder", type=Path)
    beside.add_argument("--watch", type=int, required=True, help="the test session's pid")
    beside.add_argument("--cores", type=int, default=2)
    args = parser.parse_args(argv)
    return run_beside(args.folder, args.watch, args.cores)


if __name__ == "__main__":
    sys.exit(main())
