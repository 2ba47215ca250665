# Synthetic radial data and MLPs: paper Figs. 3 (right), 4, 16 (right) and App. F.7.


rule synthetic_train:
    output:
        models=synthetic_seed_files("model.pt"),
        metrics=synthetic_seed_files("metrics.json"),
        embeddings=synthetic_seed_files("embeddings.parquet"),
        unembeddings=synthetic_seed_files("unembeddings.parquet"),
    log:
        out("logs/synthetic_train/K{K}_w{W}_g{G}_f{F}.log"),
    benchmark:
        out("benchmarks/synthetic_train/K{K}_w{W}_g{G}_f{F}.tsv")
    wildcard_constraints:
        K=r"\d+",
        W=r"\d+",
        G=r"\d+",
        F=r"\d+",
    priority: lambda wc: training_priority(wc.W)
    conda:
        "../envs/torch.yaml"
    threads: SYN["threads"]
    resources:
        mem_mb=3000,
        runtime=training_runtime,
        gpu=int(SYN_GPU),
    params:
        model_cfg=lambda wc: synthetic_model_settings(wc.K, wc.W),
        variants=lambda wc: [(float(wc.G), float(wc.F))],
        train_cfg=training_settings("synthetic"),
        device=SYN["device"],
        checkpoint=lambda wc: synthetic_file("checkpoint.pt", **wc),
        run_config=lambda wc: {
            "synthetic": SYN,
            "seed": config["seed"],
            "protocol": config["protocol"],
        },
    script:
        "../workflow/scripts/synthetic_train.py"


# At narrow widths one job trains every variant (fix_g, fix_f) of a (K, W) in one stack: same
# files, same per-model results as synthetic_train, less overhead per model.
ruleorder: synthetic_train_variants > synthetic_train


rule synthetic_train_variants:
    output:
        models=synthetic_variant_files("model.pt"),
        metrics=synthetic_variant_files("metrics.json"),
        embeddings=synthetic_variant_files("embeddings.parquet"),
        unembeddings=synthetic_variant_files("unembeddings.parquet"),
    log:
        out("logs/synthetic_train/K{K}_w{W}_variants.log"),
    benchmark:
        out("benchmarks/synthetic_train/K{K}_w{W}_variants.tsv")
    wildcard_constraints:
        K=r"\d+",
        W="|".join(map(str, synthetic_stacked_widths())) or r"(?!)",
    priority: lambda wc: training_priority(wc.W, len(SYN_VARIANTS))
    conda:
        "../envs/torch.yaml"
    threads: SYN["threads"]
    resources:
        mem_mb=3000,
        runtime=lambda wc: training_runtime(wc, len(SYN_VARIANTS)),
        gpu=int(SYN_GPU),
    params:
        model_cfg=lambda wc: synthetic_model_settings(wc.K, wc.W),
        variants=[(float(g), float(f)) for g, f in SYN_VARIANTS],
        train_cfg=training_settings("synthetic"),
        device=SYN["device"],
        checkpoint=lambda wc: out(f"synthetic/K{wc.K}/w{wc.W}_variants/checkpoint.pt"),
        run_config=lambda wc: {
            "synthetic": SYN,
            "seed": config["seed"],
            "protocol": config["protocol"],
        },
    script:
        "../workflow/scripts/synthetic_train.py"


rule synthetic_pairs:
    input:
        embeddings=synthetic_seed_files("embeddings.parquet"),
        unembeddings=synthetic_seed_files("unembeddings.parquet"),
        metrics=synthetic_seed_files("metrics.json"),
    output:
        synthetic_file("pairs.parquet"),
    log:
        out("logs/synthetic_pairs/K{K}_w{W}_g{G}_f{F}.log"),
    benchmark:
        out("benchmarks/synthetic_pairs/K{K}_w{W}_g{G}_f{F}.tsv")
    wildcard_constraints:
        K=r"\d+",
        W=r"\d+",
        G=r"\d+",
        F=r"\d+",
    # a few seconds each: run as soon as ready, so they do not pile up in the scheduler's
    # waiting list (which it re-examines on every pass) behind the long training jobs
    priority: 1000000
    conda:
        "../envs/measures.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        seeds=SYN_SEEDS,
        measures=pair_measures(),
    script:
        "../workflow/scripts/synthetic_pairs.py"


rule synthetic_data_figure:
    output:
        pdf=out("figures/synthetic_data_K{K}.pdf"),
        png=report(
            out("figures/synthetic_data_K{K}.png"),
            caption="../report/synthetic_data.rst",
            category="Synthetic models",
            subcategory="Fig. 4: the radial data",
            labels={"K": "{K}"},
        ),
    log:
        out("logs/synthetic_data_figure_K{K}.log"),
    wildcard_constraints:
        K=r"\d+",
    conda:
        "../envs/figures.yaml"
    params:
        n_train=SYN["n_train"],
        seed=SYN["train_data_seed"],
    script:
        "../workflow/scripts/synthetic_data_figure.py"


rule synthetic_width_figure:
    input:
        width_figure_pairs,
    output:
        pdf=out("figures/d_llv_vs_width_K{group}.pdf"),
        png=report(
            out("figures/d_llv_vs_width_K{group}.png"),
            caption="../report/width.rst",
            category="Synthetic models",
            subcategory="Fig. 3 (right), App. F.7: wider is closer",
            labels={"classes": "{group}"},
        ),
        summary=out("tables/d_llv_vs_width_K{group}.csv"),
    log:
        out("logs/synthetic_width_figure_K{group}.log"),
    wildcard_constraints:
        group=r"\d+(_\d+)*",
    conda:
        "../envs/figures.yaml"
    params:
        threshold=SYN["accuracy_threshold"],
        min_seeds=SYN["min_seeds"],
        seeds=SYN_SEEDS,
        title="",
    script:
        "../workflow/scripts/synthetic_width_figure.py"


rule synthetic_bound_figure:
    input:
        bound_figure_pairs(),
    output:
        pdf=out("figures/d_llv_vs_d_fg_trained_synthetic.pdf"),
        png=report(
            out("figures/d_llv_vs_d_fg_trained_synthetic.png"),
            caption="../report/trained_bound.rst",
            category="Synthetic models",
            subcategory="Fig. 16 (right): bound on trained models",
        ),
    log:
        out("logs/synthetic_bound_figure.log"),
    conda:
        "../envs/figures.yaml"
    params:
        rep_dim=SYN["rep_dim"],
        title="Trained synthetic models",
    script:
        "../workflow/scripts/synthetic_bound_figure.py"


rule synthetic_all:
    input:
        [synthetic_pairs_file(*c) for c in synthetic_configs()],
        expand(
            out("figures/synthetic_data_K{K}.{ext}"),
            K=SYN["class_counts"],
            ext=["pdf", "png"],
        ),
        expand(
            out("figures/d_llv_vs_width_K{group}.{ext}"),
            group=["_".join(map(str, g)) for g in SYN["width_figures"]],
            ext=["pdf", "png"],
        ),
        expand(out("figures/d_llv_vs_d_fg_trained_synthetic.{ext}"), ext=["pdf", "png"]),


rule synthetic_measures_figure:
    input:
        lambda wc: width_figure_pairs(wc),
    output:
        pdf=out("figures/measures_vs_width_K{group}.pdf"),
        png=report(
            out("figures/measures_vs_width_K{group}.png"),
            caption="../report/measures_vs_width.rst",
            category="Beyond the paper",
            labels={"K": "{group}"},
        ),
    log:
        out("logs/synthetic_measures_figure_K{group}.log"),
    wildcard_constraints:
        group=r"\d+",
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/synthetic_measures_figure.py"
