# Beyond the paper: the `models:` groups of the config, models this pipeline did not train,
# compared pair by pair with every measure (what `repdist compare` does), with a bound figure
# and a measures figure per group.


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
        mem_mb=8000,
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
        bound_pdf=out("figures/models_{group}_bound.pdf"),
        bound_png=report(
            out("figures/models_{group}_bound.png"),
            caption="../report/models_bound.rst",
            category="Your models",
            labels={"group": "{group}", "figure": "bound"},
        ),
        measures_pdf=out("figures/models_{group}_measures.pdf"),
        measures_png=report(
            out("figures/models_{group}_measures.png"),
            caption="../report/models_measures.rst",
            category="Your models",
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
        expand(
            out("figures/models_{group}_{kind}.{ext}"),
            group=sorted(MODEL_GROUPS),
            kind=["bound", "measures"],
            ext=["pdf", "png"],
        ),
