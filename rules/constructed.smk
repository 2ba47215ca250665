# Experiments on hand-built models (no training): paper Table 1 and Fig. 16 (left).


rule kl_table:
    output:
        csv=report(
            out("tables/kl_table.csv"),
            caption="../report/kl_table.rst",
            category="Constructed models",
            labels={"output": "Table 1 (CSV)"},
        ),
        tex=out("tables/kl_table.tex"),
        extended_csv=report(
            out("tables/kl_table_extended.csv"),
            caption="../report/kl_table_extended.rst",
            category="Beyond the paper",
        ),
        extended_tex=out("tables/kl_table_extended.tex"),
    log:
        out("logs/kl_table.log"),
    benchmark:
        out("benchmarks/kl_table.tsv")
    conda:
        "../envs/measures.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        cfg=lambda wc: {
            **{k: v for k, v in config["kl_table"].items()},
            **measure_settings(),
            "seed": config["seed"],
        },
    script:
        "../workflow/scripts/kl_table.py"


rule constructed_bound_sweep:
    output:
        out("constructed/bound_K{K}.csv"),
    log:
        out("logs/constructed_bound_sweep_K{K}.log"),
    benchmark:
        out("benchmarks/constructed_bound_sweep_K{K}.tsv")
    wildcard_constraints:
        K=r"\d+",
    conda:
        "../envs/measures.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=15,
    params:
        cfg=lambda wc: {
            "num_classes": int(wc.K),
            "noise_level": CONSTRUCTED_NOISE[int(wc.K)],
            **{k: v for k, v in config["constructed"].items() if k != "classifiers"},
            **measure_settings(),
            "seed": config["seed"],
        },
    script:
        "../workflow/scripts/constructed_bound_sweep.py"


rule constructed_bound_figure:
    input:
        out("constructed/bound_K{K}.csv"),
    output:
        pdf=out("figures/constructed_bound_K{K}.pdf"),
        png=report(
            out("figures/constructed_bound_K{K}.png"),
            caption="../report/constructed_bound.rst",
            category="Constructed models",
            subcategory="Fig. 16 (left): bound on constructed models",
            labels={"K": "{K}"},
        ),
    log:
        out("logs/constructed_bound_figure_K{K}.log"),
    wildcard_constraints:
        K=r"\d+",
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/constructed_bound_figure.py"


rule constructed_all:
    input:
        out("tables/kl_table.csv"),
        out("tables/kl_table.tex"),
        out("tables/kl_table_extended.csv"),
        out("tables/kl_table_extended.tex"),
        expand(
            out("figures/constructed_bound_K{K}.{ext}"),
            K=CONSTRUCTED_K,
            ext=["pdf", "png"],
        ),
