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


def width_baseline_configs(wildcards):
    """(K, width, fix_g, fix_f) of the width figure's unnormalised variant, in order."""
    ks = [int(k) for k in wildcards.group.split("_")]
    return [c for c in synthetic_configs() if c[0] in ks and (c[2], c[3]) == (0, 0)]


def width_baseline_models(name):
    """Every seed's `name` of each width_baseline_configs, configuration-major."""

    def files(wildcards):
        return [
            synthetic_file(f"seed{s}/{name}", K=k, W=w, G=g, F=f)
            for (k, w, g, f) in width_baseline_configs(wildcards)
            for s in SYNTHETIC_SEEDS
        ]

    return files


def width_baseline_settings(wildcards):
    """The SyntheticModelConfig fields of each width_baseline_configs."""
    return [
        {**synthetic_model_settings(k, w), "fix_g": float(g), "fix_f": float(f)}
        for (k, w, g, f) in width_baseline_configs(wildcards)
    ]


def alignment_pairs():
    """pairs.parquet of the unnormalised variant at every (K, width) of the grid."""
    return [
        synthetic_pairs_file(*c) for c in synthetic_configs() if (c[2], c[3]) == (0, 0)
    ]


WIDTH_GROUPS = ["_".join(map(str, g)) for g in SYNTHETIC["width_figures"]]
