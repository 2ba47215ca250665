"""Reliability of the workflow itself: a training job killed with SIGKILL resumes from its
checkpoint to a bitwise-identical model, and two runs from scratch give identical data."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from conftest import SNAKEMAKE

ROOT = Path(__file__).resolve().parents[1]
TARGET = "results/quick/synthetic/K4/w16_g0_f0/pairs.parquet"


def write_config(path: Path, steps: int, cifar: bool = False, lr: float = 1e-4) -> Path:
    """A one-configuration overlay of config.quick.yaml: synthetic K=4 w16, or one CIFAR model."""
    cfg = {
        "synthetic": {
            "class_counts": [4],
            "n_seeds": 2,
            "variants": [{"fix_g": 0, "fix_f": 0, "widths": [16]}],
            "training": {"steps": steps, "checkpoint_every": 200, "log_every": 100,
                         "eval_every": 500, "lr": lr},
            "width_figures": [[4]],
            "bound_widths": [16],
            "min_seeds": 2,
        },
        "cifar10": {"enabled": False},
        "authors_models": {"enabled": False},
        "bound_beyond_m2": {"enabled": False},
    }
    if cifar:
        cfg["cifar10"] = {"enabled": True, "standin": True, "rep_dims": [2], "n_seeds": 2,
                          "seeds_per_job": 1,
                          "training": {"steps": steps, "checkpoint_every": 50, "log_every": 50,
                                       "eval_every": 10_000}}
    path.write_text(yaml.safe_dump(cfg))
    return path


def snakemake(workdir: Path, config: Path, target: str, *extra: str) -> subprocess.Popen:
    cmd = [*SNAKEMAKE, "--cores", "1", "-s", str(ROOT / "Snakefile"), "--directory",
           str(workdir), "--configfile", str(ROOT / "config.quick.yaml"), str(config),
           "--rerun-incomplete", *extra, target]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def job_pids(workdir: Path, script: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", script], capture_output=True, text=True)
    pids = []
    for pid in out.stdout.split():
        try:
            if Path(f"/proc/{pid}/cwd").resolve() == workdir.resolve():
                pids.append(int(pid))
        except OSError:
            pass
    return pids


SYNTHETIC = dict(
    steps=4000, cifar=False, target=TARGET, script="synthetic_train.py",
    checkpoint="results/quick/synthetic/K4/w16_g0_f0/checkpoint.pt",
    log="results/quick/logs/synthetic_train/K4_w16_g0_f0.log",
    models=[f"results/quick/synthetic/K4/w16_g0_f0/seed{s}/model.pt" for s in (0, 1)],
)
CIFAR = dict(
    steps=400, cifar=True, target="results/quick/cifar10/fd2/seed0/model.pt",
    script="cifar_train.py", checkpoint="results/quick/cifar10/fd2/seed0/checkpoint.pt",
    log="results/quick/logs/cifar10_train/fd2_seed0.log",
    models=["results/quick/cifar10/fd2/seed0/model.pt"],
)


@pytest.mark.slow  # ~30-80 s each, three training runs: `make test-slow` (CI) runs them
@pytest.mark.parametrize("case", [SYNTHETIC, CIFAR], ids=["synthetic", "cifar10"])
def test_sigkilled_training_job_resumes_to_the_same_model(tmp_path, case):
    """SIGKILL the training job after its first checkpoint; Snakemake's rerun resumes from the
    checkpoint (not from step 0) and ends with bitwise the model of an uninterrupted run."""
    config = write_config(tmp_path / "cfg.yaml", steps=case["steps"], cifar=case["cifar"])
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    uninterrupted = snakemake(whole, config, case["target"])  # beside the killed run

    proc = snakemake(killed, config, case["target"])
    ckpt = killed / case["checkpoint"]
    deadline = time.time() + 300
    while not ckpt.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert ckpt.exists(), "no checkpoint was written"
    time.sleep(0.3)
    pids = job_pids(killed, case["script"])
    assert pids, "the training job was not running"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=120)
    step_at_kill = torch.load(ckpt, weights_only=False)["step"]
    assert 0 < step_at_kill < case["steps"]
    assert not any((killed / m).exists() for m in case["models"])  # nothing half-written

    proc = snakemake(killed, config, case["target"])
    assert proc.wait(timeout=600) == 0, proc.stdout.read()
    log = (killed / case["log"]).read_text()
    assert f"resuming from step {step_at_kill}" in log
    assert uninterrupted.wait(timeout=600) == 0, uninterrupted.stdout.read()
    for rel in case["models"]:
        a = torch.load(whole / rel, weights_only=True)
        b = torch.load(killed / rel, weights_only=True)
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in a), rel  # exact: the same run, resumed
    if not case["cifar"]:
        pd.testing.assert_frame_equal(pd.read_parquet(whole / TARGET),
                                      pd.read_parquet(killed / TARGET))
    assert not ckpt.exists()


def kill_after_first_checkpoint(workdir: Path, config: Path, case: dict) -> int:
    """Start the case's target, SIGKILL its training job once a checkpoint exists; return the
    checkpoint's step."""
    proc = snakemake(workdir, config, case["target"])
    ckpt = workdir / case["checkpoint"]
    deadline = time.time() + 300
    while not ckpt.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert ckpt.exists(), "no checkpoint was written"
    time.sleep(0.3)
    pids = job_pids(workdir, case["script"])
    assert pids, "the training job was not running"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=120)
    return torch.load(ckpt, weights_only=False)["step"]


@pytest.mark.slow  # ~45-60 s each: `make test-slow` (CI) runs them
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_head_stops_the_run_and_the_rerun_resumes(tmp_path, signum):
    """SIGTERM (a login session ending, `timeout`) or SIGINT (Ctrl-C) to Snakemake while a
    training job runs: the run stops within 60 s, its job with it, nothing half-written; the
    rerun resumes from the checkpoint to the uninterrupted run's model (pipeline/stopping.py;
    on SLURM: tests/slurm/slurm_faults.py)."""
    case = SYNTHETIC
    config = write_config(tmp_path / "cfg.yaml", steps=12_000)  # still training at the signal
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    uninterrupted = snakemake(whole, config, case["target"])  # beside the stopped run
    proc = snakemake(stopped, config, case["target"])
    ckpt = stopped / case["checkpoint"]
    deadline = time.time() + 300
    while not ckpt.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert ckpt.exists() and job_pids(stopped, case["script"]), "the job was not running"
    sent = time.monotonic()
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=120)
    assert time.monotonic() - sent < 60
    assert f"{signum.name} received: cancelling the running jobs" in out
    assert not job_pids(stopped, case["script"])
    assert not any((stopped / m).exists() for m in case["models"])  # nothing half-written

    assert snakemake(stopped, config, case["target"]).wait(timeout=600) == 0
    assert "resuming from step" in (stopped / case["log"]).read_text()
    assert uninterrupted.wait(timeout=600) == 0, uninterrupted.stdout.read()
    pd.testing.assert_frame_equal(pd.read_parquet(whole / TARGET),
                                  pd.read_parquet(stopped / TARGET))


@pytest.mark.slow  # ~30 s, three training runs: `make test-slow` (CI) runs it
def test_a_checkpoint_of_another_lr_is_set_aside_not_resumed(tmp_path):
    """Kill a training job after its first checkpoint, change lr in the config, rerun: the job
    sets the old checkpoint aside (renamed, one log line naming the change) and starts fresh;
    its models equal a fresh run's at the new lr, bitwise. While the killed run's job was
    going, `repdist progress` reported it."""
    old = write_config(tmp_path / "old.yaml", steps=4000)
    new = write_config(tmp_path / "new.yaml", steps=4000, lr=3e-4)
    fresh, changed = tmp_path / "fresh", tmp_path / "changed"
    uninterrupted = snakemake(fresh, new, SYNTHETIC["target"])  # beside the changed run

    step = kill_after_first_checkpoint(changed, old, SYNTHETIC)
    assert 0 < step < 4000
    proc = snakemake(changed, new, SYNTHETIC["target"])
    assert proc.wait(timeout=600) == 0, proc.stdout.read()
    assert uninterrupted.wait(timeout=600) == 0, uninterrupted.stdout.read()
    log = (changed / SYNTHETIC["log"]).read_text()
    assert "checkpoint set aside: lr 0.0001 -> 0.0003" in log and "resuming" not in log
    aside = list((changed / SYNTHETIC["checkpoint"]).parent.glob("checkpoint.set-aside-*.pt"))
    assert len(aside) == 1 and torch.load(aside[0], weights_only=False)["step"] == step
    for rel in SYNTHETIC["models"]:
        a = torch.load(fresh / rel, weights_only=True)
        b = torch.load(changed / rel, weights_only=True)
        assert all(torch.equal(a[k], b[k]) for k in a), rel  # exact: the same fresh run
    metrics = (changed / SYNTHETIC["models"][0]).with_name("metrics.json").read_text()
    assert '"steps_total": 4082' in metrics  # 26 whole epochs of 157 batches


def test_repdist_progress_reports_a_run_in_progress(tmp_path):
    """While a training job runs: its step, total, loss and ETA; after a kill, its checkpoint."""
    from repdist.cli.progress import report

    config = write_config(tmp_path / "cfg.yaml", steps=4000)
    work = tmp_path / "run"
    proc = snakemake(work, config, SYNTHETIC["target"])
    log = work / SYNTHETIC["log"]
    deadline = time.time() + 300
    while time.time() < deadline and not (log.exists() and "progress: step" in log.read_text()):
        time.sleep(0.1)
    text = report(work / "results" / "quick")
    for pid in job_pids(work, SYNTHETIC["script"]):
        os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=120)
    print(text)
    assert "training jobs: 1 running" in text
    line = next(ln for ln in text.splitlines() if "K4_w16_g0_f0" in ln)
    assert "running" in line and "/4082" in line and "ETA" in line and "loss" in line
    assert "Snakemake:" in text


@pytest.mark.slow  # a second whole quick DAG, ~5 min: `make test-slow` (CI) runs it
def test_two_quick_runs_give_identical_data(tmp_path, quick_outputs):
    """The whole quick DAG twice from scratch: every parquet table and CSV table is equal
    (`repdist diff`, what the SLURM check uses too). In CI the second run is the one
    `make test-slurm` made through SLURM (tests/quick_runs.py). Here the second runs as the
    first did, on as many threads a job: a CPU convolution sums in another order on one thread
    than on two, so the toy CIFAR models of a one-thread run and a two-thread run differ in
    their last bits (and in a few predictions after 16 steps)."""
    from quick_runs import local_command, shared_run

    second = shared_run("slurm")
    if second is None:
        second = tmp_path / "second"
        beside = shared_run("local") is None  # the first ran beside the tests, on one thread
        res = subprocess.run(local_command(second, 2, max_threads=1 if beside else None),
                             capture_output=True, text=True, timeout=1200)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    from repdist.cli.diff import diff_runs

    compared, problems = diff_runs(quick_outputs, second / "results" / "quick")
    assert not problems, problems
    assert len(compared) > 40
    assert {Path("tables/kl_table.tex"), Path("tables/kl_table.csv")} <= set(compared)


def test_a_second_run_on_the_same_results_folder_refuses(tmp_path):
    """While one run trains, a second on the same results folder (other targets, which
    Snakemake's own lock lets through) stops before any job, naming the first."""
    config = write_config(tmp_path / "overlay.yaml", steps=100_000)  # outlives the second's DAG
    first = snakemake(tmp_path, config, TARGET)
    try:
        deadline = time.time() + 120
        while not job_pids(tmp_path, "synthetic_train.py") and time.time() < deadline:
            time.sleep(0.2)
        assert job_pids(tmp_path, "synthetic_train.py"), \
            "the first run's training job never started"
        second = snakemake(tmp_path, config, "results/quick/tables/kl_table.csv")
        out, _ = second.communicate(timeout=120)
        assert first.poll() is None, "the first run ended before the second was refused"
        assert second.returncode != 0, out[-2000:]
        assert f"is in use by another repdist run (pid {first.pid} on" in out, out[-2000:]
        assert not (tmp_path / "results/quick/tables").exists()
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=60)


def test_out_of_gpu_memory_ends_the_job_naming_it_what_to_lower_and_its_checkpoint(
        tmp_path, monkeypatch):
    """A CUDA out-of-memory error in a training step (torch.OutOfMemoryError, raised here from
    the step on the CPU) ends the job with one message: the job, what to lower (the GPU slots,
    the job's own settings), and its checkpoint, which stays whole: resumed, the run gives the
    weights of an uninterrupted one."""
    from repdist.data.radial import label_codes
    from repdist.pipeline.joblog import GpuMemoryError, job_log
    from repdist.training import loop
    from repdist.training.loop import RunOptions, TrainData, train

    from conftest import train_config

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 2)), rng.integers(0, 4, 64)
    data = TrainData(x, y, x[:16], y[:16], label_codes(np.arange(4), 4))
    cfg = train_config(steps=12, batch_size=16, eval_every=6, log_every=3, checkpoint_every=5,
                       protocol="clean")

    def fresh():
        from repdist.models.mlp import build_synthetic_model

        return build_synthetic_model(0, 4, 8, 2, 0.0, 0.0).double()

    whole = fresh()
    train(whole, data, cfg)
    real, calls = loop.batch_nll, {"n": 0}

    def out_of_memory_at_step_8(*args):
        calls["n"] += 1
        if calls["n"] > 7:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(*args)

    monkeypatch.setattr(loop, "batch_nll", out_of_memory_at_step_8)
    log = tmp_path / "logs" / "cifar10_train" / "fd2_seeds.log"
    ckpt = tmp_path / "checkpoint.pt"
    with pytest.raises(GpuMemoryError) as raised, job_log(log, checkpoint=ckpt):
        train(fresh(), data, cfg, RunOptions(checkpoint=ckpt))
    message = str(raised.value)
    for part in ("job cifar10_train/fd2_seeds ran out of GPU memory", "Tried to allocate",
                 "gpu_slots_per_gpu", "cifar10.seeds_per_job", str(ckpt),
                 "(step 5 of 12) is intact"):
        assert part in message, message
    assert message in log.read_text()
    assert isinstance(raised.value.__cause__, torch.OutOfMemoryError)
    monkeypatch.setattr(loop, "batch_nll", real)
    resumed = fresh()
    _, finals = train(resumed, data, cfg, RunOptions(checkpoint=ckpt))
    assert finals["steps_run"] == 7
    for a, b in zip(whole.state_dict().values(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b)  # exact: the same run, resumed


def test_every_gpu_job_kind_is_told_what_to_lower_when_out_of_memory(tmp_path):
    from repdist.pipeline.joblog import GpuMemoryError, job_log

    told = {}
    for log in ("lm_train/seed0", "synthetic_train/K4_w16_variants", "extract_authors_resnets",
                "roeder_train/x"):
        with pytest.raises(GpuMemoryError) as raised, job_log(tmp_path / f"{log}.log"):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        told[log] = str(raised.value)
    assert "lm.training.batch_size" in told["lm_train/seed0"]
    assert "synthetic.training.batch_size" in told["synthetic_train/K4_w16_variants"]
    assert "cifar10.eval_batch_size" in told["extract_authors_resnets"]
    assert all("gpu_slots_per_gpu" in m and "writes no checkpoint" in m for m in told.values())
    with pytest.raises(RuntimeError) as other, job_log(tmp_path / "x.log"):
        raise RuntimeError("not memory")
    assert type(other.value) is RuntimeError  # other errors pass through as they are
