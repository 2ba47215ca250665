"""`repdist progress` on a workflow's folder: the Snakemake log it reports is the one whose jobs
write into the folder asked about; a folder that holds no run is said to hold none, and runs
elsewhere are named as such, never reported as that folder's own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repdist.cli import main
from repdist.cli.progress import report, run_folders

QUICK_LOG = ("rule synthetic_train:\n    output: results/quick/synthetic/K4/w16_g0_f0/seed0\n"
             "    log: results/quick/logs/synthetic_train/K4_w16_g0_f0.log\n    jobid: 3\n"
             "133 of 134 steps (99%) done\n134 of 134 steps (100%) done\n")
TRAINING = ("2026-01-01 00:00:00,000 INFO progress: step 200/200 (100.0%), loss 0.3120, "
            "27.5 steps/s, elapsed 0:00:07, ETA 0:00:00\n"
            "2026-01-01 00:00:07,000 INFO finished in 7.00 s\n")


def snakemake_log(workflow: Path, name: str, text: str, mtime: float) -> Path:
    log = workflow / ".snakemake" / "log" / f"{name}.snakemake.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(text)
    os.utime(log, (mtime, mtime))
    return log


@pytest.fixture
def workflow(tmp_path, monkeypatch):
    """A workflow's folder after `make quick`: results/quick holds the run, results/ none."""
    job = tmp_path / "results" / "quick" / "logs" / "synthetic_train" / "K4_w16_g0_f0.log"
    job.parent.mkdir(parents=True)
    job.write_text(TRAINING)
    snakemake_log(tmp_path, "2026-01-01T000000", QUICK_LOG, 1.7e9)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_folder_without_a_run_says_so_and_names_the_quick_run_apart(workflow, capsys):
    assert main(["progress"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "repdist progress: results",
        "no run in results: no job has written a log under results/logs, and no Snakemake "
        "log names its jobs",
        "a run elsewhere: results/quick (repdist progress results/quick)"]
    assert "134" not in out and "training jobs" not in out


def test_the_quick_run_is_reported_as_its_own(workflow):
    text = report("results/quick")
    assert "Snakemake: 134 of 134 jobs (100%) done (log " in text
    assert "training jobs: 1 finished" in text and "K4_w16_g0_f0" in text


def test_a_run_whose_snakemake_log_is_older_than_another_folders_gets_its_own(workflow):
    """A paper-scale run's log, then `make quick`'s: results/ reports its own, older log."""
    job = workflow / "results" / "logs" / "synthetic_train" / "K4_w256_g0_f0.log"
    job.parent.mkdir(parents=True)
    job.write_text(TRAINING)
    snakemake_log(workflow, "2025-12-31T000000", "rule synthetic_train:\n    log: "
                  "results/logs/synthetic_train/K4_w256_g0_f0.log\n5 of 90 steps (6%) done\n",
                  1.6e9)
    text = report("results")
    assert "Snakemake: 5 of 90 jobs (6%) done" in text and "134" not in text
    assert "K4_w256_g0_f0" in text and "K4_w16_g0_f0" not in text


def test_a_run_that_no_snakemake_log_names_says_so(workflow):
    """Job logs, but every Snakemake log another folder's (or deleted): the jobs, no one
    else's jobs done."""
    job = workflow / "results" / "logs" / "synthetic_train" / "K4_w256_g0_f0.log"
    job.parent.mkdir(parents=True)
    job.write_text(TRAINING)
    text = report("results")
    assert "Snakemake: none of the workflow's logs names this folder's jobs" in text
    assert "training jobs: 1 finished" in text and "134" not in text


def test_a_folder_with_no_run_anywhere_says_only_that(tmp_path):
    (tmp_path / "empty").mkdir()
    text = report(tmp_path / "empty")
    assert text.splitlines()[1].startswith(f"no run in {tmp_path / 'empty'}: ")
    assert "elsewhere" not in text


def test_the_run_a_snakemake_log_writes_into_is_read_from_its_job_lines(tmp_path):
    """Relative paths from the workflow's folder, absolute ones as they are, a failed job's
    note, several logs to a job, and an outdir of the workflow's folder itself."""
    outside = tmp_path / "elsewhere" / "run"
    log = snakemake_log(tmp_path / "wf", "a", (
        "rule a:\n    log: results/logs/a.log, results/logs/a.err\n"
        f"rule b:\n    log: {outside}/logs/b/1.log (check log file(s) for error details)\n"
        "rule c:\n        log: logs/c.log\n"
        "rule d:\n    input: results/logs/old.txt\n"), 1.7e9)
    assert run_folders(log) == [(tmp_path / "wf" / "results").resolve(), outside.resolve(),
                                (tmp_path / "wf").resolve()]
