"""The Snakemake workflow: lint, formatting, and the quick DAG end to end."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from repdist.io import read_csv

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


@pytest.fixture
def quick_run(quick_outputs):
    return quick_outputs


def test_quick_dag_builds_table_and_figures(quick_run):
    table = read_csv(quick_run / "tables" / "kl_table.csv")
    assert {"rho", "kl", "d_llv", "mcca_f", "max_d_svd_f"} <= set(table.columns)
    assert table["kl"].iloc[-1] < table["kl"].iloc[0]
    assert (quick_run / "tables" / "kl_table.tex").read_text().count(r"\\") == len(table) + 1
    for k in (4, 5, 6, 10, 18):
        for ext in ("pdf", "png"):
            path = quick_run / "figures" / f"constructed_bound_K{k}.{ext}"
            assert path.stat().st_size > 1000, path
        sweep = read_csv(quick_run / "constructed" / f"bound_K{k}.csv")
        valid = sweep[sweep["d_llv"] < 0.25]
        assert (valid["d_fg"] <= valid["bound"]).all()


def test_every_quick_table_carries_its_provenance(quick_run):
    from repdist.io import config_hash, read_table_metadata

    tables = [p for p in (quick_run / "tables").iterdir() if p.suffix in (".csv", ".tex", ".md")]
    tables += list((quick_run / "constructed").glob("*.csv"))
    assert len(tables) >= 10
    hashes = set()
    for path in tables:
        meta = read_table_metadata(path)
        assert {"config_hash", "package_version", "git_commit", "torch_version", "numpy_version",
                "seed", "experiment"} <= set(meta), path
        hashes.add(meta["config_hash"])
    assert len(hashes) == 1  # one config made them all
    assert len(next(iter(hashes))) == len(config_hash({}))


def test_quick_dag_leaves_logs_and_benchmarks(quick_run):
    assert (quick_run / "logs" / "kl_table.log").read_text().strip()
    assert (quick_run / "benchmarks" / "kl_table.tsv").exists()


def test_dry_run_after_quick_has_nothing_to_do(quick_run):
    res = run(SNAKEMAKE, "-n", "--cores", "1", "--configfile", str(ROOT / "config.quick.yaml"),
              "-s", str(ROOT / "Snakefile"), "--directory", str(quick_run.parents[1]))
    assert res.returncode == 0
    assert "Nothing to be done" in res.stdout + res.stderr


PARQUET_META = {"experiment", "K", "M", "width", "fix_g", "fix_f", "steps", "split", "config_hash",
                "package_version", "torch_version", "numpy_version", "git_commit"}


def test_quick_dag_synthetic_outputs_and_schemas(quick_run):
    from repdist.experiments.pairs import PAIR_COLUMNS
    from repdist.io import read_parquet_metadata

    config_dir = quick_run / "synthetic" / "K4" / "w16_g0_f0"
    pairs = pd.read_parquet(config_dir / "pairs.parquet")
    assert list(pairs.columns) == PAIR_COLUMNS
    assert len(pairs) == 3  # 3 seeds in the quick config
    assert pairs["d_llv"].notna().all() and (pairs["kl"] >= 0).all()
    meta = read_parquet_metadata(config_dir / "pairs.parquet")
    assert PARQUET_META - {"seed"} <= set(meta) and meta["measures"]["num_samples"] == 200
    emb = pd.read_parquet(config_dir / "seed1" / "embeddings.parquet")
    assert list(emb.columns) == ["index", "label", "pred", "f_0", "f_1"] and len(emb) == 2000
    emb_meta = read_parquet_metadata(config_dir / "seed1" / "embeddings.parquet")
    assert PARQUET_META <= set(emb_meta) and emb_meta["seed"] == 1 and emb_meta["K"] == 4
    unemb = pd.read_parquet(config_dir / "seed1" / "unembeddings.parquet")
    assert list(unemb.columns) == ["label", "g_0", "g_1"] and len(unemb) == 4
    metrics = json.loads((config_dir / "seed1" / "metrics.json").read_text())
    assert metrics["steps"] == 300 and len(metrics["train_loss"]) == 7
    assert {"final_test_loss", "test_accuracy", "wall_time_s", "test_loss"} <= set(metrics)
    assert (quick_run / "synthetic" / "K6" / "w16_g20_f20" / "pairs.parquet").exists()
    for stem in ("synthetic_data_K4", "synthetic_data_K6", "d_llv_vs_width_K4_6",
                 "d_llv_vs_d_fg_trained_synthetic"):
        for ext in ("pdf", "png"):
            assert (quick_run / "figures" / f"{stem}.{ext}").stat().st_size > 1000, stem
    assert not list(quick_run.rglob("checkpoint.pt"))  # spent checkpoints are removed


def test_quick_dag_cifar_branch_on_standin_data(quick_run):
    from repdist.experiments.pairs import CIFAR_PAIR_COLUMNS
    from repdist.io import read_parquet_metadata

    for m in (2, 3):
        pairs = pd.read_parquet(quick_run / "cifar10" / f"fd{m}" / "pairs.parquet")
        assert list(pairs.columns) == CIFAR_PAIR_COLUMNS and len(pairs) == 3
        assert pairs["mcca_f_train"].between(0, 1).all()
    seed_dir = quick_run / "cifar10" / "fd2" / "seed0"
    meta = read_parquet_metadata(seed_dir / "embeddings_test.parquet")
    assert meta["standin_data"] is True and meta["split"] == "test"
    assert len(pd.read_parquet(seed_dir / "embeddings_train.parquet")) == 2000
    assert len(pd.read_parquet(seed_dir / "embeddings_test.parquet")) == 1000
    metrics = json.loads((seed_dir / "metrics.json").read_text())
    assert {"final_train_loss", "final_test_loss", "steps_per_s"} <= set(metrics)
    for stem in ("cifar10_reps_seed0", "cifar10_embedding_comparison_0_1", "loss_diff_vs_mcca"):
        assert (quick_run / "figures" / f"{stem}.png").stat().st_size > 1000, stem


def test_quick_dag_beyond_the_paper_outputs(quick_run):
    comparison = read_csv(quick_run / "tables" / "paper_comparison.csv")
    assert {"claim", "ours", "paper", "tolerance", "verdict"} <= set(comparison.columns)
    assert set(comparison["verdict"]) <= {"pass", "FAIL", "informational"}
    assert comparison["claim"].str.contains("Table 1").sum() == 5
    assert "pass" in (quick_run / "tables" / "paper_comparison.md").read_text()
    extended = read_csv(quick_run / "tables" / "kl_table_extended.csv")
    assert {"d_logit", "cka_f", "svcca_f", "mutual_knn_f"} <= set(extended.columns)
    workshop = read_csv(quick_run / "tables" / "workshop_example.csv")
    assert len(workshop) == 8 and workshop["ours"].notna().all()
    snapshots = pd.read_parquet(quick_run / "dynamics" / "snapshots.parquet")
    assert sorted(snapshots["step"].unique()) == [0, 25, 50, 100, 150, 200, 250, 300]
    for stem in ("training_dynamics", "workshop_example", "measures_vs_width_K4",
                 "measures_vs_width_K6"):
        assert (quick_run / "figures" / f"{stem}.png").stat().st_size > 1000, stem
