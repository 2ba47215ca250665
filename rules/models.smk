# Beyond the paper: the `models:` groups of the config, models this pipeline did not train,
# compared pair by pair with every measure (what `repdist compare` does), with a bound figure
# and a measures figure per group.
include: "helpers/models.smk"


rule models_pairs:
    input:
        model_group_inputs,
    output:
        out("models/{group}/pairs.parquet"),
    log:
        out("logs/models_pairs/{group}.log"),
    benchmark:
        out("benchmarks/models_pairs/{group}.tsv")
    conda:
        "../envs/measures.yaml"
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 8000),
        runtime=60,
    params:
        paths=lambda wc: model_group_paths(wc.group),
        measures=pair_measures(),
    script:
        "../workflow/scripts/models_pairs.py"


rule models_figures:
    input:
        out("models/{group}/pairs.parquet"),
    output:
        **figure(
            "models_{group}_bound",
            "models_bound",
            "Your models",
            prefix="bound_",
            labels={"group": "{group}", "figure": "bound"},
        ),
        **figure(
            "models_{group}_measures",
            "models_measures",
            "Your models",
            prefix="measures_",
            labels={"group": "{group}", "figure": "measures"},
        ),
    log:
        out("logs/models_figures/{group}.log"),
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/models_figures.py"


rule models_all:
    input:
        expand(out("models/{group}/pairs.parquet"), group=sorted(MODEL_GROUPS)),
        [
            figure_files(f"models_{group}_{kind}")
            for group in sorted(MODEL_GROUPS)
            for kind in ("bound", "measures")
        ],
