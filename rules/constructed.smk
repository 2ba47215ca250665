# Experiments on hand-built models (no training): paper Table 1 and Fig. 16 (left).
include: "helpers/constructed.smk"


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
        mem_mb=training_jobs.job_mem_mb(config, 1000),
        runtime=10,
    params:
        cfg={**config["kl_table"], **measure_settings(), "seed": config["seed"]},
    script:
        "../workflow/scripts/constructed_kl_table.py"


rule constructed_bound_sweep:
    output:
        out("constructed/bound_K{K}.csv"),
    log:
        out("logs/constructed_bound_sweep_K{K}.log"),
    benchmark:
        out("benchmarks/constructed_bound_sweep_K{K}.tsv")
    conda:
        "../envs/measures.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 1000),
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
        **figure(
            "constructed_bound_K{K}",
            "constructed_bound",
            "Constructed models",
            subcategory="Fig. 16 (left): bound on constructed models",
            labels={"K": "{K}"},
        ),
    log:
        out("logs/constructed_bound_figure_K{K}.log"),
    conda:
        "../envs/figures.yaml"
    params:
        rep_dim=2,
        title=lambda wc: f"Constructed models, K = {wc.K}",
        marker_size=12,
    script:
        "../workflow/scripts/bound_figure.py"


# Beyond the paper: the workshop paper's hand-built example (seed 000, §4 and App. D).
rule workshop_example:
    output:
        **figure("workshop_example", "workshop_example", "Beyond the paper"),
        **figure(
            "workshop_lengths",
            "workshop_lengths",
            "Beyond the paper",
            prefix="lengths_",
        ),
        csv=report(
            out("tables/workshop_example.csv"),
            caption="../report/workshop_example.rst",
            category="Beyond the paper",
        ),
        tex=out("tables/workshop_example.tex"),
    log:
        out("logs/workshop_example.log"),
    conda:
        "../envs/figures.yaml"
    params:
        seed=config["seed"],
    script:
        "../workflow/scripts/constructed_workshop.py"


rule constructed_all:
    input:
        rules.kl_table.output,
        [figure_files(f"constructed_bound_K{k}") for k in CONSTRUCTED_K],
