"""The Snakemake workflow: lint, formatting, and the quick DAG end to end."""

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SNAKEMAKE = str(BIN / "snakemake")


def run(*args, cwd=ROOT, timeout=600):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_snakemake_lint_is_clean():
    res = run(SNAKEMAKE, "--lint")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "good condition" in res.stdout + res.stderr


def test_snakefmt_is_clean():
    res = run(str(BIN / "snakefmt"), "--check", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_bad_config_stops_before_any_job(tmp_path):
    res = run(SNAKEMAKE, "-n", "--cores", "1", "--config", "seed=-1",
              "--directory", str(tmp_path), "-s", str(ROOT / "Snakefile"))
    assert res.returncode != 0
    assert "seed" in res.stdout + res.stderr


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """Run the quick DAG in a scratch copy of the workflow (never touching ./results)."""
    work = tmp_path_factory.mktemp("quick")
    res = run(SNAKEMAKE, "--cores", "2", "--configfile", str(ROOT / "config.quick.yaml"),
              "-s", str(ROOT / "Snakefile"), "--directory", str(work), timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return work / "results" / "quick"


def test_quick_dag_builds_table_and_figures(quick_run):
    table = pd.read_csv(quick_run / "tables" / "kl_table.csv")
    assert {"rho", "kl", "d_llv", "mcca_f", "max_d_svd_f"} <= set(table.columns)
    assert table["kl"].iloc[-1] < table["kl"].iloc[0]
    assert (quick_run / "tables" / "kl_table.tex").read_text().count(r"\\") == len(table) + 1
    for k in (4, 5, 6, 10, 18):
        for ext in ("pdf", "png"):
            path = quick_run / "figures" / f"constructed_bound_K{k}.{ext}"
            assert path.stat().st_size > 1000, path
        sweep = pd.read_csv(quick_run / "constructed" / f"bound_K{k}.csv")
        valid = sweep[sweep["d_llv"] < 0.25]
        assert (valid["d_fg"] <= valid["bound"]).all()


def test_quick_dag_leaves_logs_and_benchmarks(quick_run):
    assert (quick_run / "logs" / "kl_table.log").read_text().strip()
    assert (quick_run / "benchmarks" / "kl_table.tsv").exists()


def test_dry_run_after_quick_has_nothing_to_do(quick_run):
    res = run(SNAKEMAKE, "-n", "--cores", "1", "--configfile", str(ROOT / "config.quick.yaml"),
              "-s", str(ROOT / "Snakefile"), "--directory", str(quick_run.parents[1]))
    assert res.returncode == 0
    assert "Nothing to be done" in res.stdout + res.stderr
