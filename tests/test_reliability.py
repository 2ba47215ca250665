"""Reliability of the workflow itself: a training job killed with SIGKILL resumes from its
checkpoint to a bitwise-identical model, and two runs from scratch give identical data."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
TARGET = "results/quick/synthetic/K4/w16_g0_f0/pairs.parquet"


def write_config(path: Path, steps: int) -> Path:
    cfg = {
        "synthetic": {
            "class_counts": [4],
            "n_seeds": 2,
            "variants": [{"fix_g": 0, "fix_f": 0, "widths": [16]}],
            "training": {"steps": steps, "checkpoint_every": 200, "log_every": 100,
                         "eval_every": 500},
            "width_figures": [[4]],
            "bound_widths": [16],
            "min_seeds": 2,
        },
        "cifar10": {"enabled": False},
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


def snakemake(workdir: Path, config: Path, *extra: str) -> subprocess.Popen:
    cmd = [SNAKEMAKE, "--cores", "1", "-s", str(ROOT / "Snakefile"), "--directory",
           str(workdir), "--configfile", str(ROOT / "config.quick.yaml"), str(config),
           "--rerun-incomplete", *extra, TARGET]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def job_pids(workdir: Path) -> list[int]:
    out = subprocess.run(["pgrep", "-f", "synthetic_train.py"], capture_output=True, text=True)
    pids = []
    for pid in out.stdout.split():
        try:
            if Path(f"/proc/{pid}/cwd").resolve() == workdir.resolve():
                pids.append(int(pid))
        except OSError:
            pass
    return pids


def test_sigkilled_training_job_resumes_to_the_same_model(tmp_path):
    config = write_config(tmp_path / "cfg.yaml", steps=4000)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    proc = snakemake(whole, config)
    assert proc.wait(timeout=600) == 0, proc.stdout.read()

    proc = snakemake(killed, config)
    ckpt = killed / "results/quick/synthetic/K4/w16_g0_f0/checkpoint.pt"
    deadline = time.time() + 300
    while not ckpt.exists() and time.time() < deadline:
        time.sleep(0.2)
    assert ckpt.exists(), "no checkpoint was written"
    time.sleep(0.5)
    for pid in job_pids(killed):
        os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=120)
    step_at_kill = torch.load(ckpt, weights_only=False)["step"]
    assert 0 < step_at_kill < 4000
    model_0 = killed / "results/quick/synthetic/K4/w16_g0_f0/seed0/model.pt"
    assert not model_0.exists()  # no half-written output survives

    proc = snakemake(killed, config)
    assert proc.wait(timeout=600) == 0, proc.stdout.read()
    log = (killed / "results/quick/logs/synthetic_train/K4_w16_g0_f0.log").read_text()
    assert f"resuming from step {step_at_kill}" in log
    for seed in (0, 1):
        rel = f"results/quick/synthetic/K4/w16_g0_f0/seed{seed}/model.pt"
        a = torch.load(whole / rel, weights_only=True)
        b = torch.load(killed / rel, weights_only=True)
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in a), seed
    pd.testing.assert_frame_equal(pd.read_parquet(whole / TARGET), pd.read_parquet(killed / TARGET))
    assert not ckpt.exists()


def test_two_quick_runs_give_identical_data(tmp_path, quick_outputs):
    """The whole quick DAG twice from scratch: every parquet table and CSV table is equal."""
    second = tmp_path / "second"
    res = subprocess.run(
        [SNAKEMAKE, "--cores", "2", "-s", str(ROOT / "Snakefile"), "--directory", str(second),
         "--configfile", str(ROOT / "config.quick.yaml")],
        capture_output=True, text=True, timeout=1200,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    first_root, second_root = quick_outputs, second / "results" / "quick"
    files = sorted(p.relative_to(first_root) for p in first_root.rglob("*")
                   if p.suffix in (".parquet", ".csv") and "benchmarks" not in p.parts)
    assert len(files) > 30
    for rel in files:
        if rel.suffix == ".parquet":
            pd.testing.assert_frame_equal(pd.read_parquet(first_root / rel),
                                          pd.read_parquet(second_root / rel), obj=str(rel))
        else:
            assert (first_root / rel).read_text() == (second_root / rel).read_text(), rel
    tex = Path("tables/kl_table.tex")
    assert (first_root / tex).read_text() == (second_root / tex).read_text()
