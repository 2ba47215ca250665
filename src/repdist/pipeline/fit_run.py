"""`make run`: the whole workflow at paper scale where a GPU is at hand (here, or in a SLURM
profile's partitions), else what a CPU finishes: `make run-synthetic`'s overlay, plus the
authors' CIFAR checkpoints where local copies are. It says, first and last, what it left for a
GPU, how long that would take here, and how to run it anyway (`make run ALL=1`)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .gpu_plan import cuda_present

CPU_OVERLAY = "config.synthetic.yaml"
RUN_RECORD = Path("results/.run-configfiles")  # what `make report` reads to describe the run
# 30 ResNet-18s of 20,319 steps at about 0.85 s a step on 2 cores (rules/helpers/cifar.smk)
CIFAR_CORE_DAYS = 12.0
LEFT_FOR_A_GPU = (
    "CIFAR-10: 30 ResNet-18s, M = 2, 3, 5 x 10 seeds (Figs. 3 left and 5, App. F.4-F.5)",
    "the follow-up's five spirals teachers (one teacher here) and Roeder et al.'s studies at "
    "their full scale (here at a scale for a CPU)",
)
AUTHORS_CIFAR = "authors_cifar_theirs"  # their CIFAR-10 models drawn: ~2.7 h on 2 cores
AUTHORS_CIFAR_LEFT = ("the authors' CIFAR-10 checkpoints (App. F.5): drawn here too once "
                      "cifar10.root and authors_models.cifar_root name local copies")


@dataclass(frozen=True)
class RunPlan:
    """The config files a run reads, and what it leaves for a GPU (nothing: the whole run)."""

    configfiles: tuple[str, ...]
    left: tuple[str, ...] = field(default=())
    why: str = ""
    also: tuple[str, ...] = ()  # targets of a second run on the user's own config files


def profile_has_gpus(profile: str | Path) -> bool:
    """A profile's SLURM partitions offer GPUs (partitions.yaml: max_gpu > 0 in one)."""
    path = Path(profile) / "partitions.yaml"
    if not path.is_file():
        return False
    partitions = (yaml.safe_load(path.read_text()) or {}).get("partitions", {}) or {}
    return any(int((p or {}).get("max_gpu", 0) or 0) > 0 for p in partitions.values())


def plan(profile: str | Path, overlays: Sequence[str], everything: bool = False,
         gpu: bool | None = None) -> RunPlan:
    """The run `make run` makes here: everything with a GPU (or ALL=1), else the CPU's part."""
    gpu = cuda_present() if gpu is None else gpu
    if everything or gpu or profile_has_gpus(profile):
        why = ("ALL=1" if everything else "a GPU is visible" if gpu
               else f"the profile {profile} has GPU partitions")
        return RunPlan(tuple(overlays), (), why)
    if authors_cifar_at_hand(overlays):
        return RunPlan((CPU_OVERLAY, *overlays), LEFT_FOR_A_GPU, "no GPU is visible here",
                       (AUTHORS_CIFAR,))
    return RunPlan((CPU_OVERLAY, *overlays), (*LEFT_FOR_A_GPU, AUTHORS_CIFAR_LEFT),
                   "no GPU is visible here")


def _merged(overlays: Sequence[str]) -> dict:
    def merge(base: dict, top: dict) -> dict:
        return {**base, **{k: merge(base[k], v) if isinstance(v, dict)
                           and isinstance(base.get(k), dict) else v for k, v in top.items()}}
    config: dict = yaml.safe_load(Path("config.yaml").read_text())
    for path in overlays:
        config = merge(config, yaml.safe_load(Path(path).read_text()) or {})
    return config


def authors_cifar_at_hand(overlays: Sequence[str]) -> bool:
    """CIFAR-10 and the authors' CIFAR checkpoints are both in local folders: no download."""
    config = _merged(overlays)
    cifar, authors = config.get("cifar10", {}), config.get("authors_models", {})
    data = cifar.get("root") or Path(cifar.get("resources", "resources")) / "cifar-10-batches-py"
    return bool(authors.get("cifar_root")) and Path(authors["cifar_root"]).is_dir() \
        and Path(data).is_dir()


def describe(run: RunPlan, cores: int) -> list[str]:
    """What the run does and leaves, in a few lines (said before and after it)."""
    if not run.left:
        return [f"make run: everything at paper scale ({run.why})."]
    also = (f" Then it draws the authors' CIFAR-10 checkpoints ({', '.join(run.also)}), from "
            "local copies." if run.also else "")
    return [f"make run: {run.why}, so this runs what {cores} CPU cores finish at paper scale "
            f"(--configfile {' '.join(run.configfiles)}).{also}",
            "Left for a GPU:", *(f"  - {item}" for item in run.left),
            f"Here that would take about {CIFAR_CORE_DAYS / max(1, cores):.0f} days on {cores} "
            "cores. To run it anyway: make run ALL=1"]


def snakemake_command(configfiles: Sequence[str], profile: str, cores: int,
                      targets: Sequence[str] = ()) -> list[str]:
    """Snakemake through this interpreter; targets go first: --configfile takes every word after."""
    files = ["--configfile", *configfiles] if configfiles else []
    return [sys.executable, "-m", "snakemake", *targets, "--profile", profile, "--cores",
            str(cores), *files]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m repdist.pipeline.fit_run", description=__doc__)
    p.add_argument("--profile", default="profiles/workstation", help="the Snakemake profile")
    p.add_argument("--cores", type=int, required=True, help="the cores Snakemake may use")
    p.add_argument("--config", action="append", default=[], metavar="FILE",
                   help="an overlay config file (CONFIG=... of make run); repeatable")
    p.add_argument("--all", action="store_true", help="run everything, GPU or not (ALL=1)")
    p.add_argument("--dry-run", action="store_true", help="say the plan and stop")
    args = p.parse_args(argv)
    run = plan(args.profile, args.config, args.all)
    lines = describe(run, args.cores)
    print("\n".join(lines), flush=True)
    if args.dry_run:
        return 0
    RUN_RECORD.parent.mkdir(parents=True, exist_ok=True)
    RUN_RECORD.write_text(" ".join(["--configfile", *run.configfiles] if run.configfiles
                                   else []) + "\n")
    status = subprocess.call(snakemake_command(run.configfiles, args.profile, args.cores))
    if status == 0 and run.also:
        status = subprocess.call(snakemake_command(args.config, args.profile, args.cores,
                                                   run.also))
    print("\n".join(lines), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
