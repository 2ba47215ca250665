# Helpers of rules/models.smk.
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
