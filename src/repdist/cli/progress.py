"""`repdist progress [RESULTS]`: the state of a run, from the files it writes as it goes.

Snakemake reports a job only when it ends, and training jobs run for hours: this tells a slow
job from a stuck one. It reads only text and JSON (no torch), also while the run goes on."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from ..io import read_checkpoint_sidecar
from ..pipeline.training_jobs import SINGLE_TRAINING_JOBS, TRAINING_KINDS
from ..training.progress import ProgressState, clock, parse_line
from .common import add_results_argument, plural, report_runner

STALE_AFTER_S = 180.0  # a running job logs at least every ~30 s
SNAKEMAKE_DONE = re.compile(r"(\d+) of (\d+) steps \((\d+)%\) done")
# a job's log files, as Snakemake's log names them when the job starts or fails
JOB_LOG = re.compile(r"^\s+log: (.+?)(?: \(check log file\(s\) for error details\))?$", re.M)


@dataclass(frozen=True)
class JobProgress:
    rule: str
    name: str
    state: str  # running | finished | failed | stalled | starting
    progress: ProgressState | None
    age_s: float  # seconds since the log was written
    wall_s: float | None  # a finished job's run time


def _job_state(text: str, age_s: float) -> str:
    if "Traceback (most recent call last)" in text:
        return "failed"
    if "INFO finished in" in text:
        return "finished"
    if age_s > STALE_AFTER_S:
        return "stalled"
    return "running" if "progress: step" in text else "starting"


def read_job(log: Path, rule: str, now: float | None = None) -> JobProgress:
    text = log.read_text(errors="replace")
    age = (now or time.time()) - log.stat().st_mtime
    states = [s for s in (parse_line(line) for line in text.splitlines()) if s is not None]
    wall = re.search(r"INFO finished in ([\d.]+) s", text)
    return JobProgress(rule, log.stem, _job_state(text, age), states[-1] if states else None,
                       age, float(wall.group(1)) if wall else None)


def training_jobs(results: Path) -> list[JobProgress]:
    logs = results / "logs"
    jobs = [read_job(p, kind) for kind in TRAINING_KINDS
            for p in sorted((logs / kind).glob("*.log"))]
    jobs += [read_job(logs / f"{name}.log", name) for name in SINGLE_TRAINING_JOBS
             if (logs / f"{name}.log").exists()]
    return jobs


def checkpoints(results: Path) -> list[tuple[Path, dict]]:
    """Checkpoint sidecars under `results`: where an interrupted job would resume."""
    found = []
    for sidecar in sorted(results.rglob("checkpoint.pt.json")):
        state = read_checkpoint_sidecar(sidecar.with_suffix(""))
        if state is not None:
            found.append((sidecar.parent, state))
    return found


def snakemake_logs(results: Path) -> list[Path]:
    """The Snakemake logs, newest first, of the nearest folder at or above `results` holding any."""
    for folder in (results.resolve(), *results.resolve().parents):
        logs = sorted((folder / ".snakemake" / "log").glob("*.snakemake.log"),
                      key=lambda p: p.stat().st_mtime, reverse=True)
        if logs:
            return logs
    return []


def newest_snakemake_log(results: Path) -> Path | None:
    """The newest Snakemake log of the workflow that writes `results`, whichever run wrote it."""
    return next(iter(snakemake_logs(results)), None)


def run_folders(log: Path) -> list[Path]:
    """The results folders whose jobs a Snakemake log names, in the order first named: the
    folder above each job's logs/, relative to the folder holding .snakemake/log/."""
    folders: list[Path] = []
    for names in JOB_LOG.findall(log.read_text(errors="replace")):
        for name in names.split(", "):
            parts = Path(name).parts[:-1]
            if "logs" not in parts:
                continue
            above = parts[:len(parts) - 1 - parts[::-1].index("logs")]
            folder = (log.parents[2] / Path(*above) if above else log.parents[2]).resolve()
            if folder not in folders:
                folders.append(folder)
    return folders


def run_log(results: Path) -> Path | None:
    """The newest Snakemake log whose jobs write into `results`. A workflow's folder keeps the
    logs of every run made from it, so the newest may be another results folder's."""
    own = results.resolve()
    return next((log for log in snakemake_logs(results) if own in run_folders(log)), None)


def has_job_logs(results: Path) -> bool:
    return next((results / "logs").rglob("*.log"), None) is not None


def shown(folder: Path) -> str:
    """A folder as a person would type it here: relative to the working folder when inside."""
    try:
        return str(folder.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(folder)


def runs_elsewhere(results: Path) -> list[Path]:
    """Other results folders holding a run: the newest Snakemake log's, and those in `results`."""
    newest = newest_snakemake_log(results)
    found = run_folders(newest) if newest else []
    found += [p.parent.resolve() for p in sorted(results.glob("*/logs")) if has_job_logs(p.parent)]
    own = results.resolve()
    return list(dict.fromkeys(f for f in found if f != own))


def no_run_report(results: Path) -> str:
    """What `repdist progress` prints for a folder that holds no run of its own."""
    lines = [f"repdist progress: {results}",
             f"no run in {results}: no job has written a log under {results / 'logs'}, "
             "and no Snakemake log names its jobs"]
    lines += [f"a run elsewhere: {shown(f)} (repdist progress {shown(f)})"
              for f in runs_elsewhere(results)]
    return "\n".join(lines)


def jobs_done(log_text: str) -> str:
    """The last "N of M steps (P%) done" of a Snakemake log's text, as jobs done."""
    matches = SNAKEMAKE_DONE.findall(log_text)
    if not matches:
        return "no job finished yet"
    done, total, percent = matches[-1]
    return f"{done} of {plural(int(total), 'job')} ({percent}%) done"


def job_line(j: JobProgress) -> str:
    """One training job's line: state, rule, name, step, loss, and its time or ETA."""
    p = j.progress
    step = f"step {p.step:>6}/{p.total:<6} {p.percent:5.1f}%" if p else " " * 27
    loss = f"loss {p.loss:.4f}" if p and p.loss is not None else " " * 11
    if j.state == "finished":
        tail = f"took {clock(j.wall_s or 0)}"
    elif j.state in ("running", "starting"):
        eta = p.eta_s if p else None
        tail = (f"ETA {clock(eta)}" if eta is not None else "ETA ?") + \
            f" (logged {clock(j.age_s)} ago, {p.rate:.1f} steps/s)" if p else "starting"
    else:
        tail = f"last log {clock(j.age_s)} ago"
    return f"  {j.state:9} {j.rule:20} {j.name:24} {step}  {loss}  {tail}"


def report(results: str | Path) -> str:
    """The text `repdist progress` prints (for a folder without a run: where runs are)."""
    results = Path(results)
    if not results.is_dir():
        raise FileNotFoundError(f"{results}: no such results folder")
    log = run_log(results)
    if log is None and not has_job_logs(results):
        return no_run_report(results)
    jobs = training_jobs(results)
    lines = [f"repdist progress: {results}",
             f"Snakemake: {jobs_done(log.read_text(errors='replace'))} (log {log})" if log else
             "Snakemake: none of the workflow's logs names this folder's jobs"]
    counts = {s: sum(j.state == s for j in jobs) for s in
              ("running", "starting", "finished", "stalled", "failed")}
    lines.append("training jobs: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
                 if jobs else "training jobs: none started yet")
    order = {"failed": 0, "stalled": 1, "running": 2, "starting": 3, "finished": 4}
    lines += [job_line(j) for j in sorted(jobs, key=lambda j: (order[j.state], j.rule, j.name))]
    running = [j for j in jobs if j.state == "running" and j.progress and j.progress.eta_s]
    if running:
        last = max(running, key=lambda j: j.progress.eta_s)
        lines.append(f"longest running job ends in about {clock(last.progress.eta_s)} "
                     f"({last.name})")
    for folder, state in checkpoints(results):
        saved = clock(time.time() - state.get("saved_at", time.time()))
        lines.append(f"checkpoint: {folder.relative_to(results)} at step {state.get('step')}/"
                     f"{state.get('total_steps')} (saved {saved} ago): a rerun resumes from it")
    return "\n".join(lines)


NAME = "progress"
HELP = "the state of a run's training jobs"
DESCRIPTION = ("The state of a run, from the files it writes as it goes: the jobs Snakemake has "
               "done, each training job's step, loss and ETA, and the checkpoints a rerun would "
               "resume from. It reads only text, so it works while the run goes on, also on a "
               "cluster's shared file system. For a folder that holds no run it says so, and names "
               "the runs it finds elsewhere.")
add_arguments = add_results_argument
run = report_runner(NAME, report)
