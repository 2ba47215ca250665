# Helpers that several rule files use (paths, settings, figure outputs, the branches a run
# holds). A helper one rule file needs lives in rules/helpers/, named after that file.
from snakemake.resources import Resource

from repdist.models.authors import CHECKSUMS as AUTHORS_CHECKSUMS
from repdist.models.authors import read_checksums
from repdist.pipeline.availability import (
    check_authors_available,
    check_authors_cifar_available,
    check_cifar_available,
)
from repdist.pipeline.gpu_pool import export_pool
from repdist.pipeline.measure_settings import alignment_settings
from repdist.pipeline.training_jobs import training_log as training_log_path
from repdist.training.devices import cuda_present, gpus_planned, uses_gpu, visible_gpus
from repdist.training.settings import training_settings as training_settings_of


def out(path):
    """A path under the configured output folder."""
    return f"{OUT}/{path}"


def training_log(kind, job=None):
    """A training job's log, where `repdist progress` looks for it (pipeline.training_jobs)."""
    return out(training_log_path(kind, job))


def figure(name, caption, category, prefix="", **report_fields):
    """A figure's outputs: `{prefix}pdf`, and `{prefix}png` shown in the report with its caption."""
    return {
        f"{prefix}pdf": out(f"figures/{name}.pdf"),
        f"{prefix}png": report(
            out(f"figures/{name}.png"),
            caption=f"../report/{caption}.rst",
            category=category,
            **report_fields,
        ),
    }


def figure_files(name):
    """The pdf and png of a figure, as target files."""
    return [out(f"figures/{name}.{ext}") for ext in ("pdf", "png")]


# The files every model leaves (experiments/outputs.py writes them), by the key rules name them.
MODEL_TABLES = {
    "embeddings": "embeddings.parquet",
    "unembeddings": "unembeddings.parquet",
    "metrics": "metrics.json",
}
CIFAR_MODEL_TABLES = {
    "embeddings_test": "embeddings_test.parquet",
    "embeddings_train": "embeddings_train.parquet",
    "unembeddings": "unembeddings.parquet",
    "metrics": "metrics.json",
}


def model_tables(seed_files, tables=MODEL_TABLES):
    """Every seed's tables by kind, `seed_files(name)` giving one file per seed: what a pairs
    job reads and an extraction job writes."""
    return {key: seed_files(name) for key, name in tables.items()}


def trained_files(seed_files, tables=MODEL_TABLES):
    """What a training job writes per seed: the weights, the metrics, then the tables."""
    files = model_tables(seed_files, tables)
    return {"models": seed_files("model.pt"), "metrics": files.pop("metrics"), **files}


def run_config(*sections):
    """The config sections a job's outputs record (their hash goes into the provenance)."""
    return {
        **{s: config[s] for s in sections},
        "seed": config["seed"],
        "protocol": config["protocol"],
    }


def measure_settings(**overrides):
    """The d_LLV settings of config['measures'], with per-experiment overrides."""
    settings = {k: config["measures"][k] for k in ("lam", "dist_type", "sum_or_max")}
    settings.update(overrides)
    return settings


def pair_measures():
    """The settings every pairs job passes to compare(): d_LLV settings, num_samples, seed, and
    the alignment options config['measures'] sets (none by default: pipeline.measure_settings).
    """
    return measure_settings(
        num_samples=config["measures"]["num_samples"],
        seed=config["seed"],
        **alignment_settings(config["measures"]),
    )


def training_settings(section, **overrides):
    """config[section]['training'] with the run's protocol: the fields of TrainConfig."""
    return training_settings_of(config, section, **overrides)


def training_priority(width, n_configs=1):
    """Longest jobs first (cost ~ models x width^2): the short ones then fill the cores at the
    end, instead of a long one running alone."""
    return int(width) ** 2 * n_configs // 64


def training_runtime(wildcards, attempt=1, n_configs=1):
    """Minutes for one job of n_configs x n_seeds MLPs, with a margin (a job of 20 seeds at
    width 256 and 15,000 steps is given 50), times the attempt: a job resubmitted after its
    cluster time limit (profile `retries:`) gets longer, and resumes from its checkpoint.
    """
    scale = (
        n_configs * SYNTHETIC["n_seeds"] / 20 * SYNTHETIC["training"]["steps"] / 15000
    )
    return max(5, int(40 * scale * (int(wildcards.W) / 256) ** 2 + 10)) * attempt


def declared_gpus():
    """The run's `gpu` resource (a profile's `resources: [gpu=N]`, `--resources gpu=N`), None
    when undeclared: how many GPUs its training jobs may hold at once."""
    declared = getattr(workflow.global_resources.get("gpu"), "value", None)
    return None if declared is None else int(declared)


# Whether the training jobs run where there are GPUs: as the run declares (a SLURM profile for
# its nodes, whatever the login node has), else as this machine has (training.devices).
GPUS = gpus_planned(declared_gpus())
if GPUS and declared_gpus() is None:
    # a GPU workstation that did not say how many: every visible GPU, one job each at a time
    workflow.global_resources["gpu"] = Resource("gpu", len(visible_gpus()))
if GPUS and not cuda_present():
    logger.info(
        f"gpu={declared_gpus()} declared: training jobs planned for GPUs (cluster nodes with "
        "GPUs); this machine shows none, so locally they would train on the CPU one at a time"
    )
# A local run's GPU jobs each take one GPU of this pool (pipeline/gpu_pool.py).
export_pool(declared_gpus(), visible_gpus())

CONSTRUCTED_K = [c["num_classes"] for c in config["constructed"]["classifiers"]]

SYNTHETIC = config["synthetic"]
SYNTHETIC_SEEDS = list(range(SYNTHETIC["n_seeds"]))
SYNTHETIC_DIR = "synthetic/K{K}/w{W}_g{G}_f{F}"
SYNTHETIC_GPU = uses_gpu(SYNTHETIC["device"], GPUS)


def synthetic_configs():
    """Every (K, width, fix_g, fix_f) the synthetic figures need."""
    return [
        (k, w, v["fix_g"], v["fix_f"])
        for k in SYNTHETIC["class_counts"]
        for v in SYNTHETIC["variants"]
        for w in v["widths"]
    ]


def synthetic_file(name, **wildcards):
    """A file of one synthetic configuration; wildcards not given are left open."""
    fields = {key: wildcards.get(key, f"{{{key}}}") for key in ("K", "W", "G", "F")}
    return out(f"{SYNTHETIC_DIR.format(**fields)}/{name}")


def synthetic_seed_files(name):
    """One file per seed of a configuration (the configuration's wildcards left open)."""
    return [synthetic_file(f"seed{s}/{name}") for s in SYNTHETIC_SEEDS]


def synthetic_model_settings(num_classes, width, seeds=SYNTHETIC_SEEDS, rep_dim=None):
    """SyntheticModelConfig fields shared by the variants of one (K, width)."""
    keys = ("n_train", "n_test", "train_data_seed", "test_data_seed")
    return {
        "num_classes": int(num_classes),
        "width": int(width),
        "seeds": list(seeds),
        "rep_dim": SYNTHETIC["rep_dim"] if rep_dim is None else int(rep_dim),
        **{k: SYNTHETIC[k] for k in keys},
    }


def synthetic_pairs_file(k, w, g, f):
    return synthetic_file("pairs.parquet", K=k, W=w, G=g, F=f)


def bound_figure_pairs():
    """The pairs tables of paper Fig. 16 (right): every variant at the bound's widths."""
    return [
        synthetic_pairs_file(*c)
        for c in synthetic_configs()
        if c[1] in SYNTHETIC["bound_widths"]
    ]


CIFAR = config["cifar10"]
CIFAR_SEEDS = list(range(CIFAR["n_seeds"]))
CIFAR_DIR = "cifar10/fd{M}/seed{S}"
CIFAR_GPU = uses_gpu(CIFAR["device"], GPUS)
CIFAR_FILES = [
    "data_batch_1",
    "data_batch_2",
    "data_batch_3",
    "data_batch_4",
    "data_batch_5",
    "test_batch",
    "batches.meta",
]


def cifar_folder():
    """The cifar-10-batches-py folder the CIFAR rules read."""
    if CIFAR["standin"]:
        return out("cifar10_standin/cifar-10-batches-py")
    if CIFAR["root"]:
        return CIFAR["root"]
    return f"{CIFAR['resources']}/cifar-10-batches-py"


def cifar_data_files():
    return [f"{cifar_folder()}/{name}" for name in CIFAR_FILES]


def cifar_file(name, **wildcards):
    fields = {key: wildcards.get(key, f"{{{key}}}") for key in ("M", "S")}
    return out(f"{CIFAR_DIR.format(**fields)}/{name}")


def cifar_seed_files(name, m="{M}"):
    """One file per seed at embedding dimension m (left open by default)."""
    return [cifar_file(name, M=m, S=s) for s in CIFAR_SEEDS]


AUTHORS = config["authors_models"]
AUTHORS_STANDIN = out("authors_standin")


def authors_available_locally():
    """A copy that needs no download: a stand-in, a configured folder, or a finished download."""
    if AUTHORS["standin"] or AUTHORS["root"]:
        return True
    folder = Path(AUTHORS["resources"])
    return all((folder / n).is_file() for n in read_checksums(AUTHORS_CHECKSUMS))


# enabled: true (download when needed), false, or auto (only when a copy is present:
# `make run-synthetic`, which must work offline)
AUTHORS_ON = AUTHORS["enabled"] is True or (
    AUTHORS["enabled"] == "auto" and authors_available_locally()
)
# the authors' CIFAR-10 fd2 checkpoints: with CIFAR-10 and M = 2 in this run
AUTHORS_CIFAR_ON = AUTHORS_ON and CIFAR["enabled"] and 2 in CIFAR["rep_dims"]

BOUND_BEYOND = config["bound_beyond_m2"]


def branch_targets():
    """What `all` builds: every branch this configuration turns on."""
    branches = [
        (rules.constructed_all, True),
        (rules.synthetic_all, True),
        (rules.cifar10_all, CIFAR["enabled"]),
        (rules.beyond_all, True),
        (rules.roeder_all, config["roeder"]["enabled"]),
        (rules.authors_all, AUTHORS_ON),
        (rules.authors_cifar_all, AUTHORS_CIFAR_ON),
        (rules.bound_beyond_m2, BOUND_BEYOND["enabled"]),
        (rules.distillation_all, config["distillation"]["enabled"]),
        (rules.models_all, True),
        (rules.lm_all, config["lm"]["enabled"]),
        (rules.lm_models_all, LM_MODELS_ON),
    ]
    return [rule.input for rule, on in branches if on]


def check_downloads(needed_rules):
    """Before any job: a needed download that cannot happen (offline, no copy) stops the run,
    naming the key to set; the authors' models left out by `auto` are said so."""
    if "cifar10_download" in needed_rules:
        check_cifar_available(config)
    if "authors_download" in needed_rules:
        check_authors_available(config)
    if "authors_cifar_download" in needed_rules:
        check_authors_cifar_available(config)
    if AUTHORS["enabled"] == "auto" and not AUTHORS_ON:
        logger.info(
            "The authors' models are left out: no copy in "
            f"{AUTHORS['resources']} and authors_models.root is not set (`make authors` "
            "downloads them; `make run` includes them)."
        )
