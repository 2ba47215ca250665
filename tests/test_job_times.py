"""`repdist job-times`: a run's benchmark files summed by rule and width, with the machines its
job logs name; and the machine line every job logs."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from repdist.cli import main
from repdist.cli.job_times import benchmarks, cpu_by_rule, groups, job_cpu, machines, report
from repdist.pipeline.machine import MACHINE_PREFIX, cpu_model, describe
from repdist.pipeline.joblog import NULL_NOTE, job_log

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _benchmark(path, *rows):
    """A Snakemake benchmark TSV: one row per repeat, (seconds, max_rss or 'NA')."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{s:.2f}\t0:00:{int(s):02d}\t{rss}\t900\t400\t410\t1\t2\t95\t{s}\n"
             for s, rss in rows]
    path.write_text(HEADER + "".join(lines))


@pytest.fixture
def run(tmp_path):
    results = tmp_path / "results"
    bench = results / "benchmarks"
    _benchmark(bench / "synthetic_train" / "K4_w16_variants.tsv", (10.0, 300.0))
    _benchmark(bench / "synthetic_train" / "K18_w16_variants.tsv", (14.5, 320.0))
    _benchmark(bench / "synthetic_train" / "K4_w256_g0_f0.tsv", (600.0, 750.0))
    _benchmark(bench / "synthetic_pairs" / "K4_w256_g0_f0.tsv", (2.0, "NA"), (3.0, "NA"))
    _benchmark(bench / "cifar10_train" / "fd2_seeds.tsv", (40.0, 2000.0))
    _benchmark(bench / "constructed_bound_sweep_K4.tsv", (1.5, 100.0))
    _benchmark(bench / "constructed_bound_sweep_K10.tsv", (2.5, 110.0))
    _benchmark(bench / "kl_table.tsv", (0.5, 90.0))
    logs = results / "logs" / "synthetic_train"
    logs.mkdir(parents=True)
    for name, cpu in (("a", "CPU One"), ("b", "CPU One"), ("c", "CPU Two")):
        (logs / f"{name}.log").write_text(
            f"2026-01-01 00:00:00,000 INFO {MACHINE_PREFIX}{cpu}, 2 usable CPU(s)\n"
            "2026-01-01 00:00:00,001 INFO finished in 1.00 s\n")
    (logs / "old.log").write_text("2026-01-01 00:00:00,001 INFO finished in 1.00 s\n")
    smk = tmp_path / ".snakemake" / "log"
    smk.mkdir(parents=True)
    (smk / "2026-01-01T000000.snakemake.log").write_text(
        "rule kl_table:\n    output: results/tables/kl_table.tex\n"
        "    log: results/logs/kl_table.log\n    jobid: 9\n"
        "8 of 9 steps (89%) done\n9 of 9 steps (100%) done\nElapsed time: 0:12:34.5\n")
    return results


def test_jobs_are_summed_by_rule_and_by_width(run):
    table = {g.label: g for g in groups(benchmarks(run))}
    assert table["synthetic_train w16"].seconds == pytest.approx(24.5)
    assert len(table["synthetic_train w16"].jobs) == 2
    assert table["synthetic_train w16"].longest == pytest.approx(14.5)
    assert table["synthetic_train w16"].max_rss_mb == 320.0
    assert table["synthetic_train w256"].seconds == pytest.approx(600.0)
    assert table["synthetic_train (all)"].seconds == pytest.approx(624.5)
    # a repeated benchmark is the sum of its rows; no memory figure where Snakemake had none
    assert table["synthetic_pairs (all)"].seconds == pytest.approx(5.0)
    assert table["synthetic_pairs (all)"].max_rss_mb is None
    # flat files named per K belong to one rule; names without a width are not split
    assert table["constructed_bound_sweep"].seconds == pytest.approx(4.0)
    assert len(table["constructed_bound_sweep"].jobs) == 2
    assert table["cifar10_train"].seconds == pytest.approx(40.0)
    assert table["kl_table"].seconds == pytest.approx(0.5)
    labels = list(table)
    assert labels.index("synthetic_train w16") < labels.index("synthetic_train w256")


def test_the_report_names_totals_machines_and_snakemake_wall(run, capsys):
    text = report(run)
    total = next(line for line in text.splitlines() if line.startswith("total"))
    assert total.split()[1:] == ["8", "674.0"]
    assert machines(run) == {"CPU One, 2 usable CPU(s)": 2, "CPU Two, 2 usable CPU(s)": 1}
    assert "   2 jobs: CPU One" in text and "    1 job: CPU Two" in text
    assert "(8 benchmark files)" in text
    assert "this run's newest log): 9 of 9 jobs (100%) done, elapsed 0:12:34.5" in text
    assert main(["job-times", str(run)]) == 0
    assert capsys.readouterr().out.strip() == text


def test_another_folders_newer_snakemake_log_is_not_this_runs(run):
    """The workflow's folder keeps every run's Snakemake log: a newer one whose jobs write into
    results/quick is not this run's, and its jobs done are not reported as this run's."""
    import os

    newer = run.parent / ".snakemake" / "log" / "2026-01-02T000000.snakemake.log"
    newer.write_text("rule kl_table:\n    log: results/quick/logs/kl_table.log\n"
                     "1 of 134 steps (1%) done\n")
    os.utime(newer, (2e9, 2e9))
    text = report(run)
    assert "9 of 9 jobs (100%) done" in text and "134" not in text


def test_cpu_is_summed_by_rule_from_the_job_logs(run):
    """Each job log's rule line and its closing `finished in W s, CPU C s`: CPU by rule, the
    largest first; logs of older runs (no rule, no CPU) are left out, not counted as zero."""
    logs = run / "logs"
    for rule, name, wall, cpu in (("cifar10_train_seeds", "fd2", 20.0, 31.5),
                                  ("cifar10_train_seeds", "fd3", 21.0, 32.0),
                                  ("kl_table", "kl", 0.4, 1.1)):
        (logs / f"{name}.log").write_text(
            f"2026-01-01 00:00:00,000 INFO {MACHINE_PREFIX}CPU One, 2 usable CPU(s)\n"
            f"2026-01-01 00:00:00,000 INFO rule: {rule} fd={name[-1]}\n"
            f"2026-01-01 00:00:09,000 INFO finished in {wall:.2f} s, CPU {cpu:.2f} s\n")
    jobs = job_cpu(run)
    assert len(jobs) == 3 and jobs[0].wildcards == "fd=2"
    table = cpu_by_rule(jobs)
    assert list(table) == ["cifar10_train_seeds", "kl_table"]
    assert table["cifar10_train_seeds"] == (2, pytest.approx(63.5), pytest.approx(41.0))
    text = report(run)
    assert "CPU by rule, from the job logs" in text
    assert text.splitlines()[-5].split()[:3] == ["total", "3", "64.6"]
    assert "permutation nulls" not in text


def test_the_nulls_time_is_summed_by_rule_from_the_job_logs(run):
    """A job that drew permutation nulls logs their pairs and seconds before it finishes
    (pipeline.joblog from measures.null.TALLY): summed by rule, the largest first."""
    for name, rule, pairs, seconds in (("a", "synthetic_pairs", 190, 5.25),
                                       ("b", "synthetic_pairs", 190, 4.75),
                                       ("c", "roeder_train", 9045, 80.0)):
        (run / "logs" / f"{name}.log").write_text(
            f"2026-01-01 00:00:00,000 INFO rule: {rule}\n"
            f"2026-01-01 00:00:09,000 INFO {NULL_NOTE}{pairs} pairs, {seconds:.2f} s\n"
            f"2026-01-01 00:00:09,000 INFO finished in 9.00 s, CPU 9.00 s\n")
    lines = report(run).splitlines()
    at = lines.index("permutation nulls by rule, from the job logs:")
    assert [line.split()[:4] for line in lines[at + 2:at + 5]] == [
        ["roeder_train", "1", "9045", "80.0"], ["synthetic_pairs", "2", "380", "10.0"],
        ["total", "3", "9425", "90.0"]]


def test_a_job_logs_what_its_nulls_cost(tmp_path):
    """job_log ends a job that drew a null with the null's pairs and seconds."""
    from repdist.measures import CompareSettings, compare_with_settings, prepare
    from repdist.measures.null import TALLY
    rng = np.random.default_rng(0)
    m1, m2 = (prepare(rng.normal(size=(50, 2)), rng.normal(size=(4, 2))) for _ in range(2))
    before = TALLY.pairs
    with job_log(tmp_path / "job.log"):
        compare_with_settings(m1, m2, CompareSettings(measures=["mcca_f"],
                                                      null={"permutations": 20}))
    assert TALLY.pairs == before + 1
    assert f"{NULL_NOTE}{TALLY.pairs} pairs, " in (tmp_path / "job.log").read_text()


def test_bad_input_exits_2_with_the_reason(tmp_path, capsys):
    assert main(["job-times", str(tmp_path / "missing")]) == 2
    assert "no such results folder" in capsys.readouterr().err
    (tmp_path / "results" / "benchmarks").mkdir(parents=True)
    assert main(["job-times", str(tmp_path / "results")]) == 2
    assert "no benchmark files" in capsys.readouterr().err
    bad = tmp_path / "results" / "benchmarks" / "x.tsv"
    bad.write_text("not\ta benchmark\n1\t2\n")
    assert main(["job-times", str(tmp_path / "results")]) == 2
    assert "x.tsv: not a Snakemake benchmark file" in capsys.readouterr().err


def test_cpu_model_reads_cpuinfo_and_falls_back(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t:  Some   CPU 9000\n"
                    "processor\t: 1\nmodel name\t: Some CPU 9000\n")
    assert cpu_model(info) == "Some CPU 9000"
    assert cpu_model(tmp_path / "none")  # the platform's answer or "unknown CPU", never empty


def test_every_job_log_names_its_machine(tmp_path):
    log = tmp_path / "job.log"
    with job_log(log):
        logging.getLogger("repdist").info("working")
    text = log.read_text()
    assert f"INFO {MACHINE_PREFIX}{describe()}" in text
    assert text.index(MACHINE_PREFIX) < text.index("working")
