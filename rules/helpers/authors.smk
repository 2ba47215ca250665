# Helpers of rules/authors.smk.
from repdist.models.authors import CHECKSUMS as AUTHORS_CHECKSUMS
from repdist.models.authors import read_checksums, synthetic_name

AUTHORS_DIR = "authors/synthetic/K{K}/w{W}_g0_f0"
AUTHORS_GROUP = "_".join(map(str, AUTHORS["class_counts"]))


def authors_folder():
    """Where the rules read the authors' checkpoint files."""
    if AUTHORS["standin"]:
        return AUTHORS_STANDIN
    return AUTHORS["root"] or AUTHORS["resources"]


def authors_checksum_file():
    if AUTHORS["standin"]:
        return f"{AUTHORS_STANDIN}/SHA256SUMS.tsv"
    return str(AUTHORS_CHECKSUMS)


def authors_configs():
    return [(k, w) for k in AUTHORS["class_counts"] for w in AUTHORS["widths"]]


def authors_checkpoint(k, w, s, trained=True, folder=None):
    name = synthetic_name(int(k), int(s), int(w), trained=trained)
    return f"{folder or authors_folder()}/{name}"


def authors_file(name, **wildcards):
    fields = {key: wildcards.get(key, f"{{{key}}}") for key in ("K", "W")}
    return out(f"{AUTHORS_DIR.format(**fields)}/{name}")


def authors_seed_files(name, **wildcards):
    return [authors_file(f"seed{s}/{name}", **wildcards) for s in AUTHORS["seeds"]]


def authors_untrained_files():
    """The untrained checkpoints among the listed files of the configured class counts."""
    if AUTHORS["standin"]:
        return [
            authors_checkpoint(k, w, s, False)
            for k, w in authors_configs()
            for s in AUTHORS["seeds"]
        ]
    names = read_checksums(AUTHORS_CHECKSUMS)
    return [
        f"{authors_folder()}/{n}"
        for n in sorted(names)
        if "untrained" in n
        and any(f"_classes{k}_" in n for k in AUTHORS["class_counts"])
    ]


def ours_vs_authors_inputs(wildcards):
    """Per configuration (K, width) and seed, our files and the authors' (configuration-major),
    and per configuration the two pairs tables; experiments.authors.ours_vs_authors reads them back.
    """
    ours, theirs = {}, {}
    for name in ("embeddings.parquet", "unembeddings.parquet", "metrics.json"):
        key = name.split(".")[0]
        ours[key] = [
            synthetic_file(f"seed{s}/{name}", K=k, W=w, G=0, F=0)
            for k, w in authors_configs()
            for s in AUTHORS["seeds"]
        ]
        theirs[key] = [
            f for k, w in authors_configs() for f in authors_seed_files(name, K=k, W=w)
        ]
    return {
        **{f"ours_{k}": v for k, v in ours.items()},
        **{f"authors_{k}": v for k, v in theirs.items()},
        "ours_pairs": [synthetic_pairs_file(k, w, 0, 0) for k, w in authors_configs()],
        "authors_pairs": [
            authors_file("pairs.parquet", K=k, W=w) for k, w in authors_configs()
        ],
    }
