"""`make timings`: the commands the README times, run as a newcomer runs them, kept as a record.
The README's and docs/speed.md's timing tables are rendered from the newest dated record.

It runs in a fresh clone of this commit, one command at a time on an otherwise idle machine.
`--render-only` (also after a run) rewrites the tables between the timing markers of README.md and
docs/speed.md. tests/test_timings.py fails when a table and its record disagree."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from repdist_dev.checkout import ROOT
from repdist_dev.quick_budget import startup_cpu
from repdist_dev.records import RECORDS, slug

SCHEMA = "repdist-timings/3"  # 3: floors; 2: the CPU's vector extensions (1 and 2 still read)
OLD_SCHEMAS = ("repdist-timings/1", "repdist-timings/2")
PREFIX = "timings-"
# The commands timed, `make venv` first (the clone's own .venv); ON_REQUEST ones with `--with`.
# `make floors` times the authors' code on the bar workload where `--original` names it.
DEFAULT = ("venv", "test", "quick", "test-slow")
ON_REQUEST = ("run-synthetic", "test-slurm", "test-kernels", "floors")
# the results folder each DAG command fills (outdir of its config), for its job logs
RESULTS = {"quick": "results/quick", "run-synthetic": "results"}
FIELDS = {"schema": str, "commit": str, "date": str, "started_utc": str, "cpu": str,
          "vector_extensions": list, "cores": int, "memory_gib": float, "python": str, "torch": str,
          "startup_cpu_s": (float, type(None)), "commands": list, "floors": (dict, type(None))}
COMMAND_FIELDS = {"command": str, "wall_s": float, "exit": int, "tests": (dict, type(None)),
                  "jobs": (int, type(None)), "cpu_s": (float, type(None)),
                  "branches": (dict, type(None)), "quick_dag_s": (float, type(None)),
                  "note": str}
BEGIN, END = "<!-- timings: begin", "<!-- timings: end -->"
FLOORS_BEGIN, FLOORS_END = "<!-- floors: begin", "<!-- floors: end -->"
FLOORS_JSON = "floors.json"  # what `make floors` writes in the timings' work folder
TEST_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed)")
STEPS = re.compile(r"(\d+) of (\d+) steps \(100%\) done")
# the quick DAG's branches per sentence of the rendered block: short sentences as branches grow
BRANCHES_PER_SENTENCE = 8


class RecordError(ValueError):
    """A timings record without the format (a field missing, extra or of the wrong type)."""


def check(record: dict[str, Any]) -> dict[str, Any]:
    """`record` if it has the format, else RecordError naming what is wrong (a record of an
    older schema, without the vector extensions, is read with an empty list of them)."""
    if record.get("schema") in OLD_SCHEMAS:
        record = {"vector_extensions": [], **record, "floors": None}
    elif record.get("schema") != SCHEMA:
        raise RecordError(f"schema {record.get('schema')!r}, not {SCHEMA!r}")
    _fields(record, FIELDS, "record")
    for entry in record["commands"]:
        _fields(entry, COMMAND_FIELDS, f"command {entry.get('command')!r}")
    return record


def _fields(data: dict[str, Any], spec: dict[str, Any], what: str) -> None:
    missing, extra = sorted(set(spec) - set(data)), sorted(set(data) - set(spec))
    if missing or extra:
        raise RecordError(f"{what}: missing {missing}, unknown {extra}")
    for key, kind in spec.items():
        value = data[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            continue
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise RecordError(f"{what}: {key} is {type(value).__name__}, not {kind}")


def record_path(record: dict[str, Any], folder: Path = RECORDS) -> Path:
    """timings-<cpu>-<date>.json; a later run on the same CPU the same day adds its commit
    (-<7 hex digits>), so that no run's record replaces another's."""
    base = folder / f"{PREFIX}{slug(record['cpu'])}-{record['date']}"
    first = base.with_name(base.name + ".json")
    if first.is_file() and json.loads(first.read_text()).get("started_utc") != record[
            "started_utc"]:
        return base.with_name(f"{base.name}-{record['commit'][:7]}.json")
    return first


def newest(folder: Path = RECORDS, with_floors: bool = False
           ) -> tuple[Path, dict[str, Any]] | None:
    """The newest timings record in `folder` (by its start), checked, or the newest that has
    floors; None if there is none."""
    found = [(p, check(json.loads(p.read_text()))) for p in folder.glob(f"{PREFIX}*.json")]
    found = [item for item in found if item[1]["floors"] or not with_floors]
    return max(found, key=lambda item: item[1]["started_utc"]) if found else None


def duration(seconds: float) -> str:
    """`1 min 05 s`, `1 h 21 min`, `48 s`."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def _what(entry: dict[str, Any]) -> str:
    parts = []
    if entry["tests"]:
        parts.append(", ".join(f"{n} {k}" for k, n in entry["tests"].items()))
    if entry["quick_dag_s"] is not None:
        parts.append(f"the quick DAG beside them {duration(entry['quick_dag_s'])}")
    if entry["jobs"] is not None:
        cpu = f", {duration(entry['cpu_s'])} of CPU in its jobs" if entry["cpu_s"] else ""
        parts.append(f"{entry['jobs']} jobs{cpu}")
    if entry["note"]:
        parts.append(entry["note"])
    if entry["exit"] != 0:
        parts.append(f"**exit status {entry['exit']}**")
    return "; ".join(parts)


def _extensions(record: dict[str, Any]) -> str:
    """` (AVX2, AVX-512)`: the vector extensions a record names, or nothing."""
    found = record.get("vector_extensions") or []
    return f" ({', '.join(found)})" if found else ""


VECTOR_FLAGS = (("avx2", "AVX2"), ("fma", "FMA"), ("avx512f", "AVX-512"))


def vector_extensions(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The x86 vector extensions that change a float kernel's choice, from /proc/cpuinfo's
    flags (empty where there is no such file)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return []
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    flags = set(line.split(":", 1)[-1].split())
    return [name for flag, name in VECTOR_FLAGS if flag in flags]


def render(path: Path, record: dict[str, Any]) -> str:
    """The block between the timing markers: the commands' table and the quick DAG's branches."""
    rows = "\n".join(f"| `{e['command']}` | {duration(e['wall_s'])} | {_what(e)} |"
                     for e in record["commands"])
    lines = [f"{BEGIN} (python -m repdist_dev.timings --render-only; do not edit) -->",
             "| command | wall time | what it ran |", "|---|---|---|", rows, "",
             f"Measured by `make timings` on {record['date']} at commit {record['commit'][:7]}, "
             f"{record['cpu']}{_extensions(record)}, {record['cores']} cores, "
             f"{record['memory_gib']:.0f} GiB, one "
             f"command at a time on a fresh clone (`{path.relative_to(ROOT)}`)"
             + (f"; one torch job's start-up took {record['startup_cpu_s']:.2f} s of CPU there. "
                "The same VM runs a third slower on some days: compare within a record."
                if record["startup_cpu_s"] else ".")]
    quick = next((e for e in record["commands"] if e["command"] == "make quick"), None)
    if quick and quick["branches"]:
        listed = [f"{b} {duration(cpu)} ({n})" for b, (n, cpu) in quick["branches"].items()]
        parts = [", ".join(listed[i:i + BRANCHES_PER_SENTENCE])
                 for i in range(0, len(listed), BRANCHES_PER_SENTENCE)]
        lines += ["", f"The quick DAG's CPU by branch (rules/<branch>.smk, jobs in brackets, "
                      f"from its job logs), largest first: {parts[0]}."
                  + "".join(f" Then {part}." for part in parts[1:])]
    return "\n".join(lines + [END])


def _time(seconds: float) -> str:
    """`12.6 ms`, `0.132 ms`, `68.1 s`: three figures."""
    return f"{seconds:.3g} s" if seconds >= 1 else f"{seconds * 1e3:.3g} ms"


def render_floors(path: Path, record: dict[str, Any]) -> str:
    """The block between the floors markers: each benchmark beside its floor."""
    floors = record["floors"]
    peaks = floors["peaks"]
    rows = "\n".join(
        f"| {r['benchmark']} | {r['flops'] / 1e9:.3g} GFLOP, {r['bytes'] / 1e6:.3g} MB | "
        f"{_time(r['floor_s'])} | {_time(r['measured_s'])} | "
        f"{100 * r['fraction_of_floor']:.2g} % |" for r in floors["rows"])
    notes = []
    for r in floors["rows"]:
        if "original_s" in r:
            notes.append(f"{r['benchmark']}: the original's code {_time(r['original_s'])} on the "
                         f"same pairs in the same run, {r['speedup']:.0f}x")
        if "label_sets" in r:
            notes.append(f"{r['benchmark']}: m_SVD_f over {r['label_sets']} label sets, peak "
                         f"RSS {r['peak_rss_gib']:.2f} GiB")
    lines = [f"{FLOORS_BEGIN} (python -m repdist_dev.timings --render-only; do not edit) -->",
             "| benchmark | work | floor | measured | measured at the floor's rate |",
             "|---|---|---|---|---|", rows, "",
             f"Peaks measured in the same run: float64 GEMM {peaks['gemm_f64_gflops']:.0f} "
             f"GFLOP/s on every core ({peaks['gemm_f64_1thread_gflops']:.0f} on one), float32 "
             f"{peaks['gemm_f32_gflops']:.0f} ({peaks['gemm_f32_1thread_gflops']:.0f}), memory "
             f"{peaks['bandwidth_gbs']:.1f} GB/s; {record['cpu']}{_extensions(record)}, "
             f"{record['date']}, commit {record['commit'][:7]} (`{path.relative_to(ROOT)}`)."]
    if notes:
        lines += ["", "; ".join(notes) + "."]
    return "\n".join(lines + [FLOORS_END])


def replace_block(text: str, block: str, name: str, begin: str = BEGIN, end: str = END) -> str:
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise SystemExit(f"timings: {name} has no '{begin} ... {end}' block to fill")
    return text[:start] + block + text[stop + len(end):]


def rendered_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "docs" / "speed.md"]


def floors_file() -> Path:
    return ROOT / "docs" / "speed.md"


def render_files(folder: Path = RECORDS) -> Path:
    """README.md's and docs/speed.md's blocks from the newest record, and docs/speed.md's
    floors from the newest record that has them; the newest record's path."""
    found = newest(folder)
    if found is None:
        raise SystemExit(f"timings: no {PREFIX}*.json in {folder}: run make timings first")
    path, record = found
    for target in rendered_files():
        target.write_text(replace_block(target.read_text(), render(path, record), target.name))
    with_floors = newest(folder, with_floors=True)
    if with_floors is not None:
        target = floors_file()
        target.write_text(replace_block(target.read_text(), render_floors(*with_floors),
                                        target.name, FLOORS_BEGIN, FLOORS_END))
    return path


def _tests(output: str) -> dict[str, int] | None:
    """pytest's closing line as counts ({'passed': 698, 'deselected': 25}), or None."""
    lines = [line for line in output.splitlines() if re.search(r" in [\d.]+s", line)
             and TEST_COUNTS.search(line)]
    if not lines:
        return None
    return {("errors" if kind.startswith("error") else kind): int(n)
            for n, kind in TEST_COUNTS.findall(lines[-1]) if kind != "warnings"}


def _dag(checkout: Path, results: str) -> dict[str, Any]:
    """The jobs of a finished DAG (Snakemake's newest log) and their CPU by branch."""
    from repdist.cli.job_times import job_cpu
    from repdist_dev.quick_budget import by_branch

    logs = sorted((checkout / ".snakemake" / "log").glob("*.snakemake.log"))
    steps = STEPS.findall(logs[-1].read_text(errors="replace")) if logs else []
    jobs = job_cpu(checkout / results)
    table = by_branch([(j.rule, j.cpu) for j in jobs], checkout)
    return {"jobs": int(steps[-1][1]) if steps else None,
            "cpu_s": round(sum(j.cpu for j in jobs), 1) if jobs else None,
            "branches": {b: [n, round(cpu, 1)] for b, (n, cpu) in table.items()} or None}


def _slurm_note(output: str) -> str:
    found = re.findall(r"(local run|SLURM run) \([^)]*\): (\d+) s", output)
    return "; ".join(f"{what} {duration(float(s))}" for what, s in found)


def run_target(checkout: Path, target: str, logs: Path, original: Path | None = None
               ) -> dict[str, Any]:
    """`make <target>` in `checkout`, its output in logs/<target>.log: the record's entry
    (`make floors` times the authors' code at `original` too, when given)."""
    env = {k: v for k, v in os.environ.items() if k not in ("REPDIST_QUICK_RUNS", "MAKEFLAGS",
                                                            "MFLAGS", "MAKELEVEL")}
    basetemp = logs / f"pytest-{target}"
    if target == "test":  # to find the quick DAG's run beside the tests
        env["PYTEST_ADDOPTS"] = f"--basetemp={basetemp}"
    if target == "floors":  # its rows go into the record
        theirs = f" --original {original.resolve()}" if original else ""
        env["FLOORS_ARGS"] = f"--json {logs / FLOORS_JSON}{theirs}"
    log = logs / f"{target}.log"
    print(f"timings: make {target} ...", flush=True)
    start = time.monotonic()
    with open(log, "w") as fh:
        code = subprocess.run(["make", target], cwd=checkout, env=env, stdout=fh,
                              stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - start
    output = log.read_text(errors="replace")
    entry: dict[str, Any] = {"command": f"make {target}", "wall_s": round(wall, 1), "exit": code,
                             "tests": _tests(output), "jobs": None, "cpu_s": None,
                             "branches": None, "quick_dag_s": None, "note": ""}
    if target in RESULTS:
        entry.update(_dag(checkout, RESULTS[target]))
    status = basetemp / "quick-dag" / "status.json"
    if status.is_file():
        entry["quick_dag_s"] = float(json.loads(status.read_text())["seconds"])
    if target == "test-slurm":
        entry["note"] = _slurm_note(output)
    print(f"timings: make {target}: {duration(wall)}, exit {code}", flush=True)
    return entry


def machine() -> dict[str, Any]:
    from repdist.pipeline.machine import cpu_model, usable_cpus

    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")  # MemTotal, in bytes
    return {"cpu": cpu_model(), "vector_extensions": vector_extensions(), "cores": usable_cpus(),
            "memory_gib": round(memory / 2**30, 1), "python": platform.python_version()}


# The CPU seconds of one torch job's start-up (startup_cpu_s) give the machine's speed that day.
def measure(targets: list[str], work: Path, original: Path | None = None) -> dict[str, Any]:
    """Every target in a fresh clone of HEAD under `work`: the record (not yet written)."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.strip()
    checkout = work / "checkout"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(checkout)], check=True)
    subprocess.run(["git", "checkout", "--quiet", commit], cwd=checkout, check=True)
    started = datetime.now(timezone.utc)
    commands = [run_target(checkout, target, work, original) for target in targets]
    speed = startup_cpu(repeats=3)  # the machine's speed, after the commands (venv made)
    floors = work / FLOORS_JSON
    python = checkout / ".venv" / "bin" / "python"
    torch = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True).stdout.strip() if python.exists() else ""
    return check({"schema": SCHEMA, "commit": commit, "date": started.date().isoformat(),
                  "started_utc": started.isoformat(timespec="seconds"), **machine(),
                  "torch": torch, "startup_cpu_s": round(speed, 2), "commands": commands,
                  "floors": json.loads(floors.read_text()) if floors.is_file() else None})


def write(record: dict[str, Any], folder: Path = RECORDS) -> Path:
    """The record as JSON in `folder`, atomically; its path."""
    path = record_path(check(record), folder)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m repdist_dev.timings",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--with", dest="more", default="",
                        help=f"also time these, comma-separated: {', '.join(ON_REQUEST)}")
    parser.add_argument("--only", default="", help="time only these targets (comma-separated)")
    parser.add_argument("--render-only", action="store_true",
                        help="render README.md and docs/speed.md from the newest record")
    parser.add_argument("--keep", type=Path, help="keep the clone and the logs in this folder")
    parser.add_argument("--original", type=Path,
                        help="with floors: the authors' code, timed beside the bar workload")
    args = parser.parse_args(argv)

    if not args.render_only:
        more = [t for t in args.more.split(",") if t]
        targets = [t for t in args.only.split(",") if t] or [*DEFAULT, *more]
        unknown = sorted(set(targets) - set(DEFAULT) - set(ON_REQUEST))
        if unknown:
            parser.error(f"unknown targets {unknown}: choose from {DEFAULT + ON_REQUEST}")
        work = args.keep or Path(tempfile.mkdtemp(prefix="repdist-timings-"))
        work.mkdir(parents=True, exist_ok=True)
        try:
            path = write(measure(targets, work, args.original))
        finally:
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)
        print(f"timings: record {path.relative_to(ROOT)}")
    rendered = render_files()
    print(f"timings: README.md and docs/speed.md rendered from {rendered.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
