# Synthetic radial data and MLPs: paper Figs. 3 (right), 4, 16 (right) and App. F.7.
include: "helpers/synthetic.smk"


rule synthetic_train:
    output:
        **trained_files(synthetic_seed_files),
    log:
        training_log("synthetic_train", "K{K}_w{W}_g{G}_f{F}"),
    benchmark:
        out("benchmarks/synthetic_train/K{K}_w{W}_g{G}_f{F}.tsv")
    priority: lambda wc: training_jobs.training_priority(wc.W)
    conda:
        "../envs/torch.yaml"
    threads: SYNTHETIC["threads"]
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 3000),
        runtime=training_runtime,
        gpu=int(SYNTHETIC_GPU),
    params:
        model_cfg=lambda wc: synthetic_model_settings(wc.K, wc.W),
        variants=lambda wc: [(float(wc.G), float(wc.F))],
        train_cfg=training_settings("synthetic"),
        device=SYNTHETIC["device"],
        cuda_graph=SYNTHETIC["cuda_graph"],
        checkpoint=lambda wc: synthetic_file("checkpoint.pt", **wc),
        run_config=run_config("synthetic"),
    script:
        "../workflow/scripts/synthetic_train.py"


# At narrow widths one job trains every variant (fix_g, fix_f) of a (K, W) in one stack: same
# files, same per-model results as synthetic_train, less overhead per model.
ruleorder: synthetic_train_variants > synthetic_train


use rule synthetic_train as synthetic_train_variants with:
    output:
        **trained_files(synthetic_variant_files),
    log:
        training_log("synthetic_train", "K{K}_w{W}_variants"),
    benchmark:
        out("benchmarks/synthetic_train/K{K}_w{W}_variants.tsv")
    wildcard_constraints:
        W="|".join(map(str, synthetic_stacked_widths())) or r"(?!)",
    priority: lambda wc: training_jobs.training_priority(wc.W, len(SYNTHETIC_VARIANTS))
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 3000),
        runtime=lambda wc, attempt: training_runtime(
            wc, attempt, len(SYNTHETIC_VARIANTS)
        ),
        gpu=int(SYNTHETIC_GPU),
    params:
        variants=[(float(g), float(f)) for g, f in SYNTHETIC_VARIANTS],
        checkpoint=lambda wc: out(f"synthetic/K{wc.K}/w{wc.W}_variants/checkpoint.pt"),


rule synthetic_pairs:
    input:
        **model_tables(synthetic_seed_files),
    output:
        synthetic_file("pairs.parquet"),
    log:
        out("logs/synthetic_pairs/K{K}_w{W}_g{G}_f{F}.log"),
    benchmark:
        out("benchmarks/synthetic_pairs/K{K}_w{W}_g{G}_f{F}.tsv")
    priority: AT_ONCE
    conda:
        "../envs/measures.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 1000),
        runtime=10,
    params:
        seeds=SYNTHETIC_SEEDS,
        measures=pair_measures(),
    script:
        "../workflow/scripts/seed_pairs.py"


rule synthetic_data_figure:
    output:
        **figure(
            "synthetic_data_K{K}",
            "synthetic_data",
            "Synthetic models",
            subcategory="Fig. 4: the radial data",
            labels={"K": "{K}"},
        ),
    log:
        out("logs/synthetic_data_figure_K{K}.log"),
    conda:
        "../envs/figures.yaml"
    params:
        n_train=SYNTHETIC["n_train"],
        seed=SYNTHETIC["train_data_seed"],
    script:
        "../workflow/scripts/synthetic_data_figure.py"


rule synthetic_width_figure:
    input:
        pairs=width_figure_pairs,
        baseline=out("tables/width_baseline_K{group}.csv"),
    output:
        **figure(
            "d_llv_vs_width_K{group}",
            "width",
            "Synthetic models",
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
        threshold=SYNTHETIC["accuracy_threshold"],
        min_seeds=SYNTHETIC["min_seeds"],
        seeds=SYNTHETIC_SEEDS,
        title="",
    script:
        "../workflow/scripts/synthetic_width_figure.py"


rule synthetic_width_baseline:
    input:
        pairs=width_figure_pairs,
        embeddings=width_baseline_models("embeddings.parquet"),
        unembeddings=width_baseline_models("unembeddings.parquet"),
        metrics=width_baseline_models("metrics.json"),
    output:
        out("tables/width_baseline_K{group}.csv"),
    log:
        out("logs/synthetic_width_baseline_K{group}.log"),
    benchmark:
        out("benchmarks/synthetic_width_baseline/K{group}.tsv")
    wildcard_constraints:
        group=r"\d+(_\d+)*",
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 2000),
        runtime=30,
    params:
        model_cfgs=width_baseline_settings,
        threshold=SYNTHETIC["accuracy_threshold"],
        min_seeds=SYNTHETIC["min_seeds"],
        seeds=SYNTHETIC_SEEDS,
        measures=pair_measures(),
        null=pair_measures().get("null"),
        null_pairs=SYNTHETIC["baseline_null_pairs"],
    script:
        "../workflow/scripts/synthetic_width_baseline.py"


rule synthetic_bound_figure:
    input:
        bound_figure_pairs(),
    output:
        **figure(
            "d_llv_vs_d_fg_trained_synthetic",
            "trained_bound",
            "Synthetic models",
            subcategory="Fig. 16 (right): bound on trained models",
        ),
    log:
        out("logs/synthetic_bound_figure.log"),
    conda:
        "../envs/figures.yaml"
    params:
        rep_dim=SYNTHETIC["rep_dim"],
        title=f"Trained synthetic models ({len(bound_figure_pairs())} configurations)",
        marker_size=5,
    script:
        "../workflow/scripts/bound_figure.py"


rule synthetic_measures_figure:
    input:
        width_figure_pairs,
    output:
        **figure(
            "measures_vs_width_K{group}",
            "measures_vs_width",
            "Beyond the paper",
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


rule synthetic_alignment_figure:
    input:
        alignment_pairs(),
    output:
        **figure("prh_alignment", "prh_alignment", "Beyond the paper"),
        table=out("tables/prh_alignment.csv"),
    log:
        out("logs/synthetic_alignment_figure.log"),
    conda:
        "../envs/figures.yaml"
    params:
        models="the synthetic grid (unnormalised models)",
    script:
        "../workflow/scripts/synthetic_alignment_figure.py"


# Beyond the paper: similarity between seeds during training.
rule training_dynamics:
    output:
        **figure("training_dynamics", "training_dynamics", "Beyond the paper"),
        table=out("dynamics/snapshots.parquet"),
    log:
        training_log("training_dynamics"),
    benchmark:
        out("benchmarks/training_dynamics.tsv")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 3000),
        runtime=30,
    params:
        model_cfg={
            **synthetic_model_settings(
                config["dynamics"]["num_classes"],
                config["dynamics"]["width"],
                range(config["dynamics"]["n_seeds"]),
            ),
            "fix_g": 0.0,
            "fix_f": 0.0,
        },
        train_cfg=training_settings("synthetic", checkpoint_every=0),
        snapshots=config["dynamics"]["snapshots"],
        measures=pair_measures(snapshots=True),
    script:
        "../workflow/scripts/synthetic_dynamics.py"


rule synthetic_all:
    input:
        figure_files("prh_alignment"),
        [synthetic_pairs_file(*c) for c in synthetic_configs()],
        [figure_files(f"synthetic_data_K{k}") for k in SYNTHETIC["class_counts"]],
        [figure_files(f"d_llv_vs_width_K{group}") for group in WIDTH_GROUPS],
        figure_files("d_llv_vs_d_fg_trained_synthetic"),
