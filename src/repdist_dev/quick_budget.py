"""The quick DAG's budget: what `make test` can afford to run, kept as branches land.

`make test` runs the quick DAG (config.quick.yaml) beside the other tests, so the DAG's cost is much
of the suite's. Two figures hold it (tests/test_quick_budget.py): its jobs, at most QUICK_JOBS, and
its jobs' CPU seconds, at most QUICK_CPU_UNITS in units of one torch job's start-up (so that it
means the same on a slow CPU as on a fast one). A branch over either trims the quick config or
raises the figure with the measurement that justifies it (where_to_trim)."""

from __future__ import annotations

import resource
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from repdist_dev.checkout import ROOT
from repdist_dev.rule_files import rule_blocks

# A cold job imports its libraries (about 2 s of CPU with torch, 1.4 s more to build an optimiser)
# before a few seconds of toy-scale work; a local run's jobs start warm (repdist.pipeline.warm).
# Both figures were measured on a 2-core AMD EPYC, each job's CPU from its log.
QUICK_JOBS = 136  # 134 jobs measured (the all rule included; PRH's study 10, the follow-up 16)
QUICK_CPU_UNITS = 110.0  # 72 measured warm, 184-191 cold: a run that lost warm starts is over it
# one torch job's start-up, what every job that trains or extracts pays; it ends as a job does
STARTUP = "import os, torch, pandas, matplotlib.pyplot; os._exit(0)"


def branches(root: Path = ROOT) -> dict[str, str]:
    """rule -> branch, the name of the rule file that defines it (rules/<branch>.smk); the
    Snakefile's own rules are the branch `Snakefile`."""
    return {rule: path.stem if path.suffix == ".smk" else path.name
            for rule, (path, _) in rule_blocks(root).items()}


def by_branch(jobs: Iterable[tuple[str, float]], root: Path = ROOT) -> dict[str, tuple[int, float]]:
    """(rule, value) pairs summed by branch: branch -> (jobs, total), the largest first."""
    of = branches(root)
    table: dict[str, tuple[int, float]] = {}
    for rule, value in jobs:
        branch = of.get(rule, f"({rule})")
        n, total = table.get(branch, (0, 0.0))
        table[branch] = (n + 1, total + value)
    return dict(sorted(table.items(), key=lambda item: (-item[1][1], item[0])))


def recorded_jobs(name: str = "quick") -> list[str]:
    """The rules of the recorded DAG's jobs (tests/data/dag), one entry a job."""
    from repdist_dev import dag_snapshot

    return [block.split()[1].rstrip(":") for block in
            dag_snapshot.read_recorded(name).split("\n\n") if block.strip()]


def startup_cpu(repeats: int = 2) -> float:
    """CPU seconds of one torch job's start-up on this machine (the least of `repeats`): a
    Python that imports torch, pandas and matplotlib, as a training or figure job does."""
    times = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", STARTUP], check=True, timeout=300)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return min(times)


def over_jobs(rules: list[str], budget: int = QUICK_JOBS, root: Path = ROOT) -> str | None:
    """None within the budget; else what is over and where to trim."""
    if len(rules) <= budget:
        return None
    table = by_branch(((rule, 1.0) for rule in rules), root)
    return (f"the quick DAG plans {len(rules)} jobs, over its budget of {budget}: "
            + where_to_trim({b: f"{n} jobs" for b, (n, _) in table.items()}))


def over_cpu(jobs: list[tuple[str, float]], unit_s: float, budget: float = QUICK_CPU_UNITS,
             root: Path = ROOT) -> str | None:
    """`jobs`: (rule, CPU seconds) of a quick run; `unit_s`: one torch job's start-up here
    (startup_cpu). None within the budget; else what is over and where to trim."""
    total = sum(cpu for _, cpu in jobs)
    if total / unit_s <= budget:
        return None
    table = by_branch(jobs, root)
    return (f"the quick DAG's jobs took {total:.0f} s of CPU, {total / unit_s:.0f} start-ups of a "
            f"torch job ({unit_s:.2f} s here), over its budget of {budget:.0f}: "
            + where_to_trim({b: f"{n} jobs {cpu / unit_s:.0f}" for b, (n, cpu) in table.items()}))


def where_to_trim(rows: dict[str, str]) -> str:
    """The branches, largest first, and what to do."""
    listed = "; ".join(f"{branch} {what}" for branch, what in rows.items())
    return (f"by branch (rules/<branch>.smk), largest first: {listed}. Trim config.quick.yaml "
            "where a branch's tests need less (seeds, steps, classifiers, stand-ins, widths), or "
            "raise the figure in repdist_dev/quick_budget.py with the measurement that "
            "justifies it")
