# Helpers of rules/lm.smk.
from repdist.pipeline.lm_model_sources import check_lm_models_available
from repdist.pipeline.lm_model_sources import lm_models as lm_model_entries

LM = config["lm"]
LM_SEEDS = LM["seeds"]
# lm_train's `resources: gpu`: each seed's job takes a slot of the GPU pool
LM_GPU = GPU_PLAN.uses_gpu(LM["device"])


# Keys of `lm` the seeds' jobs do not read (the layers and the outside models): left out of
# the config they record, so that setting them reruns no seed.
LM_NOT_SEEDS = (
    "layers",
    "layer_components",
    "models",
    "corpus",
    "text",
    "extract_device",
)
# Keys the outside models' contexts and extraction read (besides their own entry).
LM_MODELS_READ = ("data", "corpus", "text", "positions", "layers")


def lm_seeds_run_config(*also):
    """The config a seed's job records: `lm` without LM_NOT_SEEDS, but `also`."""
    keep = {k: v for k, v in LM.items() if k not in LM_NOT_SEEDS or k in also}
    return {**run_config("lm"), "lm": keep}


def lm_models_run_config(name=None):
    """The config an outside model's job records: what the contexts are made of, the first
    model (its tokenizer cut them) and `name`'s entry; adding a model reruns no other.
    """
    names = [LM_MODEL_NAMES[0]] + ([name] if name else []) if LM_MODELS_ON else []
    keep = {k: LM[k] for k in LM_MODELS_READ}
    models = {n: config["lm"]["models"][n] for n in names}
    return {**run_config("lm"), "lm": {**keep, "models": models}}


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
    return training_jobs.job_minutes(10, [scale], floor=10, margin=5, times=attempt)


# Layer by layer (experiments/lm/layers.py), for the seeds and for lm.models.
LM_LAYER_SETTINGS = {"layers": LM["layers"], "components": LM["layer_components"]}
# Outside models (lm.models; pipeline/lm_model_sources.py): on whenever two or more are named.
LM_MODELS = {m.name: m for m in lm_model_entries(config)}
LM_MODEL_NAMES = list(LM_MODELS)
LM_MODELS_ON = len(LM_MODELS) >= 2
LM_STANDINS = {
    n: dict(m.standin) for n, m in LM_MODELS.items() if m.standin is not None
}
LM_EXTRACT_GPU = GPU_PLAN.uses_gpu(LM["extract_device"])


def lm_model_file(name, model="{name}"):
    """A file of one outside model (the model left open by default)."""
    return out(f"lm_models/{model}/{name}")


def lm_models_files(name):
    """One file per outside model."""
    return [lm_model_file(name, m) for m in LM_MODEL_NAMES]


def lm_model_names(standins=False):
    """The outside models' (or only the stand-ins') names as a wildcard pattern (none: a
    pattern no name matches)."""
    import re

    names = LM_STANDINS if standins else LM_MODEL_NAMES
    return "|".join(re.escape(n) for n in names) or "(?!)"


def lm_standin_folder(name="{name}"):
    """A stand-in's save_pretrained folder (made by lm_standin)."""
    return out(f"lm_standins/{name}")


def lm_model_source(name):
    """Where a model loads from: its stand-in's folder, its own folder, or its hub id; the
    revision (None: main) and its tokenizer's folder or id (default: the model's)."""
    entry = LM_MODELS[name]
    source = lm_standin_folder(name) if entry.standin is not None else entry.model
    return {
        "model": source,
        "revision": entry.revision,
        "tokenizer": entry.tokenizer or source,
        "tokenizer_revision": None if entry.tokenizer else entry.revision,
    }


def lm_models_needs(names):
    """Input files of the outside models' jobs that read `names`: a stand-in's folder, and a
    corpus file (not the stdlib)."""
    folders = [lm_standin_folder(n) for n in names if n in LM_STANDINS]
    return folders + ([] if LM["corpus"] == "stdlib" else [LM["corpus"]])


def lm_model_inputs(wildcards):
    """An extraction job's inputs: the contexts, and its stand-in's folder for a stand-in."""
    standin = (
        [lm_standin_folder(wildcards.name)] if wildcards.name in LM_STANDINS else []
    )
    return [out("lm_models/contexts.npz"), *standin]


def lm_layer_inputs(wildcards):
    """The layer folders of one branch's models: the seeds (lm) or lm.models (lm_models)."""
    if wildcards.branch == "lm":
        return lm_seed_files("layers")
    return lm_models_files("layers")


def lm_layer_names(wildcards):
    if wildcards.branch == "lm":
        return [f"seed{s}" for s in LM_SEEDS]
    return LM_MODEL_NAMES


def check_lm_models_downloads(jobs):
    """At start-up: the hub models this run must extract, not here and not reachable, stop
    the run (pipeline/lm_model_sources.py), as a missing CIFAR-10 does."""
    needed = {
        j.wildcards.get("name") for j in jobs if j.rule.name == "lm_models_extract"
    }
    check_lm_models_available([LM_MODELS[n] for n in LM_MODEL_NAMES if n in needed])
