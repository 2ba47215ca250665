# Helpers shared by all workflow files (output paths, per-experiment settings).
from repdist.authors import CHECKSUMS as AUTHORS_CHECKSUMS
from repdist.authors import cifar_name, read_checksums, synthetic_name
from repdist.devices import uses_gpu


def out(path):
    """A path under the configured output folder."""
    return f"{OUT}/{path}"


def measure_settings(**overrides):
    """The d_LLV settings of config['measures'], with per-experiment overrides."""
    settings = {k: config["measures"][k] for k in ("lam", "dist_type", "sum_or_max")}
    settings.update(overrides)
    return settings


def pair_measures():
    """The settings every pairs job passes to compare(): d_LLV settings, num_samples, seed."""
    return measure_settings(
        num_samples=config["measures"]["num_samples"], seed=config["seed"]
    )


def training_settings(section, **overrides):
    """config[section]['training'] with the run's protocol: the fields of TrainConfig."""
    return {**config[section]["training"], "protocol": config["protocol"], **overrides}


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


SYN_GPU = uses_gpu(SYN["device"])


def synthetic_stacked_widths():
    """Widths at which one job trains every variant together: all widths every variant has on
    a GPU (one bigger stack keeps it busier), up to stack_variants_max_width on a CPU (cheaper
    per model only for narrow nets)."""
    if len(SYN_VARIANTS) < 2:
        return []
    common = set.intersection(*(set(v["widths"]) for v in SYN["variants"]))
    limit = max(common) if SYN_GPU else SYN["stack_variants_max_width"]
    return sorted(w for w in common if w <= limit)


def synthetic_variant_files(name):
    """One file per variant and seed at one (K, W) (those wildcards left open), variant-major."""
    return [
        synthetic_file(f"seed{s}/{name}", G=g, F=f)
        for (g, f) in SYN_VARIANTS
        for s in SYN_SEEDS
    ]


def synthetic_model_settings(num_classes, width, seeds=SYN_SEEDS, rep_dim=None):
    """SyntheticModelConfig fields shared by the variants of one (K, width)."""
    return {
        "num_classes": int(num_classes),
        "width": int(width),
        "seeds": list(seeds),
        "rep_dim": SYN["rep_dim"] if rep_dim is None else int(rep_dim),
        **{
            k: SYN[k]
            for k in ("n_train", "n_test", "train_data_seed", "test_data_seed")
        },
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


def cifar_seed_files(name, m="{M}"):
    """One file per seed at embedding dimension m (left open by default)."""
    return [cifar_file(name, M=m, S=s) for s in CIF_SEEDS]


CIF_GPU = uses_gpu(CIF["device"])


def cifar_seeds_per_job():
    """Seeds one CIFAR training job trains together: all of them on a GPU, one on a CPU."""
    if CIF["seeds_per_job"] == "auto":
        return len(CIF_SEEDS) if CIF_GPU else 1
    return CIF["seeds_per_job"]


def cifar_train_runtime(wildcards):
    """Minutes for one model: ~6 on an H100 at full scale; generous for slower GPUs."""
    return max(
        10, int(60 * CIF["training"]["steps"] / 20000 * (CIF["base_width"] / 64) ** 2)
    )


AUT = config["authors_models"]


def authors_available_locally():
    """A copy that needs no download: a stand-in, a configured folder, or a finished download."""
    if AUT["standin"] or AUT["root"]:
        return True
    folder = Path(AUT["resources"])
    return all((folder / n).is_file() for n in read_checksums(AUTHORS_CHECKSUMS))


# enabled: true (download when needed), false, or auto (only when a copy is present:
# `make run-synthetic`, which must work offline)
AUTHORS_ON = AUT["enabled"] is True or (
    AUT["enabled"] == "auto" and authors_available_locally()
)


def cifar_train_params(seeds):
    """params of a CIFAR training job: its seeds' model settings and the training settings."""
    keys = ("base_width", "g_width", "bn_momentum", "device", "bf16", "channels_last")
    return dict(
        model_cfg=lambda wc: {
            "rep_dim": int(wc.M),
            "seeds": seeds(wc),
            "eval_batch_size": CIF["eval_batch_size"],
            **{k: CIF[k] for k in keys},
        },
        train_cfg=training_settings("cifar10"),
        folder=lambda wc, input: str(Path(input[0]).parent),
        run_config=lambda wc: {
            "cifar10": CIF,
            "seed": config["seed"],
            "protocol": config["protocol"],
        },
    )


AUT_DIR = "authors/synthetic/K{K}/w{W}_g0_f0"


AUT_STANDIN = out("authors_standin")


def authors_folder():
    """Where the rules read the authors' checkpoint files."""
    if AUT["standin"]:
        return AUT_STANDIN
    return AUT["root"] or AUT["resources"]


def authors_checksum_file():
    if AUT["standin"]:
        return f"{AUT_STANDIN}/SHA256SUMS.tsv"
    return str(AUTHORS_CHECKSUMS)


def authors_configs():
    return [(k, w) for k in AUT["class_counts"] for w in AUT["widths"]]


def authors_checkpoint(k, w, s, trained=True, folder=None):
    name = synthetic_name(int(k), int(s), int(w), trained=trained)
    return f"{folder or authors_folder()}/{name}"


def authors_seed_files(name, **wildcards):
    fields = {key: wildcards.get(key, f"{{{key}}}") for key in ("K", "W")}
    return [out(f"{AUT_DIR.format(**fields)}/seed{s}/{name}") for s in AUT["seeds"]]


def authors_untrained_files():
    """The untrained checkpoints among the listed files of the configured class counts."""
    if AUT["standin"]:
        return [
            authors_checkpoint(k, w, s, False)
            for k, w in authors_configs()
            for s in AUT["seeds"]
        ]
    names = read_checksums(AUTHORS_CHECKSUMS)
    return [
        f"{authors_folder()}/{n}"
        for n in sorted(names)
        if "untrained" in n and any(f"_classes{k}_" in n for k in AUT["class_counts"])
    ]


def ours_vs_authors_inputs(wildcards):
    files = {}
    for k, w in authors_configs():
        ours = [synthetic_file(f"seed{s}/", K=k, W=w, G=0, F=0) for s in AUT["seeds"]]
        theirs = [out(f"{AUT_DIR.format(K=k, W=w)}/seed{s}/") for s in AUT["seeds"]]
        for name in ("embeddings.parquet", "unembeddings.parquet", "metrics.json"):
            files[f"ours_{k}_{w}_{name}"] = [f + name for f in ours]
            files[f"authors_{k}_{w}_{name}"] = [f + name for f in theirs]
        files[f"ours_pairs_{k}_{w}"] = synthetic_pairs_file(k, w, 0, 0)
        files[f"authors_pairs_{k}_{w}"] = out(
            f"{AUT_DIR.format(K=k, W=w)}/pairs.parquet"
        )
    return files


AUTHORS_GROUP = "_".join(map(str, AUT["class_counts"]))


BB = config["bound_beyond_m2"]
BB_DIR = "bound_beyond_m2/M{M}/K{K}/w{W}_g0_f0"


def bound_beyond_configs():
    """(M, K, width) of every model stack the bound beyond M = 2 needs."""
    return [
        (c["rep_dim"], k, w)
        for c in BB["configurations"]
        for k in c["class_counts"]
        for w in BB["widths"]
    ]


def bound_beyond_file(name, **wildcards):
    fields = {key: wildcards.get(key, f"{{{key}}}") for key in ("M", "K", "W")}
    return out(f"{BB_DIR.format(**fields)}/{name}")


def bound_beyond_seed_files(name):
    return [bound_beyond_file(f"seed{s}/{name}") for s in SYN_SEEDS]


def bound_beyond_pairs(m=None):
    """pairs.parquet of every configuration beyond M = 2 (of one M if given)."""
    return [
        bound_beyond_file("pairs.parquet", M=mm, K=k, W=w)
        for mm, k, w in bound_beyond_configs()
        if m is None or mm == int(m)
    ]


MODEL_GROUPS = config.get("models") or {}


def model_group_paths(group):
    """The models of a `models:` group: each entry a path, or a glob expanded now (sorted)."""
    import glob

    paths = []
    for entry in MODEL_GROUPS[group]:
        magic = glob.has_magic(entry)
        matches = sorted(glob.glob(entry)) if magic else [entry]
        if magic and not matches:
            raise ValueError(f"config key 'models.{group}': {entry!r} matches no file")
        paths += matches
    return paths


def model_group_inputs(wildcards):
    """Input files of a group: a folder's two parquet files (so that this run's own models are
    made first), a file as it is."""
    files = []
    for path in model_group_paths(wildcards.group):
        if Path(path).suffix in (".npz", ".pt", ".pth"):
            files.append(path)
        else:
            files += [f"{path}/embeddings.parquet", f"{path}/unembeddings.parquet"]
    return files


# the authors' CIFAR-10 fd2 checkpoints: with CIFAR-10 and M = 2 in this run
AUT_CIFAR_ON = AUTHORS_ON and CIF["enabled"] and 2 in CIF["rep_dims"]
AUT_CIFAR_DIR = "authors/cifar10/fd2/seed{S}"


def authors_cifar_folder():
    if AUT["standin"]:
        return f"{AUT_STANDIN}/cifar10"
    return AUT["cifar_root"] or f"{AUT['resources']}/cifar10"


def authors_cifar_checkpoints(folder=None):
    return [f"{folder or authors_cifar_folder()}/{cifar_name(s)}" for s in CIF_SEEDS]


def authors_cifar_files(name):
    return [out(f"{AUT_CIFAR_DIR.format(S=s)}/{name}") for s in CIF_SEEDS]


def ours_vs_authors_cifar_inputs(wildcards):
    files = {}
    for name in ("embeddings_test.parquet", "unembeddings.parquet", "metrics.json"):
        files[f"ours_{name}"] = cifar_seed_files(name, 2)
        files[f"authors_{name}"] = authors_cifar_files(name)
    files["ours_pairs"] = out("cifar10/fd2/pairs.parquet")
    files["authors_pairs"] = out("authors/cifar10/fd2/pairs.parquet")
    return files
