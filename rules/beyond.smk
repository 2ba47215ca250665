# Beyond the paper: the workshop paper's hand-built example (seed 000, §4 and App. D).


rule workshop_example:
    output:
        csv=report(
            out("tables/workshop_example.csv"),
            caption="../report/workshop_example.rst",
            category="Beyond the paper",
        ),
        tex=out("tables/workshop_example.tex"),
        pdf=out("figures/workshop_example.pdf"),
        png=report(
            out("figures/workshop_example.png"),
            caption="../report/workshop_example.rst",
            category="Beyond the paper",
        ),
    log:
        out("logs/workshop_example.log"),
    conda:
        "../envs/figures.yaml"
    params:
        seed=config["seed"],
    script:
        "../workflow/scripts/workshop_example.py"


rule paper_comparison:
    input:
        kl_table=out("tables/kl_table.csv"),
        constructed=expand(out("constructed/bound_K{K}.csv"), K=CONSTRUCTED_K),
        widths=expand(
            out("tables/d_llv_vs_width_K{group}.csv"),
            group=["_".join(map(str, g)) for g in SYN["width_figures"]],
        ),
        trained=bound_figure_pairs(),
        workshop=out("tables/workshop_example.csv"),
        authors=[out("tables/ours_vs_authors.csv")] if AUTHORS_ON else [],
        tightness=[out("tables/bound_tightness.csv")] if BB["enabled"] else [],
        cifar=(
            [out("cifar10/fd2/pairs.parquet")]
            if CIF["enabled"] and 2 in CIF["rep_dims"]
            else []
        ),
    output:
        csv=report(
            out("tables/paper_comparison.csv"),
            caption="../report/paper_comparison.rst",
            category="Beyond the paper",
        ),
        md=out("tables/paper_comparison.md"),
    log:
        out("logs/paper_comparison.log"),
    conda:
        "../envs/measures.yaml"
    params:
        constructed_k=CONSTRUCTED_K,
        comparison_seeds=CIF["comparison_seeds"],
        standin=CIF["standin"],
        authors_standin=AUT["standin"],
    script:
        "../workflow/scripts/paper_comparison.py"


rule training_dynamics:
    output:
        table=out("dynamics/snapshots.parquet"),
        pdf=out("figures/training_dynamics.pdf"),
        png=report(
            out("figures/training_dynamics.png"),
            caption="../report/training_dynamics.rst",
            category="Beyond the paper",
        ),
    log:
        out("logs/training_dynamics.log"),
    benchmark:
        out("benchmarks/training_dynamics.tsv")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=3000,
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
        measures=pair_measures(),
    script:
        "../workflow/scripts/training_dynamics.py"


rule beyond_all:
    input:
        rules.workshop_example.output,
        rules.paper_comparison.output,
        expand(
            out("figures/measures_vs_width_K{K}.{ext}"),
            K=SYN["class_counts"],
            ext=["pdf", "png"],
        ),
        expand(out("figures/training_dynamics.{ext}"), ext=["pdf", "png"]),
