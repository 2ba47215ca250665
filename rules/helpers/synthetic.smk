# Helpers of rules/synthetic.smk.
SYNTHETIC_VARIANTS = [(v["fix_g"], v["fix_f"]) for v in SYNTHETIC["variants"]]


def synthetic_stacked_widths():
    """Widths at which one job trains every variant together: all widths every variant has on
    a GPU (one bigger stack keeps it busier), up to stack_variants_max_width on a CPU (cheaper
    per model only for narrow nets)."""
    if len(SYNTHETIC_VARIANTS) < 2:
        return []
    common = set.intersection(*(set(v["widths"]) for v in SYNTHETIC["variants"]))
    limit = max(common) if SYNTHETIC_GPU else SYNTHETIC["stack_variants_max_width"]
    return sorted(w for w in common if w <= limit)


def synthetic_variant_files(name):
    """One file per variant and seed at one (K, W) (those wildcards left open), variant-major."""
    return [
        synthetic_file(f"seed{s}/{name}", G=g, F=f)
        for (g, f) in SYNTHETIC_VARIANTS
        for s in SYNTHETIC_SEEDS
    ]


def width_figure_pairs(wildcards):
    """pairs.parquet of the unnormalised variant at every width, for the figure's class counts."""
    ks = [int(k) for k in wildcards.group.split("_")]
    return [
        synthetic_pairs_file(k, w, g, f)
        for (k, w, g, f) in synthetic_configs()
        if k in ks and (g, f) == (0, 0)
    ]


def alignment_pairs():
    """pairs.parquet of the unnormalised variant at every (K, width) of the grid."""
    return [
        synthetic_pairs_file(*c) for c in synthetic_configs() if (c[2], c[3]) == (0, 0)
    ]


WIDTH_GROUPS = ["_".join(map(str, g)) for g in SYNTHETIC["width_figures"]]
