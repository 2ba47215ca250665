# Helpers of rules/roeder_words.smk.
WORDS = config["roeder"]["words"]
WORDS_SEEDS = list(range(WORDS["n_seeds"]))
# roeder_words_train's `resources: gpu`: the job takes a slot of the GPU pool on a GPU
WORDS_GPU = GPU_PLAN.uses_gpu(WORDS["device"])


def words_file(name):
    return out(f"roeder_words/{name}")


def words_seed_files(name):
    """One file per seed."""
    return [words_file(f"seed{s}/{name}") for s in WORDS_SEEDS]


def words_fit_files(name):
    """The figure's two seeds' files (seed a, seed b)."""
    return [words_file(f"seed{s}/{name}") for s in WORDS["fit_seeds"]]


def words_model_settings():
    """WordsConfig's fields."""
    keys = ("corpus", "max_bytes", "held_out_fraction", "vocabulary", "context")
    return {**{k: WORDS[k] for k in keys + ("rep_dim", "n_test")}, "seeds": WORDS_SEEDS}


def words_training():
    """The clean protocol: exactly `steps` Adam steps in a seeded batch order."""
    return {**WORDS["training"], "protocol": "clean"}


def words_inputs():
    """A corpus file is an input of the training job (the standard library is not)."""
    return [] if WORDS["corpus"] == "stdlib" else [WORDS["corpus"]]


def words_run_config():
    """What the models' files record: `roeder.words` but the figure's keys (drawing another
    subset of words retrains nothing)."""
    keep = {k: v for k, v in WORDS.items() if k not in ("shown", "fit_seeds")}
    return {**run_config(), "roeder": {"words": keep}}


def roeder_words_runtime(wildcards, attempt=1):
    """Minutes, times the attempt (a resubmitted job resumes from its checkpoint): 5 seeds x
    6,000 steps of 128 contexts at a vocabulary of 1,000 took 2.6 min (10 x 10,000: 5.2 min)
    on a loaded 2-core AMD EPYC, one thread (docs/results.md), given 7; the cost grows with
    seeds x steps x batch x words."""
    steps, batch = WORDS["training"]["steps"], WORDS["training"]["batch_size"]
    ratios = [WORDS["n_seeds"] * steps / 30000, batch / 128, WORDS["vocabulary"] / 1000]
    return training_jobs.job_minutes(5, ratios, floor=5, margin=2, times=attempt)
