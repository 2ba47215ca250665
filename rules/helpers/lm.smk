# Helpers of rules/lm.smk.
LM = config["lm"]
LM_SEEDS = LM["seeds"]
# lm_train's `resources: gpu`: each seed's job takes a slot of the GPU pool
LM_GPU = GPU_PLAN.uses_gpu(LM["device"])


def lm_file(name, seed="{S}"):
    """A file of one seed's language model (the seed left open by default)."""
    return out(f"lm/seed{seed}/{name}")


def lm_seed_files(name):
    """One file per configured seed."""
    return [lm_file(name, s) for s in LM_SEEDS]


def lm_model_settings():
    """GPTConfig's fields but the vocabulary (the tokenizer's, known once it is trained)."""
    return {**LM["model"], "context": LM["data"]["context"]}


def lm_measures():
    """The pairs' measure settings: the run's, with the branch's own num_samples (N is the
    eval contexts, far fewer than d_LLV's usual candidate sets need at width M)."""
    return {**pair_measures(), "num_samples": LM["num_samples"]}


def lm_runtime(wildcards, attempt=1):
    """Minutes for one seed, with a margin (1,000 steps of width 64 take about 3 on one core),
    times the attempt: a resubmitted job resumes from its checkpoint."""
    steps, width = LM["training"]["steps"], LM["model"]["width"]
    scale = steps / 1000 * (width / 64) ** 2 * LM["training"]["batch_size"] / 32
    return max(10, int(10 * scale + 5)) * attempt
