"""Which jobs get GPUs, and which GPU each gets, on a machine without one: the plan follows the
run's declared `gpu` resource (a SLURM profile's line for its nodes), not the machine that builds
the DAG; on a workstation of several GPUs each GPU job holds its own (pipeline.gpu_pool), here
with fake GPU ids."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from repdist.pipeline.gpu_pool import POOL_ENV, SLOTS_ENV, pool_ids
from repdist.training.devices import cuda_present, gpus_planned, uses_gpu

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
sys.path.insert(0, str(ROOT / "tools"))

import dag_snapshot  # noqa: E402

pytestmark = pytest.mark.skipif(cuda_present(), reason="needs a machine without a GPU")


def test_the_declared_gpus_plan_the_jobs_and_this_machine_only_when_undeclared():
    assert gpus_planned(4) and not gpus_planned(0)
    assert gpus_planned(None) is False  # this machine has none
    assert uses_gpu("auto", True) and not uses_gpu("auto", False) and uses_gpu("cuda", False)
    assert not uses_gpu("cpu", True)
    assert pool_ids(2, ["3", "5", "7"]) == ["3", "5"]
    assert pool_ids(None, ["GPU-a1", "GPU-b2"]) == ["GPU-a1", "GPU-b2"]


def planned(*args: str, tmp_path: Path) -> dict[str, list[str]]:
    """rule -> the `gpu=` of each of its jobs, from a dry run here (no GPU, no SLURM)."""
    res = subprocess.run([SNAKEMAKE, "-n", "-s", str(ROOT / "Snakefile"), "--directory",
                          str(tmp_path), *args], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    jobs: dict[str, list[str]] = {}
    for block in dag_snapshot.jobs(res.stdout + res.stderr):
        rule = block.splitlines()[0].split()[1].rstrip(":")
        gpu = re.search(r"\bgpu=(\d+)", block)
        jobs.setdefault(rule, []).append(gpu.group(1) if gpu else "-")
    return jobs


def test_the_slurm_profile_plans_gpu_nodes_from_a_login_node_without_one(tmp_path):
    """The shipped SLURM profile's `gpu` line: CIFAR-10 seeds of an M stack in one GPU job and
    synthetic training asks for a GPU (device auto), though this machine has no GPU; without
    the line the same config plans one CPU job per seed."""
    auto = tmp_path / "auto.yaml"  # the paper's choice of seeds per job (quick stacks them)
    auto.write_text(yaml.safe_dump({"cifar10": {"device": "auto", "seeds_per_job": "auto"}}))
    quick = ["--configfile", str(ROOT / "config.quick.yaml"), str(auto)]
    shipped = ROOT / "profiles/slurm"
    with_gpus = planned("--profile", str(shipped), *quick, tmp_path=tmp_path / "a")
    assert with_gpus["cifar10_train_seeds"] == ["1", "1"] and "cifar10_train" not in with_gpus
    assert set(with_gpus["synthetic_train"]) == {"1"}
    assert set(with_gpus["synthetic_pairs"]) == {"-"}  # comparing asks for no GPU

    no_gpus = tmp_path / "cpu-profile"
    no_gpus.mkdir()
    settings = yaml.safe_load((shipped / "config.yaml").read_text())
    assert settings.pop("resources") == ["gpu=4"]
    (no_gpus / "config.yaml").write_text(yaml.safe_dump(settings))
    (no_gpus / "partitions.yaml").write_text((shipped / "partitions.yaml").read_text())
    without = planned("--profile", str(no_gpus), *quick, tmp_path=tmp_path / "b")
    assert without["cifar10_train"] == ["0"] * 6 and "cifar10_train_seeds" not in without
    assert set(without["synthetic_train"]) == {"0"}


def log_times(log: str, pattern: str) -> list[tuple[datetime, str]]:
    return [(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f"), m.group(2))
            for m in re.finditer(r"^(\S+ \S+) INFO " + pattern, log, flags=re.M)]


def test_each_gpu_job_holds_its_own_gpu_of_the_pool(tmp_path):
    """Two fake GPUs (CUDA_VISIBLE_DEVICES=7,9 in the head), `--resources gpu=2`: the quick
    config's four synthetic training jobs, planned for GPUs (device auto), run two at a time,
    each with CUDA_VISIBLE_DEVICES set to one GPU of the pool that no other running job holds
    (here they then train on the CPU, as `auto` finds no CUDA)."""
    targets = [f"results/quick/synthetic/K{k}/w{w}_g0_f0/seed0/metrics.json"
               for k in (4, 6) for w in (16, 32)]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "7,9", SLOTS_ENV: str(tmp_path / "slots")}
    env.pop(POOL_ENV, None)
    res = subprocess.run(
        [SNAKEMAKE, *targets, "--cores", "2", "--resources", "gpu=2", "-s",
         str(ROOT / "Snakefile"), "--directory", str(tmp_path), "--configfile",
         str(ROOT / "config.quick.yaml")], capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "training jobs planned for GPUs" in res.stdout + res.stderr
    held: dict[str, list[tuple[datetime, datetime]]] = {}
    logs = sorted((tmp_path / "results/quick/logs/synthetic_train").glob("*.log"))
    assert len(logs) == 4
    for path in logs:
        text = path.read_text()
        (start, gpu), = log_times(text, r"GPU (\S+) of the pool 7,9: CUDA_VISIBLE_DEVICES=\S+")
        (end, released), = log_times(text, r"GPU (\S+) released")
        assert gpu == released and "planned for a GPU" in text, text[-2000:]
        held.setdefault(gpu, []).append((start, end))
    assert set(held) == {"7", "9"}, held
    for gpu, spans in held.items():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert end <= start, f"GPU {gpu} held by two jobs at once: {spans}"
