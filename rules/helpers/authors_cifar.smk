# Helpers of rules/authors_cifar.smk.
from repdist.models.authors import cifar_name

AUTHORS_CIFAR_DIR = "authors/cifar10/fd2/seed{S}"


def authors_cifar_folder():
    if AUTHORS["standin"]:
        return f"{AUTHORS_STANDIN}/cifar10"
    return AUTHORS["cifar_root"] or f"{AUTHORS['resources']}/cifar10"


def authors_cifar_checkpoints(folder=None):
    return [f"{folder or authors_cifar_folder()}/{cifar_name(s)}" for s in CIFAR_SEEDS]


def authors_cifar_files(name):
    return [out(f"{AUTHORS_CIFAR_DIR.format(S=s)}/{name}") for s in CIFAR_SEEDS]


def ours_vs_authors_cifar_inputs(wildcards):
    """Per seed our fd2 files and the authors', and the two pairs tables (the shape of
    ours_vs_authors_inputs, with one configuration)."""
    files = {}
    for name in ("embeddings_test.parquet", "unembeddings.parquet", "metrics.json"):
        key = name.split(".")[0].removesuffix("_test")
        files[f"ours_{key}"] = cifar_seed_files(name, 2)
        files[f"authors_{key}"] = authors_cifar_files(name)
    files["ours_pairs"] = [out("cifar10/fd2/pairs.parquet")]
    files["authors_pairs"] = [out("authors/cifar10/fd2/pairs.parquet")]
    return files


def authors_cifar_figures(theirs_only=False):
    """Their fd2 models drawn: every seed's App. F.5 figure, Fig. 3 (left) for the compared
    seeds, and (unless `theirs_only`: no model of ours needed) our model beside theirs.
    """
    a, b = CIFAR["comparison_seeds"]
    theirs = [
        *[figure_files(f"authors_cifar10_reps_seed{s}") for s in CIFAR_SEEDS],
        figure_files(f"authors_cifar10_embedding_comparison_{a}_{b}"),
    ]
    if theirs_only:
        return theirs
    return [
        *theirs,
        *[figure_files(f"ours_beside_authors_cifar10_seed{s}") for s in (a, b)],
    ]


def cifar_extract_runtime(wildcards, attempt=1):
    """Minutes to extract the authors' CIFAR models (10 x 60,000 images): an hour on a GPU; on a
    CPU about 2.7 h at full size (16 ms an image on 2 cores, docs/results.md), given 6.
    """
    scale = 1 if CIFAR["standin"] or CIFAR_GPU else 6
    return training_jobs.job_minutes(60, [scale], times=attempt)
