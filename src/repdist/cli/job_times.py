"""`repdist job-times [RESULTS]`: where a run's time went, from its benchmark files and job logs.

Summed by rule, and training jobs by width, the benchmark files show which jobs a faster run must
make faster. Reads only text: no torch, works while a run goes on."""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..pipeline.joblog import CPU_NOTE, NULL_NOTE, RULE_PREFIX, WARM_NOTE
from ..pipeline.machine import MACHINE_PREFIX
from .common import add_results_argument, plural, report_runner
from .progress import jobs_done, run_log

# Training jobs are summed by width because their cost grows with width squared.
WIDTH = re.compile(r"(?:^|_)w(\d+)(?:_|$)")
PER_CLASS_COUNT = re.compile(r"_K\d+$")  # flat benchmark files named per K (one rule)
ELAPSED = re.compile(r"Elapsed time: (\S+)")
FINISHED = re.compile(rf"INFO finished in ([\d.]+) s{re.escape(CPU_NOTE)}([\d.]+) s$", re.M)
RULE = re.compile(rf"INFO {re.escape(RULE_PREFIX)}(\S+)(.*)$", re.M)
WARM = re.compile(rf"INFO {re.escape(WARM_NOTE)}", re.M)
NULL = re.compile(rf"INFO {re.escape(NULL_NOTE)}(\d+) pairs, ([\d.]+) s$", re.M)


@dataclass(frozen=True)
class JobTime:
    rule: str
    name: str
    seconds: float
    max_rss_mb: float | None

    @property
    def width(self) -> int | None:
        match = WIDTH.search(self.name)
        return int(match.group(1)) if match else None


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "", "NA", "-") else None
    except ValueError:
        return None


def read_benchmark(path: Path, rule: str) -> JobTime:
    """One Snakemake benchmark TSV (one row per repeat: the job's time is their sum)."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows or "s" not in rows[0]:
        raise ValueError(f"{path}: not a Snakemake benchmark file (no 's' column)")
    seconds = [_number(r.get("s")) for r in rows]
    if any(s is None for s in seconds):
        raise ValueError(f"{path}: a row without seconds")
    rss = [v for v in (_number(r.get("max_rss")) for r in rows) if v is not None]
    return JobTime(rule, path.stem, float(sum(seconds)), max(rss) if rss else None)


def benchmarks(results: Path) -> list[JobTime]:
    """Every benchmark TSV under results/benchmarks: in a rule's folder, or named after its rule."""
    root = results / "benchmarks"
    jobs = []
    for path in sorted(root.rglob("*.tsv")):
        relative = path.relative_to(root)
        rule = relative.parts[0] if len(relative.parts) > 1 else PER_CLASS_COUNT.sub("", path.stem)
        jobs.append(read_benchmark(path, rule))
    return jobs


def machines(results: Path) -> Counter[str]:
    """How many job logs under results/logs name each machine (the same run's times differ by a
    third between two virtual machines of the same size)."""
    seen: Counter[str] = Counter()
    for log in (results / "logs").rglob("*.log"):
        with open(log, errors="replace") as fh:  # the line comes first: read no further
            for line in fh:
                _, found, machine = line.partition(f"INFO {MACHINE_PREFIX}")
                if found:
                    seen[machine.strip()] += 1
                    break
    return seen


@dataclass(frozen=True)
class JobCpu:
    """One finished job from its log: its rule, wildcards, wall and CPU seconds."""

    rule: str
    wildcards: str
    seconds: float
    cpu: float
    warm: bool = False  # forked from the run's warm interpreter: its imports not counted


def job_cpu(results: Path) -> list[JobCpu]:
    """Every job under results/logs whose log names its rule and ends with its CPU (failed too)."""
    jobs = []
    for log in sorted((results / "logs").rglob("*.log")):
        text = log.read_text(errors="replace")
        rule, finished = RULE.search(text), FINISHED.findall(text)
        if rule and finished:
            seconds, cpu = finished[-1]
            jobs.append(JobCpu(rule.group(1), rule.group(2).strip(), float(seconds), float(cpu),
                               WARM.search(text) is not None))
    return jobs


def cpu_by_rule(jobs: list[JobCpu]) -> dict[str, tuple[int, float, float]]:
    """rule -> (jobs, CPU seconds, wall seconds), rules by CPU, the largest first."""
    table: dict[str, tuple[int, float, float]] = {}
    for job in jobs:
        n, cpu, wall = table.get(job.rule, (0, 0.0, 0.0))
        table[job.rule] = (n + 1, cpu + job.cpu, wall + job.seconds)
    return dict(sorted(table.items(), key=lambda item: -item[1][1]))


def cpu_lines(results: Path) -> list[str]:
    """The report's second table: CPU seconds by rule from the job logs, start-up included."""
    jobs = job_cpu(results)
    if not jobs:
        return ["CPU by rule: no job log ends with its CPU (runs before this version)"]
    lines = ["CPU by rule, from the job logs (each job's process, start-up included):",
             f"{'':34} {'jobs':>5} {'CPU s':>12} {'wall s':>10}"]
    if warm := sum(job.warm for job in jobs):
        lines.insert(1, f"({warm} of {plural(len(jobs), 'job')} started warm, forked with their "
                        "libraries imported: their CPU leaves the imports out, and their benchmark "
                        "files' memory is the waiting client's)")
    lines += [f"{rule:34} {n:5d} {cpu:12.1f} {wall:10.1f}"
              for rule, (n, cpu, wall) in cpu_by_rule(jobs).items()]
    lines.append(f"{'total':34} {len(jobs):5d} {sum(j.cpu for j in jobs):12.1f} "
                 f"{sum(j.seconds for j in jobs):10.1f}")
    return lines


def null_lines(results: Path) -> list[str]:
    """The report's third table, where a job drew a permutation null: its pairs and seconds
    by rule, from the job logs (the same logs' last job of a rule: the latest run's)."""
    table: dict[str, tuple[int, int, float]] = {}
    for log in sorted((results / "logs").rglob("*.log")):
        text = log.read_text(errors="replace")
        rule, null = RULE.search(text), NULL.findall(text)
        if rule and null:
            jobs, pairs, seconds = table.get(rule.group(1), (0, 0, 0.0))
            table[rule.group(1)] = (jobs + 1, pairs + int(null[-1][0]),
                                    seconds + float(null[-1][1]))
    if not table:
        return []
    lines = ["permutation nulls by rule, from the job logs:",
             f"{'':34} {'jobs':>5} {'pairs':>12} {'seconds':>10}"]
    lines += [f"{rule:34} {n:5d} {pairs:12d} {seconds:10.1f}"
              for rule, (n, pairs, seconds) in sorted(table.items(), key=lambda i: -i[1][2])]
    jobs, pairs, seconds = (sum(column) for column in zip(*table.values()))
    lines.append(f"{'total':34} {jobs:5d} {pairs:12d} {seconds:10.1f}")
    return lines


@dataclass(frozen=True)
class Group:
    label: str
    jobs: list[JobTime]

    @property
    def seconds(self) -> float:
        return sum(j.seconds for j in self.jobs)

    @property
    def longest(self) -> float:
        return max(j.seconds for j in self.jobs)

    @property
    def max_rss_mb(self) -> float | None:
        rss = [j.max_rss_mb for j in self.jobs if j.max_rss_mb is not None]
        return max(rss) if rss else None


def groups(jobs: list[JobTime]) -> list[Group]:
    """Per rule, and within a rule whose jobs are named by width, per width (widest last)."""
    by_rule: dict[str, list[JobTime]] = {}
    for job in jobs:
        by_rule.setdefault(job.rule, []).append(job)
    out = []
    for rule in sorted(by_rule):
        members = by_rule[rule]
        widths = sorted({j.width for j in members if j.width is not None})
        if widths:
            out += [Group(f"{rule} w{w}", [j for j in members if j.width == w]) for w in widths]
            rest = [j for j in members if j.width is None]
            if rest:
                out.append(Group(f"{rule} (no width)", rest))
        out.append(Group(f"{rule} (all)" if widths else rule, members))
    return out


def report(results: str | Path) -> str:
    """The text `repdist job-times` prints."""
    results = Path(results)
    if not results.is_dir():
        raise FileNotFoundError(f"{results}: no such results folder")
    jobs = benchmarks(results)
    if not jobs:
        raise FileNotFoundError(f"{results}/benchmarks: no benchmark files (has a run finished "
                                "a heavy job yet?)")
    lines = [f"repdist job-times: {results} ({plural(len(jobs), 'benchmark file')})",
             f"{'':34} {'jobs':>5} {'job-seconds':>12} {'longest s':>10} {'peak RSS MB':>12}"]
    for group in groups(jobs):
        rss = f"{group.max_rss_mb:12.0f}" if group.max_rss_mb is not None else f"{'?':>12}"
        lines.append(f"{group.label:34} {len(group.jobs):5d} {group.seconds:12.1f} "
                     f"{group.longest:10.1f} {rss}")
    lines.append(f"{'total':34} {len(jobs):5d} {sum(j.seconds for j in jobs):12.1f}")
    lines += cpu_lines(results)
    lines += null_lines(results)
    seen = machines(results)
    if seen:
        lines.append("machines named in the job logs:")
        lines += [f"  {plural(n, 'job'):>9}: {name}" for name, n in seen.most_common()]
    else:
        lines.append("machines: no job log names one (runs before this version did not log it)")
    log = run_log(results)  # the newest log of this folder's run, not another folder's
    if log is not None:
        text = log.read_text(errors="replace")
        elapsed = ELAPSED.findall(text)
        wall = f", elapsed {elapsed[-1]}" if elapsed else ", still running or stopped"
        lines.append(f"Snakemake (this run's newest log): {jobs_done(text)}{wall}")
    return "\n".join(lines)


NAME = "job-times"
HELP = "a run's job times by rule and width, and machines"
DESCRIPTION = ("Where a run's time went: each rule's job seconds and peak memory from the "
               "benchmark files (training jobs by width), the CPU seconds each job logs, the time "
               "of permutation nulls, and the machines the jobs ran on. It reads only text, so "
               "it works while the run goes on.")
add_arguments = add_results_argument
run = report_runner(NAME, report)
