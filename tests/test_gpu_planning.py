"""Which jobs get GPUs, and which GPU each gets, on a machine without one: the plan follows the
run's declared `gpu` resource (a SLURM profile's line for its nodes), not the machine that builds
the DAG (pipeline.gpu_plan); on a workstation of several GPUs each GPU job holds a slot of its
own, at most `gpu_slots_per_gpu` jobs on a GPU (pipeline.gpu_pool), here with fake GPU ids."""

from __future__ import annotations

import fcntl
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from repdist.pipeline import gpu_plan
from repdist.pipeline.gpu_pool import (
    PER_GPU_ENV,
    POOL_ENV,
    SLOTS_ENV,
    gpu_slot,
    pool_ids,
    slot_file,
)
from repdist.pipeline.gpu_plan import (
    apply_gpu_plan,
    cuda_present,
    gpus_planned,
    plan_gpus,
    uses_gpu,
)
from repdist_dev import dag_snapshot

from conftest import SNAKEMAKE

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(cuda_present(), reason="needs a machine without a GPU")


def test_the_declared_gpus_plan_the_jobs_and_this_machine_only_when_undeclared():
    assert gpus_planned(4) and not gpus_planned(0)
    assert gpus_planned(None) is False  # this machine has none
    assert uses_gpu("auto", True) and not uses_gpu("auto", False) and uses_gpu("cuda", False)
    assert not uses_gpu("cpu", True)
    assert pool_ids(2, ["3", "5", "7"]) == ["3", "5"]
    assert pool_ids(None, ["GPU-a1", "GPU-b2"]) == ["GPU-a1", "GPU-b2"]
    assert pool_ids(3, ["3", "5", "7"], slots_per_gpu=2) == ["3", "5"]  # 3 jobs, 2 a GPU


def test_the_plan_counts_gpus_times_slots_on_a_workstation_and_the_declared_jobs_elsewhere():
    """Undeclared, a machine with GPUs runs GPUs x gpu_slots_per_gpu GPU jobs at once; a
    declared `gpu=N` (SLURM's profile, --resources) is N jobs, held by the first N / k GPUs
    on a workstation; 0, or no GPU undeclared, plans none."""
    work = plan_gpus(None, 3, visible=["0", "1"], present=True)
    assert (work.gpus, work.resource, work.pool) == (True, 6, ["0", "1"])
    assert "3 at a time" in work.note and work.uses_gpu("auto") and not work.uses_gpu("cpu")
    one = plan_gpus(None, 1, visible=["0", "1"], present=True)
    assert (one.resource, one.pool, one.note) == (2, ["0", "1"], None)  # today's plan
    declared = plan_gpus(4, 2, visible=["7", "9", "11"], present=False)
    assert (declared.gpus, declared.resource, declared.pool) == (True, None, ["7", "9"])
    assert "gpu=4 declared" in declared.note
    off = plan_gpus(0, 2, visible=["7"], present=True)
    assert (off.gpus, off.pool) == (False, []) and not off.uses_gpu("auto")
    assert off.uses_gpu("cuda")  # asked for: the job then says it sees none
    assert not plan_gpus(None, 2, visible=[], present=False).gpus
    with pytest.raises(ValueError, match="gpu_slots_per_gpu"):
        plan_gpus(None, 0, visible=["0"], present=True)


def test_the_head_sets_the_gpu_resource_and_exports_the_pool_with_its_slots(monkeypatch):
    """rules/common.smk's one call: on a workstation of two (fake) GPUs, 2 slots each, the run's
    `gpu` resource becomes 4 and its jobs inherit the pool and its slots; a declared resource
    is kept."""
    from snakemake.resources import Resource

    monkeypatch.setattr(gpu_plan, "cuda_present", lambda: True)
    monkeypatch.setattr(gpu_plan, "visible_gpus", lambda: ["7", "9"])
    for env in (POOL_ENV, PER_GPU_ENV):
        monkeypatch.delenv(env, raising=False)
    lines: list[str] = []
    workflow = SimpleNamespace(global_resources={"_cores": Resource("_cores", 2)})
    plan = apply_gpu_plan(workflow, 2, lines.append)
    assert workflow.global_resources["gpu"].value == 4 and plan.pool == ["7", "9"]
    assert (os.environ[POOL_ENV], os.environ[PER_GPU_ENV]) == ("7,9", "2") and lines
    workflow = SimpleNamespace(global_resources={"gpu": Resource("gpu", 1)})
    apply_gpu_plan(workflow, 2, lines.append)
    assert workflow.global_resources["gpu"].value == 1 and os.environ[POOL_ENV] == "7"


def test_a_gpu_never_holds_more_jobs_than_its_slots(monkeypatch, tmp_path):
    """Fake GPUs 7 and 9, 2 slots each: four jobs take 7, 9, 7, 9 (every GPU's first slot
    before a second), each with CUDA_VISIBLE_DEVICES set to its GPU; a fifth waits until one
    ends, then takes the freed GPU's slot."""
    monkeypatch.setenv(POOL_ENV, "7,9")
    monkeypatch.setenv(PER_GPU_ENV, "2")
    monkeypatch.setenv(SLOTS_ENV, str(tmp_path / "slots"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7,9")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    log = logging.getLogger("test_gpu_slots")
    jobs = [gpu_slot(log) for _ in range(4)]
    held = []
    for job in jobs:
        held.append((job.__enter__(), os.environ["CUDA_VISIBLE_DEVICES"]))
    assert held == [("7", "7"), ("9", "9"), ("7", "7"), ("9", "9")]
    got: list[str | None] = []

    def fifth():
        with gpu_slot(log, poll_s=0.01) as gpu:
            got.append(gpu)

    worker = threading.Thread(target=fifth)
    worker.start()
    time.sleep(0.3)
    assert not got, "a fifth job got a slot while all four were held"
    jobs[1].__exit__(None, None, None)  # the second job (GPU 9) ends
    worker.join(timeout=10)
    assert got == ["9"]
    for job in jobs[:1] + jobs[2:]:
        job.__exit__(None, None, None)
    assert max(Counter(gpu for gpu, _ in held).values()) == 2


def planned(*args: str, tmp_path: Path) -> dict[str, list[str]]:
    """rule -> the `gpu=` of each of its jobs, from a dry run here (no GPU, no SLURM)."""
    res = subprocess.run([*SNAKEMAKE, "-n", "-s", str(ROOT / "Snakefile"), "--directory",
                          str(tmp_path), *args], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    jobs: dict[str, list[str]] = {}
    for block in dag_snapshot.jobs(res.stdout + res.stderr):
        rule = block.splitlines()[0].split()[1].rstrip(":")
        gpu = re.search(r"\bgpu=(\d+)", block)
        jobs.setdefault(rule, []).append(gpu.group(1) if gpu else "-")
    return jobs


@pytest.mark.slow  # two Snakemake plans (~11 s beside the quick DAG): `make test-slow` (CI)
def test_the_slurm_profile_plans_gpu_nodes_from_a_login_node_without_one(tmp_path):
    """The shipped SLURM profile's `gpu` line: CIFAR-10 seeds of an M stack in one GPU job and
    synthetic and LM training ask for a GPU (device auto), though this machine has no GPU;
    without the line the same config plans one CPU job per seed."""
    auto = tmp_path / "auto.yaml"  # the paper's choice of seeds per job (quick stacks them)
    auto.write_text(yaml.safe_dump({"cifar10": {"device": "auto", "seeds_per_job": "auto"},
                                    "lm": {"device": "auto"}}))
    quick = ["--configfile", str(ROOT / "config.quick.yaml"), str(auto)]
    shipped = ROOT / "profiles/slurm"
    with_gpus = planned("--profile", str(shipped), *quick, tmp_path=tmp_path / "a")
    assert with_gpus["cifar10_train_seeds"] == ["1", "1"] and "cifar10_train" not in with_gpus
    assert set(with_gpus["synthetic_train"]) == {"1"}
    assert with_gpus["lm_train"] == ["1"] * 3  # each seed a GPU job, as every training job
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
    assert without["lm_train"] == ["0"] * 3


def test_the_stack_across_m_plans_one_gpu_job_for_every_cifar_model(tmp_path):
    """cifar10.stack_across_m: the quick run's 6 CIFAR models (M = 2, 3 x 3 seeds) in one GPU
    job of the shipped SLURM profile, no job per M or per seed; their pairs as before."""
    across = tmp_path / "across.yaml"
    across.write_text(yaml.safe_dump({"cifar10": {"device": "auto", "stack_across_m": True}}))
    jobs = planned("cifar10_all", "--profile", str(ROOT / "profiles/slurm"), "--configfile",
                   str(ROOT / "config.quick.yaml"), str(across), tmp_path=tmp_path / "run")
    assert jobs["cifar10_train_all"] == ["1"]
    assert "cifar10_train" not in jobs and "cifar10_train_seeds" not in jobs
    assert len(jobs["cifar10_pairs"]) == 2


def log_times(log: str, pattern: str) -> list[tuple[datetime, str]]:
    return [(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f"), m.group(2))
            for m in re.finditer(r"^(\S+ \S+) INFO " + pattern, log, flags=re.M)]


def holder_until_held(folder: Path, hold: str, until: str) -> threading.Event:
    """Hold GPU `hold`'s slot (as a job would) from a thread until a job holds GPU `until`'s
    (probed without blocking: a probe that wins the lock lets it go at once), or until the
    returned event is set."""
    folder.mkdir(parents=True, exist_ok=True)
    held = open(slot_file(folder, hold, 0), "a+")  # noqa: SIM115
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    stop = threading.Event()

    def watch() -> None:
        with held, open(slot_file(folder, until, 0), "a+") as probe:
            while not stop.wait(0.005):
                try:
                    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return  # a job holds `until`: let `hold` go
                fcntl.flock(probe, fcntl.LOCK_UN)

    threading.Thread(target=watch, daemon=True).start()
    return stop


@pytest.mark.slow  # six training jobs through Snakemake, ~25 s of CPU: `make test-slow` (CI)
def test_each_gpu_job_holds_its_own_gpu_of_the_pool(tmp_path):
    """Two fake GPUs (CUDA_VISIBLE_DEVICES=7,9 in the head), `--resources gpu=2`: the quick
    config's four synthetic training jobs and two LM seeds, planned for GPUs (device auto), run
    two at a time, each with CUDA_VISIBLE_DEVICES set to one GPU of the pool that no other
    running job holds (here they then train on the CPU, as `auto` finds no CUDA).

    A job holds its GPU ~1 s here, so whether two holds overlap is up to the machine's timing:
    the test itself holds GPU 7 until a job holds 9, so that both GPUs are used in every run."""
    targets = [f"results/quick/synthetic/K{k}/w{w}_g0_f0/seed0/metrics.json"
               for k in (4, 6) for w in (16, 32)]
    targets += [f"results/quick/lm/seed{s}/metrics.json" for s in (0, 1)]
    lm = tmp_path / "lm.yaml"
    lm.write_text(yaml.safe_dump({"lm": {"device": "auto", "seeds": [0, 1]}}))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "7,9", SLOTS_ENV: str(tmp_path / "slots")}
    env.pop(POOL_ENV, None)
    gpu7 = holder_until_held(tmp_path / "slots", hold="7", until="9")
    try:
        res = subprocess.run(
            [*SNAKEMAKE, *targets, "--cores", "2", "--resources", "gpu=2", "-s",
             str(ROOT / "Snakefile"), "--directory", str(tmp_path), "--configfile",
             str(ROOT / "config.quick.yaml"), str(lm)], capture_output=True, text=True,
            timeout=600, env=env)
    finally:
        gpu7.set()
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "training jobs planned for GPUs" in res.stdout + res.stderr
    held: dict[str, list[tuple[datetime, datetime]]] = {}
    logs = [p for kind in ("synthetic_train", "lm_train")
            for p in sorted((tmp_path / "results/quick/logs" / kind).glob("*.log"))]
    assert len(logs) == 6
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
