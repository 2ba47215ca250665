# Beyond the paper: the bound d_fg <= 2M d_LLV on trained models with M = 3 and 5, and how tight
# it is at every M (M = 2 from the paper's grid).
include: "helpers/synthetic_bound.smk"


use rule synthetic_train as bound_beyond_train with:
    output:
        **trained_files(bound_beyond_seed_files),
    log:
        training_log("bound_beyond_train", "M{M}_K{K}_w{W}"),
    benchmark:
        out("benchmarks/bound_beyond_train/M{M}_K{K}_w{W}.tsv")
    params:
        model_cfg=lambda wc: synthetic_model_settings(wc.K, wc.W, rep_dim=wc.M),
        variants=[(0.0, 0.0)],
        checkpoint=lambda wc: bound_beyond_file("checkpoint.pt", **wc),
        run_config=run_config("synthetic", "bound_beyond_m2"),


use rule synthetic_pairs as bound_beyond_pairs with:
    input:
        **model_tables(bound_beyond_seed_files),
    output:
        bound_beyond_file("pairs.parquet"),
    log:
        out("logs/bound_beyond_pairs/M{M}_K{K}_w{W}.log"),
    benchmark:
        out("benchmarks/bound_beyond_pairs/M{M}_K{K}_w{W}.tsv")


use rule synthetic_bound_figure as bound_beyond_figure with:
    input:
        lambda wc: bound_beyond_pairs(wc.M),
    output:
        **figure(
            "d_llv_vs_d_fg_trained_M{M}",
            "bound_beyond_m2",
            "Beyond the paper",
            subcategory="The bound beyond M = 2",
            labels={"M": "{M}"},
        ),
    log:
        out("logs/bound_beyond_figure_M{M}.log"),
    params:
        rep_dim=lambda wc: int(wc.M),
        title=lambda wc: (
            f"Trained synthetic models, M = {wc.M} "
            f"({len(bound_beyond_pairs(wc.M))} configurations)"
        ),


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
        "../workflow/scripts/synthetic_bound_tightness.py"


rule bound_beyond_m2:
    input:
        [figure_files(f"d_llv_vs_d_fg_trained_M{m}") for m in BOUND_BEYOND_DIMS],
        rules.bound_tightness.output,
