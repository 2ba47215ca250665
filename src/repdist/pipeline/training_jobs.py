"""The DAG's training jobs, named once: their logs (where `repdist progress` looks), the files
each trained model leaves, and the synthetic jobs' settings, priorities and runtimes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# The files every model leaves (experiments/outputs.py writes them), by the key rules name them.
MODEL_TABLES = {"embeddings": "embeddings.parquet", "unembeddings": "unembeddings.parquet",
                "metrics": "metrics.json"}
CIFAR_MODEL_TABLES = {"embeddings_test": "embeddings_test.parquet",
                      "embeddings_train": "embeddings_train.parquet",
                      "unembeddings": "unembeddings.parquet", "metrics": "metrics.json"}

# logs/<kind>/<job>.log: a kind per training rule family (a family's rules share the folder:
# synthetic_train and synthetic_train_variants, cifar10_train and cifar10_train_seeds)
TRAINING_KINDS = ("synthetic_train", "cifar10_train", "bound_beyond_train", "distillation_train",
                  "roeder_train", "roeder_cpc_train", "lm_train", "lm_extract", "prh_extract",
                  "logit_distance_train")
# logs/<name>.log: training rules with a single job
SINGLE_TRAINING_JOBS = ("training_dynamics", "roeder_words_train")

# What a job that ran out of GPU memory can lower (besides gpu_slots_per_gpu, which every GPU
# job shares), by its log folder: settings that do not change the results first.
MEMORY_SETTINGS = {
    "cifar10_train": ("cifar10.stack_across_m (false: one job per M)",
                      "cifar10.seeds_per_job (1: one model per job instead of every seed of "
                      "an M stacked)", "cifar10.eval_batch_size"),
    "extract_authors_resnets": ("cifar10.eval_batch_size",),
    "lm_train": ("lm.training.batch_size", "lm.model.width"),
    "prh_extract": ("prh.batch_size",),
    "synthetic_train": ("synthetic.training.batch_size (changes the training)",),
    "distillation_train": ("synthetic.training.batch_size (changes the training)",),
    "logit_distance_train": ("logit_distance.spirals.student_seeds (models in one stack)",
                             "logit_distance.spirals.training.batch_size (changes the training)"),
    "roeder_cpc_train": ("roeder.cpc.widths (the widest stacks)",
                         "roeder.cpc.n_seeds (models in one stack)"),
}


def memory_settings(log: str | Path) -> tuple[str, ...]:
    """What to lower when the job logging to `log` runs out of GPU memory (MEMORY_SETTINGS)."""
    path = Path(log)
    own = MEMORY_SETTINGS.get(path.parent.name) or MEMORY_SETTINGS.get(path.stem, ())
    return ("gpu_slots_per_gpu (the jobs on one GPU share its memory)", *own)


def training_log(kind: str, job: str | None = None) -> str:
    """A training job's log, relative to the run's output folder (see TRAINING_KINDS)."""
    if kind in SINGLE_TRAINING_JOBS and job is None:
        return f"logs/{kind}.log"
    if kind in TRAINING_KINDS and job is not None:
        return f"logs/{kind}/{job}.log"
    raise ValueError(f"{kind!r} (job {job!r}) is not a training job of "
                     f"{TRAINING_KINDS + SINGLE_TRAINING_JOBS}: add it to "
                     "repdist.pipeline.training_jobs so that `repdist progress` follows it")


def training_priority(width: int | str, n_configs: int = 1) -> int:
    """Longest jobs first (cost ~ models x width^2): the short ones then fill the cores at the
    end, instead of a long one running alone."""
    return int(width) ** 2 * n_configs // 64


def job_minutes(reference: float, ratios: Sequence[float] = (), floor: int = 0,
                margin: float = 0.0, times: int = 1) -> int:
    """Every rule's `resources: runtime`: `reference` minutes times each of `ratios` (this job's
    size over the reference's), plus `margin`, whole, at least `floor`; times `times` (the
    attempt: a job resubmitted after its time limit resumes from its checkpoint)."""
    minutes = reference
    for ratio in ratios:
        minutes = minutes * ratio
    return max(floor, int(minutes + margin)) * times


def synthetic_training_minutes(synthetic: Mapping[str, Any], width: int | str, attempt: int = 1,
                               n_configs: int = 1) -> int:
    """Minutes for one job of n_configs x n_seeds MLPs of config `synthetic`, with a margin (a
    job of 20 seeds at width 256 and 15,000 steps is given 50), times the attempt."""
    scale = n_configs * synthetic["n_seeds"] / 20 * synthetic["training"]["steps"] / 15000
    return job_minutes(40, (scale, (int(width) / 256) ** 2), floor=5, margin=10, times=attempt)


def synthetic_model_settings(synthetic: Mapping[str, Any], num_classes: int | str,
                             width: int | str, seeds: list[int] | None = None,
                             rep_dim: int | str | None = None) -> dict[str, Any]:
    """SyntheticModelConfig's fields shared by the variants of one (K, width) of `synthetic`."""
    return {
        "num_classes": int(num_classes),
        "width": int(width),
        "seeds": list(range(synthetic["n_seeds"]) if seeds is None else seeds),
        "rep_dim": synthetic["rep_dim"] if rep_dim is None else int(rep_dim),
        **{k: synthetic[k] for k in ("n_train", "n_test", "train_data_seed", "test_data_seed")},
    }


def job_mem_mb(config: Mapping[str, Any], estimate: int) -> int:
    """A job's memory (MB): its paper-scale `estimate`, capped by config `max_job_mem_mb`."""
    cap = config.get("max_job_mem_mb")
    return estimate if cap is None else min(estimate, cap)
