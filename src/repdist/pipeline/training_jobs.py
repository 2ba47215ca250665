"""The DAG's training jobs, named once: the rule files put a training job's log where
`training_log` says, and `repdist progress` looks for training jobs there, so a new training
rule is watched as soon as it logs through this function."""

from __future__ import annotations

# logs/<kind>/<job>.log: a kind per training rule family (a family's rules share the folder:
# synthetic_train and synthetic_train_variants, cifar10_train and cifar10_train_seeds)
TRAINING_KINDS = ("synthetic_train", "cifar10_train", "bound_beyond_train", "distillation_train",
                  "roeder_train", "lm_train", "lm_extract")
# logs/<name>.log: training rules with a single job
SINGLE_TRAINING_JOBS = ("training_dynamics",)


def training_log(kind: str, job: str | None = None) -> str:
    """The log of a training job, relative to the run's output folder: logs/<kind>/<job>.log
    for a kind of TRAINING_KINDS, logs/<kind>.log for one of SINGLE_TRAINING_JOBS."""
    if kind in SINGLE_TRAINING_JOBS and job is None:
        return f"logs/{kind}.log"
    if kind in TRAINING_KINDS and job is not None:
        return f"logs/{kind}/{job}.log"
    raise ValueError(f"{kind!r} (job {job!r}) is not a training job of "
                     f"{TRAINING_KINDS + SINGLE_TRAINING_JOBS}: add it to "
                     "repdist.pipeline.training_jobs so that `repdist progress` follows it")
