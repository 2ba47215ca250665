"""`make run` fits the machine: everything with a GPU (or a SLURM profile with GPU partitions,
or ALL=1); without one, what the CPU finishes, saying what it left, how long that would take
here and the command that runs it anyway."""

import subprocess
import sys
from pathlib import Path

from repdist.pipeline.fit_run import CPU_OVERLAY, describe, plan, profile_has_gpus

ROOT = Path(__file__).resolve().parents[1]


def test_without_a_gpu_it_runs_the_cpus_part_and_names_what_it_left(monkeypatch):
    monkeypatch.chdir(ROOT)
    run = plan("profiles/workstation", ["config.prh.yaml"], gpu=False)
    assert run.configfiles == (CPU_OVERLAY, "config.prh.yaml") and run.left
    text = "\n".join(describe(run, cores=2))
    assert "30 ResNet-18s" in text and "about 6 days on 2 cores" in text
    assert "make run ALL=1" in text
    assert "about 3 days on 4 cores" in "\n".join(describe(run, cores=4))


def test_a_gpu_a_gpu_profile_or_all_runs_everything(monkeypatch):
    monkeypatch.chdir(ROOT)
    for run in (plan("profiles/workstation", [], gpu=True),
                plan("profiles/slurm", [], gpu=False),
                plan("profiles/workstation", [], everything=True, gpu=False)):
        assert run.configfiles == () and run.left == ()
        assert describe(run, 2)[0].startswith("make run: everything at paper scale")
    assert profile_has_gpus(ROOT / "profiles" / "slurm")
    assert not profile_has_gpus(ROOT / "profiles" / "workstation")


def test_local_copies_of_cifar10_and_their_checkpoints_add_the_authors_models(tmp_path,
                                                                               monkeypatch):
    monkeypatch.chdir(ROOT)
    (tmp_path / "data").mkdir()
    (tmp_path / "theirs").mkdir()
    overlay = tmp_path / "local.yaml"
    overlay.write_text(f"cifar10: {{root: {tmp_path / 'data'}}}\n"
                       f"authors_models: {{cifar_root: {tmp_path / 'theirs'}}}\n")
    run = plan("profiles/workstation", [str(overlay)], gpu=False)
    assert run.also == ("authors_cifar_theirs",)
    assert all("authors' CIFAR-10" not in item for item in run.left)


def test_make_run_says_its_plan_first():
    done = subprocess.run([sys.executable, "-m", "repdist.pipeline.fit_run", "--cores", "2",
                           "--dry-run"], cwd=ROOT, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("make run: no GPU is visible here")
