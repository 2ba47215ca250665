"""The quick DAG's budget (repdist_dev.quick_budget): `make test` runs the whole quick DAG, so
a branch that lands with more jobs or heavier ones than its tests need makes every newcomer's
second command slower; these fail first, naming the branches by cost."""

from __future__ import annotations

from repdist.cli.job_times import job_cpu
from repdist_dev.quick_budget import (
    QUICK_CPU_UNITS,
    QUICK_JOBS,
    branches,
    by_branch,
    over_cpu,
    over_jobs,
    recorded_jobs,
    startup_cpu,
)


def test_the_quick_dag_stays_within_its_job_budget():
    """The recorded quick DAG (the live one equals it: test_architecture) plans at most
    QUICK_JOBS jobs, every one of a rule file's branch."""
    rules = recorded_jobs("quick")
    assert over_jobs(rules) is None, over_jobs(rules)
    assert set(rules) <= set(branches())
    message = over_jobs(rules, budget=len(rules) - 1)  # the check can fail, and says where
    assert message and message.startswith(f"the quick DAG plans {len(rules)} jobs")
    largest, (count, _) = next(iter(by_branch([(rule, 1.0) for rule in rules]).items()))
    assert f"largest first: {largest} {count} jobs" in message
    assert "Trim config.quick.yaml" in message


def test_the_quick_dag_stays_within_its_cpu_budget(quick_outputs):
    """Every job of the quick run logged its rule and CPU seconds; their sum, in start-ups of
    a torch job on this machine, is within QUICK_CPU_UNITS."""
    jobs = [(job.rule, job.cpu) for job in job_cpu(quick_outputs)]
    planned = [rule for rule in recorded_jobs("quick") if rule != "all"]  # all runs no script
    assert sorted(rule for rule, _ in jobs) == sorted(planned)
    unit = startup_cpu()
    assert over_cpu(jobs, unit) is None, over_cpu(jobs, unit)
    total = sum(cpu for _, cpu in jobs)
    message = over_cpu(jobs, unit, budget=0.5 * total / unit)
    assert message and "over its budget" in message and "by branch" in message
    assert QUICK_JOBS >= len(planned) and QUICK_CPU_UNITS > 0


def test_branches_are_the_rule_files(tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "Snakefile").write_text("rule all:\n    input: 'x'\n")
    (tmp_path / "rules" / "toy.smk").write_text(
        "rule toy_train:\n    output: 'a'\n\n\nuse rule toy_train as toy_more with:\n"
        "    output: 'b'\n")
    (tmp_path / "rules" / "looped.smk").write_text(
        'for data in ("a", "b"):\n\n    rule:\n        name:\n            f"looped_{data}"\n'
        '        output:\n            f"{data}.txt",\n\n\nrule looped_all:\n'
        '    input:\n        "a.txt",\n')
    assert branches(tmp_path) == {"all": "Snakefile", "toy_train": "toy", "toy_more": "toy",
                                  "looped_a": "looped", "looped_b": "looped",
                                  "looped_all": "looped"}
    table = by_branch([("toy_train", 2.0), ("all", 5.0), ("toy_more", 4.0), ("odd", 1.0)],
                      tmp_path)
    assert table == {"toy": (2, 6.0), "Snakefile": (1, 5.0), "(odd)": (1, 1.0)}
