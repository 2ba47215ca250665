"""Checks across configuration keys that a JSON schema cannot express, one function a section.
The Snakefile runs them after validation, so an impossible combination stops it before any job."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..data.cifar10 import missing_files
from ..models.lm_standins import StandinSpec
from .config_errors import ConfigError, need
from .prh_sources import check_prh
from .lm_model_sources import check_shared_tokenizer, check_sources, lm_models

REP_DIM_CONSTRUCTED = 2  # the hand-built models live in 2-D (paper Table 1, Fig. 16 left)
CIFAR_CLASSES = 10
CIFAR_TEST_IMAGES = 10_000
CIFAR_TRAIN_IMAGES = 50_000
DIGITS_IMAGES = 1797  # scikit-learn's load_digits (data/digits.py)

Config = Mapping[str, Any]
# the files of lm_models/ beside the models' folders (rules/lm.smk)
LM_MODELS_FILES = ("contexts.npz", "pairs.parquet", "layers.parquet")

# Keys config.yaml no longer holds, and why (docs/gpu.md, "Options to be timed").
RECORD = "benchmarks/records/nvidia-h200-2026-11-27"
UNTIMED = ("no GPU record has decided this option yet, so it is no config key; "
           "make gpu-check times it (docs/gpu.md, \"Options to be timed\")")
REMOVED_KEYS = {
    ("cifar10", "bf16"): f"removed: {RECORD} timed bf16 at 0.85x the float32 step, and its "
                         "models moved further from float32 than a new seed does",
    ("cifar10", "stack"): f"removed: {RECORD} timed stack: streams at 0.30x the grouped "
                          "stack, now the only one",
    ("cifar10", "fp16"): UNTIMED,
    ("cifar10", "compile"): UNTIMED,
    ("cifar10", "cudnn_benchmark"): UNTIMED,
    ("logit_distance", "cifar100", "stack"): (
        "the models run one after another; no GPU has timed vmap yet, so it is no config "
        "key (python benchmarks/follow_up_stack.py --device cuda times it; docs/gpu.md)"),
}


def need_labels(k: int, m: int, key: str, why: str = "") -> None:
    """m_SVD needs K - 2 >= M labels besides the pivot and the left-out one (paper Def. 4.6)."""
    need(k - 2 >= m, key, f"d_SVD needs K-2 >= M = {m} labels{why}, got K = {k}")


def need_inputs(num_samples: int, m: int, inputs: int, key: str, where: str) -> None:
    """d_LLV draws num_samples candidate sets of M + 1 distinct inputs (paper Def. 4.4)."""
    need(num_samples * (m + 1) <= inputs, key,
         f"num_samples*(M+1) = {num_samples * (m + 1)} exceeds the {inputs} {where}")


def check_removed_keys(config: Config) -> None:
    """Raise ConfigError naming every key of REMOVED_KEYS that `config` sets, and why; run
    before validation, which would only call such a key unexpected."""
    found = [(".".join(path), why) for path, why in REMOVED_KEYS.items() if _sets(config, path)]
    if found:
        raise ConfigError("\n".join(f"config key '{key}': {why}; delete the key"
                                     for key, why in found))


def _sets(config: Config, path: tuple[str, ...]) -> bool:
    node: Any = config
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def check_config(config: Config) -> None:
    """Raise ConfigError naming the first impossible key combination."""
    for check in (check_kl_table, check_constructed, check_synthetic, check_cifar10,
                  check_authors_models, check_bound_beyond_m2, check_dynamics,
                  check_roeder, check_roeder_words, check_roeder_cpc, check_distillation,
                  check_logit_distance, check_logit_cifar100, check_lm,
                  check_lm_models, check_prh):
        check(config)


def check_kl_table(config: Config) -> None:
    kl = config["kl_table"]
    k = kl["num_classes"]
    need(sorted(kl["permutation"]) == list(range(k)), "kl_table.permutation",
         f"must be a permutation of 0..{k - 1} (kl_table.num_classes = {k}), "
         f"got {kl['permutation']}")
    need_labels(k, REP_DIM_CONSTRUCTED, "kl_table.num_classes")
    need_inputs(kl["num_samples"], REP_DIM_CONSTRUCTED, k * kl["n_per_class"],
                "kl_table.num_samples", "inputs (num_classes x n_per_class)")


def check_constructed(config: Config) -> None:
    con = config["constructed"]
    counts = [c["num_classes"] for c in con["classifiers"]]
    need(len(set(counts)) == len(counts), "constructed.classifiers",
         f"each num_classes may appear once, got {counts}")
    smallest = min(counts)
    need_inputs(con["num_samples"], REP_DIM_CONSTRUCTED, smallest * con["n_per_class"],
                "constructed.num_samples", f"inputs of the {smallest}-class model")


def check_synthetic(config: Config) -> None:
    syn = config["synthetic"]
    m = syn["rep_dim"]
    for k in syn["class_counts"]:
        need_labels(k, m, "synthetic.class_counts", " (synthetic.rep_dim)")
    need_inputs(config["measures"]["num_samples"], m, syn["n_test"], "measures.num_samples",
                "test inputs (synthetic.n_test)")
    pairs = [(v["fix_g"], v["fix_f"]) for v in syn["variants"]]
    need(len(set(pairs)) == len(pairs), "synthetic.variants",
         f"each (fix_g, fix_f) may appear once, got {pairs}")
    need((0, 0) in pairs, "synthetic.variants",
         "the width figures need the unnormalised variant fix_g = fix_f = 0")
    for group in syn["width_figures"]:
        missing = sorted(set(group) - set(syn["class_counts"]))
        need(not missing, "synthetic.width_figures",
             f"class counts {missing} are not in synthetic.class_counts")
    need(syn["min_seeds"] <= syn["n_seeds"], "synthetic.min_seeds",
         f"{syn['min_seeds']} exceeds synthetic.n_seeds = {syn['n_seeds']}: no width could "
         "qualify")


def check_cifar10(config: Config) -> None:
    cif = config["cifar10"]
    if not cif["enabled"]:
        return
    for m in cif["rep_dims"]:
        need_labels(CIFAR_CLASSES, m, "cifar10.rep_dims")
    seeds = cif["comparison_seeds"]
    need(max(seeds) < cif["n_seeds"] and len(set(seeds)) == 2, "cifar10.comparison_seeds",
         f"need two different seeds below cifar10.n_seeds = {cif['n_seeds']}")
    n_test = cif["standin_test"] if cif["standin"] else CIFAR_TEST_IMAGES
    where = "CIFAR test images" + (" (cifar10.standin_test)" if cif["standin"] else "")
    need_inputs(config["measures"]["num_samples"], max(cif["rep_dims"]), n_test,
                "measures.num_samples", where)
    if cif["root"] and not cif["standin"]:
        missing = missing_files(cif["root"])
        need(not missing, "cifar10.root",
             f"{cif['root']} lacks {', '.join(missing)}: point it at a complete "
             "cifar-10-batches-py folder, or set it to null to download")
    if cif["seeds_per_job"] != "auto":
        need(cif["seeds_per_job"] in (1, cif["n_seeds"]), "cifar10.seeds_per_job",
             f"must be auto, 1 or cifar10.n_seeds = {cif['n_seeds']} (one job per seed or all "
             f"seeds of an M in one job), got {cif['seeds_per_job']}")
    need(not (cif["stack_across_m"] and cif["seeds_per_job"] == 1 and cif["n_seeds"] > 1),
         "cifar10.stack_across_m", "true trains every seed of every M in one job, "
         "cifar10.seeds_per_job: 1 one seed a job: set one of them")


def check_authors_models(config: Config) -> None:
    aut, syn = config["authors_models"], config["synthetic"]
    if aut["enabled"] is False:
        return
    unnormalised = next(v["widths"] for v in syn["variants"]
                        if (v["fix_g"], v["fix_f"]) == (0, 0))
    need(set(aut["class_counts"]) <= set(syn["class_counts"]), "authors_models.class_counts",
         f"{sorted(set(aut['class_counts']) - set(syn['class_counts']))} are not in "
         "synthetic.class_counts: our models of those classes are needed beside theirs")
    need(set(aut["widths"]) <= set(unnormalised), "authors_models.widths",
         f"{sorted(set(aut['widths']) - set(unnormalised))} are not widths of the synthetic "
         "variant (fix_g, fix_f) = (0, 0): our models of those widths are needed")
    need(max(aut["seeds"]) < syn["n_seeds"], "authors_models.seeds",
         f"seed {max(aut['seeds'])} is not trained here (synthetic.n_seeds = {syn['n_seeds']})")
    need(aut["min_seeds"] <= len(aut["seeds"]), "authors_models.min_seeds",
         f"{aut['min_seeds']} exceeds the {len(aut['seeds'])} authors' seeds compared")


def check_bound_beyond_m2(config: Config) -> None:
    beyond, n_test = config["bound_beyond_m2"], config["synthetic"]["n_test"]
    if not beyond["enabled"]:
        return
    key = "bound_beyond_m2.configurations"
    for c in beyond["configurations"]:
        m = c["rep_dim"]
        for k in c["class_counts"]:
            need_labels(k, m, key)
        need_inputs(config["measures"]["num_samples"], m, n_test, key,
                    f"test inputs at M = {m} (synthetic.n_test)")


def check_dynamics(config: Config) -> None:
    dyn, syn = config["dynamics"], config["synthetic"]
    steps = syn["training"]["steps"]
    need(max(dyn["snapshots"]) <= steps, "dynamics.snapshots",
         f"a snapshot after step {max(dyn['snapshots'])} never happens: training runs "
         f"{steps} steps (synthetic.training.steps)")
    need_labels(dyn["num_classes"], syn["rep_dim"], "dynamics.num_classes")


def check_roeder(config: Config) -> None:
    roe = config["roeder"]
    if not roe["enabled"]:
        return
    need_labels(roe["num_classes"], roe["rep_dim"], "roeder.num_classes", " (roeder.rep_dim)")
    need_inputs(config["measures"]["num_samples"], roe["rep_dim"], roe["n_test"],
                "measures.num_samples", "test inputs (roeder.n_test)")
    noise = [v["noise_dims"] for v in roe["variants"]]
    need(len(set(noise)) == len(noise), "roeder.variants",
         f"each noise_dims may appear once, got {noise}")
    seeds = roe["fit_seeds"]
    need(max(seeds) < roe["n_seeds"] and len(set(seeds)) == 2, "roeder.fit_seeds",
         f"need two different seeds below roeder.n_seeds = {roe['n_seeds']}")


def check_roeder_words(config: Config) -> None:
    """Roeder et al.'s Fig. 1: f~ and g~ have M + 1 coordinates (the bias folded in), so the
    vocabulary needs M + 3 words and the held-out contexts d_LLV's sets of M + 2."""
    words = config["roeder"]["words"]
    if not words["enabled"]:
        return
    width = words["rep_dim"] + 1
    need_labels(words["vocabulary"], width, "roeder.words.vocabulary",
                " (roeder.words.rep_dim + 1: the bias folded in)")
    need_inputs(config["measures"]["num_samples"], width, words["n_test"],
                "measures.num_samples", "held-out contexts (roeder.words.n_test)")
    seeds = words["fit_seeds"]
    need(max(seeds) < words["n_seeds"] and len(set(seeds)) == 2, "roeder.words.fit_seeds",
         f"need two different seeds below roeder.words.n_seeds = {words['n_seeds']}, "
         f"got {seeds}")
    shown = words["shown"]
    need(not isinstance(shown, int) or shown < words["vocabulary"], "roeder.words.shown",
         f"{shown} words cannot be drawn from a vocabulary of {words['vocabulary']} "
         "(<unk> included)")
    corpus = words["corpus"]
    need(corpus == "stdlib" or Path(corpus).expanduser().is_file(), "roeder.words.corpus",
         f"{corpus!r} is neither 'stdlib' nor a text file")
# Roeder et al.'s Fig. 3 images: (height, width), training pool, test set (0: drawn from the pool)
CPC_IMAGES = {"cifar10": ((32, 32), CIFAR_TRAIN_IMAGES, CIFAR_TEST_IMAGES),
              "digits": ((8, 8), DIGITS_IMAGES, 0)}


def check_roeder_cpc(config: Config) -> None:
    roe, cif = config["roeder"], config["cifar10"]
    cpc = roe["cpc"]
    if not (roe["enabled"] and cpc["enabled"]):
        return
    (height, width), pool, test = CPC_IMAGES[cpc["dataset"]]
    if cpc["dataset"] == "cifar10" and cif["standin"]:
        pool, test = cif["standin_train"], cif["standin_test"]
    h, w = cpc["patch"]
    need(h <= height // 2 and w <= width, "roeder.cpc.patch",
         f"a {h} x {w} patch does not fit in half of a {height} x {width} {cpc['dataset']} image")
    need(cpc["n_seeds"] % 2 == 0, "roeder.cpc.n_seeds",
         f"the pairs (0, 1), (2, 3) ... need an even number of seeds, got {cpc['n_seeds']}")
    need_labels(cpc["n_test"], cpc["rep_dim"], "roeder.cpc.n_test",
                " (the held-out bottom patches are the labels; roeder.cpc.rep_dim)")
    if test:
        need(cpc["n_test"] <= test, "roeder.cpc.n_test",
             f"{cpc['n_test']} exceeds the {test} test images of {cpc['dataset']}")
        rest = pool - cpc["n_validation"]
    else:
        rest = pool - cpc["n_validation"] - cpc["n_test"]
    smallest = int(round(min(cpc["data_fractions"]) * max(rest, 0)))
    batch = cpc["training"]["batch_size"]
    need(smallest >= batch, "roeder.cpc.data_fractions",
         f"the smallest share leaves {smallest} training images of {cpc['dataset']} (after "
         f"{cpc['n_validation']} for validation), fewer than a batch "
         f"(roeder.cpc.training.batch_size = {batch})")


def check_distillation(config: Config) -> None:
    dist, syn = config["distillation"], config["synthetic"]
    if not dist["enabled"]:
        return
    # an overlay with fewer synthetic seeds narrows them first (pipeline/overlays.py)
    need(min(dist["teacher_seeds"]) < syn["n_seeds"], "distillation.teacher_seeds",
         f"no teacher seed of {dist['teacher_seeds']} is trained: synthetic.n_seeds is "
         f"{syn['n_seeds']} (seeds 0..{syn['n_seeds'] - 1})")
    for k in dist["class_counts"]:
        need_labels(k, syn["rep_dim"], "distillation.class_counts")


def check_logit_distance(config: Config) -> None:
    """The follow-up's spirals: each split must hold a batch and the M + 1 points m_CCA needs."""
    ld = config["logit_distance"]
    if not ld["enabled"]:
        return
    spirals = ld["spirals"]
    k, m = spirals["data"]["n_labels"], spirals["model"]["rep_dim"]
    need(k - 1 >= m, "logit_distance.spirals.model.rep_dim",
         f"d_rep needs K - 1 >= M labels besides a pivot, got K = {k}, M = {m}")
    points = k * spirals["data"]["n_spirals"] * spirals["data"]["n_per_arm"]
    need(points // 4 > m + 1 and points // 4 >= k, "logit_distance.spirals.data.n_per_arm",
         f"{points} points leave {points // 4} in a test quarter: too few for {k} labels")
    sub = ld["sub"]
    if not sub["enabled"]:
        return
    need(not (sub["standin"] and sub["features"]), "logit_distance.sub.standin",
         "give SUB's features file or the stand-in, not both")
    need(not sub["features"] or Path(sub["features"]).is_file(), "logit_distance.sub.features",
         f"no file at {sub['features']!r}: SUB's DINOv2-base features as their "
         "dsets/preprocess_sub.py writes them (data/SUB_dinov2_embeddings.pt), or leave it "
         "empty to make them here from logit_distance.sub.images (the hub dataset "
         "Jessica-bader/SUB or a folder of its parquet files) by logit_distance.sub.encoder")
    need(sub["birds"] - 1 >= sub["model"]["rep_dim"], "logit_distance.sub.model.rep_dim",
         f"d_rep needs K - 1 >= M labels besides a pivot, got K = {sub['birds']}, "
         f"M = {sub['model']['rep_dim']}")


def check_logit_cifar100(config: Config) -> None:
    """The follow-up's CIFAR-100: ImageNet's weights fit only a ResNet-50 of width 64."""
    ld = config["logit_distance"]
    cifar100 = ld["cifar100"]
    if not (ld["enabled"] and cifar100["enabled"]):
        return
    width = cifar100["width"]
    need(width == 64 or not cifar100["imagenet_weights"], "logit_distance.cifar100.width",
         f"ImageNet's weights (logit_distance.cifar100.imagenet_weights) are torchvision's "
         f"ResNet-50 at width 64, got {width}: set the width to 64 or imagenet_weights to null")


def check_lm(config: Config) -> None:
    """The language models' seeds (lm:)."""
    lm = config["lm"]
    if not lm["enabled"]:
        return
    data, model = lm["data"], lm["model"]
    need(model["width"] % model["heads"] == 0, "lm.model.heads",
         f"must divide lm.model.width = {model['width']}, got {model['heads']}")
    need_labels(data["vocab_size"], model["width"], "lm.data.vocab_size", " (lm.model.width)")
    per_context = data["context"] if lm["positions"] == "all" else 1
    need_inputs(lm["num_samples"], model["width"], data["eval_contexts"] * per_context,
                "lm.num_samples", f"f rows (lm.data.eval_contexts x {per_context} position(s))")
    train = data["train_contexts"]
    need(train == 0 or train >= lm["training"]["batch_size"], "lm.data.train_contexts",
         f"{train} windows cannot fill a batch of lm.training.batch_size = "
         f"{lm['training']['batch_size']}")


def check_lm_models(config: Config) -> None:
    """The outside language models (lm.models), their sources and tokenizer included."""
    models = config["lm"].get("models") or {}
    if not models:
        return
    need(len(models) >= 2, "lm.models",
         f"models are compared in pairs: name at least two, got {len(models)} ({list(models)})")
    taken = sorted(set(models) & set(LM_MODELS_FILES))
    need(not taken, "lm.models", f"{taken} name(s) files of lm_models/: choose other names")
    for name, entry in models.items():
        spec = StandinSpec(**entry["standin"]) if entry.get("standin") else None
        need(spec is None or spec.width % spec.heads == 0, f"lm.models.{name}.standin.heads",
             f"must divide the stand-in's width {spec and spec.width}, got {spec and spec.heads}")
    entries = lm_models(config)
    check_sources(entries)
    check_shared_tokenizer(entries)
