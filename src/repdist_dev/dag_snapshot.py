"""Print a workflow's dry-run DAG in a stable text form: one block per job, jobs sorted.

Refactoring the rule files must not change what runs: tests/test_architecture.py compares this
text for the three configs with tests/data/dag/ (gzipped). After an intended change of the DAG,
run `python -m repdist_dev.dag_snapshot --write` and commit the new files with the change."""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
from pathlib import Path

from repdist_dev.checkout import ROOT

RECORDED = ROOT / "tests" / "data" / "dag"
# The overlays the snapshot covers: name of the recorded file -> --configfile arguments.
CONFIGS = {
    "config": [],
    "synthetic": ["config.synthetic.yaml"],
    "quick": ["config.quick.yaml"],
}
# What a job block prints that describes the job itself (jobid and reason describe the run).
FIELDS = ("input", "output", "log", "benchmark", "wildcards", "threads", "priority", "resources")


def dry_run(configfiles: list[str], root: Path = ROOT) -> str:
    """`snakemake -n` of the workflow in `root`, in an empty scratch folder, so that every job
    is planned."""
    with tempfile.TemporaryDirectory() as work:  # Snakemake through this interpreter
        args = [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "-s", str(root / "Snakefile"),
                "--directory", work]
        if configfiles:
            args += ["--configfile", *[str(root / c) for c in configfiles]]
        res = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise SystemExit(f"dry run failed for {configfiles}:\n{res.stdout[-3000:]}{res.stderr[-3000:]}")
    # paths inside the checkout (e.g. the authors' checksum list) as relative ones
    return (res.stdout + res.stderr).replace(f"{root}/", "")


def jobs(text: str) -> list[str]:
    """The job blocks of a dry run, each as its rule line and FIELDS, in a sorted list."""
    blocks, current = [], None
    for line in text.splitlines():
        if line.startswith(("rule ", "localrule ")) and line.endswith(":"):
            current = [line]
            blocks.append(current)
        elif current is not None and line.startswith("    "):
            key = line.strip().split(":", 1)[0]
            if key in FIELDS:
                if key == "resources":  # tmpdir is the machine's, not the job's
                    line = ", ".join(p for p in line.split(", ") if "tmpdir=" not in p)
                if key in ("input", "output"):  # sets of files; the order is the rule's choice
                    files = sorted(line.split(": ", 1)[1].split(", "))
                    line = f"    {key}: " + ", ".join(files)
                current.append(line.rstrip())
        else:
            current = None
    return sorted("\n".join(b) for b in blocks)


def snapshot(configfiles: list[str], root: Path = ROOT) -> str:
    return "\n\n".join(jobs(dry_run(configfiles, root))) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record into tests/data/dag/")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the checkout whose workflow is snapshotted (default: this one)")
    args = parser.parse_args()
    for name, configfiles in CONFIGS.items():
        text = snapshot(configfiles, args.root.resolve())
        if args.write:
            write_recorded(name, text)
        same = "recorded" if text == read_recorded(name) else "differs from the recorded"
        print(f"{name}: {text.count(chr(10) + 'rule ') + text.startswith('rule ')} jobs, {same}")


def recorded_path(name: str) -> Path:
    return RECORDED / f"{name}.txt.gz"


def write_recorded(name: str, text: str) -> None:
    """gzip with no timestamp: the same DAG gives the same bytes."""
    RECORDED.mkdir(parents=True, exist_ok=True)
    recorded_path(name).write_bytes(gzip.compress(text.encode(), mtime=0))


def read_recorded(name: str) -> str:
    return gzip.decompress(recorded_path(name).read_bytes()).decode()


if __name__ == "__main__":
    main()
