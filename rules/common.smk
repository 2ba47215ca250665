# Helpers that several rule files use (paths, settings, figure outputs, the branches a run
# holds). A helper one rule file needs lives in rules/helpers/, named after that file.
from repdist.data.cifar10 import FILES as CIFAR_FILES
from repdist.pipeline import availability, training_jobs
from repdist.pipeline import measure_settings as measures_of
from repdist.pipeline.gpu_plan import apply_gpu_plan
from repdist.pipeline.training_jobs import CIFAR_MODEL_TABLES, MODEL_TABLES
from repdist.training.settings import training_settings as training_settings_of


def out(path):
    """A path under the configured output folder."""
    return f"{OUT}/{path}"


def training_log(kind, job=None):
    """A training job's log, where `repdist progress` looks for it (pipeline.training_jobs)."""
    return out(training_jobs.training_log(kind, job))


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
    return measures_of.measure_settings(config, **overrides)


def pair_measures(snapshots=False):
    """What every pairs job (or training run's snapshots) passes to compare() (measure_settings)."""
    return measures_of.pair_measures(config, snapshots)


def training_settings(section, **overrides):
    """config[section]['training'] with the run's protocol: the fields of TrainConfig."""
    return training_settings_of(config, section, **overrides)


def training_runtime(wildcards, attempt=1, n_configs=1):
    """Minutes for a synthetic training job (pipeline.training_jobs), times the attempt."""
    minutes = training_jobs.synthetic_training_minutes
    return minutes(SYNTHETIC, wildcards.W, attempt, n_configs)


# The GPU plan (pipeline/gpu_plan.py): GPUs as the run declares them (`gpu=N`), else as this
# machine has them (then gpu = its GPUs x gpu_slots_per_gpu); pool slots (gpu_pool.py).
GPU_PLAN = apply_gpu_plan(workflow, config["gpu_slots_per_gpu"], logger.info)
GPUS = GPU_PLAN.gpus  # a rule's `resources: gpu` is int(GPU_PLAN.uses_gpu(its device))
AT_ONCE = 1000000  # the priority of jobs others wait for: stand-ins, tokens, pairs (docs/speed.md)

CONSTRUCTED_K = [c["num_classes"] for c in config["constructed"]["classifiers"]]

SYNTHETIC = config["synthetic"]
SYNTHETIC_SEEDS = list(range(SYNTHETIC["n_seeds"]))
SYNTHETIC_DIR = "synthetic/K{K}/w{W}_g{G}_f{F}"
SYNTHETIC_GPU = GPU_PLAN.uses_gpu(SYNTHETIC["device"])


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


def synthetic_model_settings(num_classes, width, seeds=None, rep_dim=None):
    """SyntheticModelConfig fields shared by the variants of one (K, width)."""
    settings = training_jobs.synthetic_model_settings
    return settings(SYNTHETIC, num_classes, width, seeds, rep_dim)


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
CIFAR_GPU = GPU_PLAN.uses_gpu(CIFAR["device"])


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
# enabled: true (download when needed), false, or auto (with a copy only: run-synthetic, offline)
AUTHORS_ON = availability.authors_on(config)
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
        (rules.logit_distance_all, config["logit_distance"]["enabled"]),
        (rules.models_all, True),
        (rules.lm_all, config["lm"]["enabled"]),
        (rules.lm_models_all, LM_MODELS_ON),
        (rules.prh_all, PRH_ON),
    ]
    return [rule.input for rule, on in branches if on]


def check_downloads(needed_rules):
    """Before any job: a needed download that cannot happen (offline, no copy) stops the run,
    naming the key to set; the authors' models left out by `auto` are said so."""
    note = availability.check_downloads(config, needed_rules)
    if note:
        logger.info(note)
