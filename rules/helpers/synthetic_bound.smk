# Helpers of rules/synthetic_bound.smk.
BOUND_BEYOND_DIR = "bound_beyond_m2/M{M}/K{K}/w{W}_g0_f0"


def bound_beyond_configs():
    """(M, K, width) of every model stack the bound beyond M = 2 needs."""
    return [
        (c["rep_dim"], k, w)
        for c in BOUND_BEYOND["configurations"]
        for k in c["class_counts"]
        for w in BOUND_BEYOND["widths"]
    ]


def bound_beyond_file(name, **wildcards):
    fields = {key: wildcards.get(key, f"{{{key}}}") for key in ("M", "K", "W")}
    return out(f"{BOUND_BEYOND_DIR.format(**fields)}/{name}")


def bound_beyond_seed_files(name):
    return [bound_beyond_file(f"seed{s}/{name}") for s in SYNTHETIC_SEEDS]


def bound_beyond_pairs(m=None):
    """pairs.parquet of every configuration beyond M = 2 (of one M if given)."""
    return [
        bound_beyond_file("pairs.parquet", M=mm, K=k, W=w)
        for mm, k, w in bound_beyond_configs()
        if m is None or mm == int(m)
    ]


BOUND_BEYOND_DIMS = sorted({c["rep_dim"] for c in BOUND_BEYOND["configurations"]})
