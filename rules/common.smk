# Helpers shared by all workflow files (output paths, per-experiment settings).


def out(path):
    """A path under the configured output folder."""
    return f"{OUT}/{path}"


def measure_settings(**overrides):
    """The d_LLV settings of config['measures'], with per-experiment overrides."""
    settings = {k: config["measures"][k] for k in ("lam", "dist_type", "sum_or_max")}
    settings.update(overrides)
    return settings


CONSTRUCTED_K = [c["num_classes"] for c in config["constructed"]["classifiers"]]
CONSTRUCTED_NOISE = {
    c["num_classes"]: c["noise_level"] for c in config["constructed"]["classifiers"]
}


SYN = config["synthetic"]
SYN_SEEDS = list(range(SYN["n_seeds"]))
SYN_CONFIG_DIR = "synthetic/K{K}/w{W}_g{G}_f{F}"


def synthetic_configs():
    """Every (K, width, fix_g, fix_f) the synthetic figures need."""
    return [
        (k, w, v["fix_g"], v["fix_f"])
        for k in SYN["class_counts"]
        for v in SYN["variants"]
        for w in v["widths"]
    ]


def synthetic_file(name, **wildcards):
    """A file of one synthetic configuration; wildcards not given are left open."""
    fields = {key: wildcards.get(key, f"{{{key}}}") for key in ("K", "W", "G", "F")}
    return out(f"{SYN_CONFIG_DIR.format(**fields)}/{name}")


def synthetic_seed_files(name):
    """One file per seed of a configuration (the configuration's wildcards left open)."""
    return [synthetic_file(f"seed{s}/{name}") for s in SYN_SEEDS]


SYN_VARIANTS = [(v["fix_g"], v["fix_f"]) for v in SYN["variants"]]


def synthetic_stacked_widths():
    """Widths at which every variant is configured and at most stack_variants_max_width: one
    job trains all their variants together (cheaper per model for narrow nets)."""
    if len(SYN_VARIANTS) < 2:
        return []
    common = set.intersection(*(set(v["widths"]) for v in SYN["variants"]))
    return sorted(w for w in common if w <= SYN["stack_variants_max_width"])


def synthetic_variant_files(name):
    """One file per variant and seed at one (K, W) (those wildcards left open), variant-major."""
    return [
        synthetic_file(f"seed{s}/{name}", G=g, F=f)
        for (g, f) in SYN_VARIANTS
        for s in SYN_SEEDS
    ]


def synthetic_model_settings(wildcards):
    """SyntheticModelConfig fields shared by the variants of one (K, W)."""
    return {
        "num_classes": int(wildcards.K),
        "width": int(wildcards.W),
        "seeds": SYN_SEEDS,
        "rep_dim": SYN["rep_dim"],
        "n_train": SYN["n_train"],
        "n_test": SYN["n_test"],
        "train_data_seed": SYN["train_data_seed"],
        "test_data_seed": SYN["test_data_seed"],
    }


def training_priority(width, n_configs=1):
    """Longest jobs first (cost ~ models x width^2): the short ones then fill the cores at the
    end, instead of a long one running alone."""
    return int(width) ** 2 * n_configs // 64


def synthetic_pairs_file(k, w, g, f):
    return synthetic_file("pairs.parquet", K=k, W=w, G=g, F=f)


def width_figure_pairs(wildcards):
    """pairs.parquet of the unnormalised variant at every width, for the figure's class counts."""
    ks = [int(k) for k in wildcards.group.split("_")]
    return [
        synthetic_pairs_file(k, w, g, f)
        for (k, w, g, f) in synthetic_configs()
        if k in ks and (g, f) == (0, 0)
    ]


def bound_figure_pairs():
    return [
        synthetic_pairs_file(*c)
        for c in synthetic_configs()
        if c[1] in SYN["bound_widths"]
    ]


def training_runtime(wildcards, n_configs=1):
    """Minutes for one job of n_configs x 20 seeds x 15,000 steps on one core, with a margin
    (one configuration at w=256 takes ~11)."""
    scale = n_configs * SYN["n_seeds"] / 20 * SYN["training"]["steps"] / 15000
    return max(5, int(40 * scale * (int(wildcards.W) / 256) ** 2 + 10))


CIF = config["cifar10"]
CIF_SEEDS = list(range(CIF["n_seeds"]))
CIF_DIR = "cifar10/fd{M}/seed{S}"
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
    if CIF["standin"]:
        return out("cifar10_standin/cifar-10-batches-py")
    if CIF["root"]:
        return CIF["root"]
    return f"{CIF['resources']}/cifar-10-batches-py"


def cifar_data_files():
    return [f"{cifar_folder()}/{name}" for name in CIFAR_FILES]


def cifar_file(name, **wildcards):
    fields = {key: wildcards.get(key, f"{{{key}}}") for key in ("M", "S")}
    return out(f"{CIF_DIR.format(**fields)}/{name}")


def cifar_seed_files(name, m):
    return [cifar_file(name, M=m, S=s) for s in CIF_SEEDS]


def cifar_uses_gpu():
    return 0 if CIF["device"] == "cpu" else 1


def cifar_train_runtime(wildcards):
    """Minutes for one model: ~6 on an H100 at full scale; generous for slower GPUs."""
    return max(
        10, int(60 * CIF["training"]["steps"] / 20000 * (CIF["base_width"] / 64) ** 2)
    )
