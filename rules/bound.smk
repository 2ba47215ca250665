# Beyond the paper: the bound d_fg <= 2M d_LLV on trained models with M = 3 and 5, and how tight
# it is at every M (M = 2 from the paper's grid).


rule bound_beyond_train:
    output:
        models=bound_beyond_seed_files("model.pt"),
        metrics=bound_beyond_seed_files("metrics.json"),
        embeddings=bound_beyond_seed_files("embeddings.parquet"),
        unembeddings=bound_beyond_seed_files("unembeddings.parquet"),
    log:
        out("logs/bound_beyond_train/M{M}_K{K}_w{W}.log"),
    benchmark:
        out("benchmarks/bound_beyond_train/M{M}_K{K}_w{W}.tsv")
    wildcard_constraints:
        M=r"\d+",
        K=r"\d+",
        W=r"\d+",
    priority: lambda wc: training_priority(wc.W)
    conda:
        "../envs/torch.yaml"
    threads: SYN["threads"]
    resources:
        mem_mb=3000,
        runtime=training_runtime,
        gpu=int(SYN_GPU),
    params:
        model_cfg=lambda wc: synthetic_model_settings(wc.K, wc.W, rep_dim=wc.M),
        variants=[(0.0, 0.0)],
        train_cfg=training_settings("synthetic"),
        device=SYN["device"],
        checkpoint=lambda wc: bound_beyond_file("checkpoint.pt", **wc),
        run_config=lambda wc: {
            "synthetic": SYN,
            "bound_beyond_m2": BB,
            "seed": config["seed"],
            "protocol": config["protocol"],
        },
    script:
        "../workflow/scripts/synthetic_train.py"


rule bound_beyond_pairs:
    input:
        embeddings=bound_beyond_seed_files("embeddings.parquet"),
        unembeddings=bound_beyond_seed_files("unembeddings.parquet"),
        metrics=bound_beyond_seed_files("metrics.json"),
    output:
        bound_beyond_file("pairs.parquet"),
    log:
        out("logs/bound_beyond_pairs/M{M}_K{K}_w{W}.log"),
    benchmark:
        out("benchmarks/bound_beyond_pairs/M{M}_K{K}_w{W}.tsv")
    wildcard_constraints:
        M=r"\d+",
        K=r"\d+",
        W=r"\d+",
    priority: 1000000
    conda:
        "../envs/measures.yaml"
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        seeds=SYN_SEEDS,
        measures=pair_measures(),
    script:
        "../workflow/scripts/synthetic_pairs.py"


rule bound_beyond_figure:
    input:
        lambda wc: bound_beyond_pairs(wc.M),
    output:
        pdf=out("figures/d_llv_vs_d_fg_trained_M{M}.pdf"),
        png=report(
            out("figures/d_llv_vs_d_fg_trained_M{M}.png"),
            caption="../report/bound_beyond_m2.rst",
            category="Beyond the paper",
            subcategory="The bound beyond M = 2",
            labels={"M": "{M}"},
        ),
    log:
        out("logs/bound_beyond_figure_M{M}.log"),
    wildcard_constraints:
        M=r"\d+",
    conda:
        "../envs/figures.yaml"
    params:
        rep_dim=lambda wc: int(wc.M),
        title=lambda wc: f"Trained synthetic models, M = {wc.M}",
    script:
        "../workflow/scripts/synthetic_bound_figure.py"


rule bound_tightness:
    input:
        paper=bound_figure_pairs(),
        beyond=bound_beyond_pairs(),
    output:
        csv=report(
            out("tables/bound_tightness.csv"),
            caption="../report/bound_tightness.rst",
            category="Beyond the paper",
            subcategory="The bound beyond M = 2",
        ),
    log:
        out("logs/bound_tightness.log"),
    conda:
        "../envs/measures.yaml"
    script:
        "../workflow/scripts/bound_tightness.py"


rule bound_beyond_m2:
    input:
        expand(
            out("figures/d_llv_vs_d_fg_trained_M{M}.{ext}"),
            M=sorted({c["rep_dim"] for c in BB["configurations"]}),
            ext=["pdf", "png"],
        ),
        rules.bound_tightness.output,
