"""`repdist progress [RESULTS]`: the state of a run, from the files it writes as it goes.

Snakemake reports a job only when it ends; training jobs run for minutes to hours. This reads
what every training job logs (`training.progress` lines, "finished in", tracebacks), the
checkpoint sidecars (`checkpoint.pt.json`: the last step saved) and Snakemake's own log (jobs
done of planned), so a person watching a workstation or a SLURM run can tell a slow job from
a stuck one and guess when the run ends. Reads only text and JSON: no torch, works on a
results folder on a shared file system while the run goes on.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from ..io import read_checkpoint_sidecar
from ..pipeline.training_jobs import SINGLE_TRAINING_JOBS, TRAINING_KINDS
from ..training.progress import ProgressState, clock, parse_line
from .common import add_results_argument, report_runner

STALE_AFTER_S = 180.0  # a running job logs at least every ~30 s
SNAKEMAKE_DONE = re.compile(r"(\d+) of (\d+) steps \((\d+)%\) done")


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
    jobs = [read_job(p, kind) for kind in TRAINING_KINDS for p in sorted((logs / kind).glob("*.log"))]
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


def newest_snakemake_log(results: Path) -> Path | None:
    """The newest Snakemake log of the workflow that writes `results`, searching `results` and
    its parents for the workflow's .snakemake folder."""
    for folder in (results.resolve(), *results.resolve().parents):
        logs = sorted((folder / ".snakemake" / "log").glob("*.snakemake.log"),
                      key=lambda p: p.stat().st_mtime)
        if logs:
            return logs[-1]
    return None


def jobs_done(log_text: str) -> str:
    """The last "N of M steps (P%) done" of a Snakemake log's text, as jobs done."""
    matches = SNAKEMAKE_DONE.findall(log_text)
    return (f"{matches[-1][0]} of {matches[-1][1]} jobs ({matches[-1][2]}%) done"
            if matches else "no job finished yet")


def snakemake_state(results: Path) -> tuple[str, str] | None:
    """(the jobs done by the newest Snakemake log, its path)."""
    log = newest_snakemake_log(results)
    if log is None:
        return None
    return jobs_done(log.read_text(errors="replace")), str(log)


def report(results: str | Path) -> str:
    """The text `repdist progress` prints."""
    results = Path(results)
    if not results.is_dir():
        raise FileNotFoundError(f"{results}: no such results folder")
    jobs = training_jobs(results)
    lines = [f"repdist progress: {results}"]
    smk = snakemake_state(results)
    if smk:
        lines.append(f"Snakemake: {smk[0]} (log {smk[1]})")
    counts = {s: sum(j.state == s for j in jobs) for s in
              ("running", "starting", "finished", "stalled", "failed")}
    lines.append("training jobs: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
                 if jobs else "training jobs: none started yet")
    order = {"failed": 0, "stalled": 1, "running": 2, "starting": 3, "finished": 4}
    for j in sorted(jobs, key=lambda j: (order[j.state], j.rule, j.name)):
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
        lines.append(f"  {j.state:9} {j.rule:20} {j.name:24} {step}  {loss}  {tail}")
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
add_arguments = add_results_argument
run = report_runner(NAME, report)
