# Helpers of rules/cifar.smk.
def cifar_seeds_per_job():
    """Seeds one CIFAR training job trains together: all of them on a GPU, one on a CPU."""
    if CIFAR["seeds_per_job"] == "auto":
        return len(CIFAR_SEEDS) if CIFAR_GPU else 1
    return CIFAR["seeds_per_job"]


def cifar_stack_across_m():
    """Whether one job trains every seed at every M (cifar10.stack_across_m)."""
    return CIFAR["stack_across_m"]


def cifar_train_m(job):
    """The M wildcard's pattern in the CIFAR training job of one seed (`job` "seed") or of
    every seed of an M ("seeds"): any M where such jobs train this run's models, else a
    pattern that matches nothing (then cifar10_train_all trains them)."""
    if cifar_stack_across_m():
        return r"(?!)"
    if job == "seeds":
        return r"\d+" if cifar_seeds_per_job() > 1 else r"(?!)"
    return r"\d+"


def cifar_all_files(name):
    """One file per model of the stack across M, M-major (CifarModelConfig.models' order)."""
    return [cifar_file(name, M=m, S=s) for m in CIFAR["rep_dims"] for s in CIFAR_SEEDS]


def cifar_train_runtime(wildcards, attempt=1, n_seeds=1):
    """Minutes for n_seeds models trained together, with a margin, times the attempt (as
    training_runtime): at paper scale about 60 min for one model on a GPU (twice that for a
    stack of 10, and as many stacks of 10 as it holds), and on a CPU about 5 h a model (0.85 s
    a step on 2 cores, measured on the build machine), given 8.
    """
    scale = CIFAR["training"]["steps"] / 20000 * (CIFAR["base_width"] / 64) ** 2
    if CIFAR_GPU:
        stacked = 2 * max(1, n_seeds // len(CIFAR_SEEDS)) if n_seeds > 1 else 1
        return training_jobs.job_minutes(60, [scale], floor=10, times=stacked * attempt)
    return training_jobs.job_minutes(480, [scale, n_seeds], floor=10, times=attempt)


def cifar_model_settings(seeds, rep_dim=lambda wc: int(wc.M)):
    """CifarModelConfig fields of a job training `seeds` at the wildcard's M (`rep_dim`: the
    job's M, or every M of the stack across M)."""
    keys = (
        "base_width",
        "g_width",
        "bn_momentum",
        "device",
        "tf32",
        "channels_last",
        "cuda_graph",
    )
    return lambda wc: {
        "rep_dim": rep_dim(wc),
        "seeds": seeds(wc),
        "eval_batch_size": CIFAR["eval_batch_size"],
        **{k: CIFAR[k] for k in keys},
    }


def cifar_figures():
    """The figures of M = 2 (when the run has it): every seed's, and the two compared seeds'."""
    if 2 not in CIFAR["rep_dims"]:
        return []
    a, b = CIFAR["comparison_seeds"]
    seeds = [figure_files(f"cifar10_reps_seed{s}") for s in CIFAR_SEEDS]
    return [*seeds, figure_files(f"cifar10_embedding_comparison_{a}_{b}")]
