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
    script:
        "../workflow/scripts/paper_comparison.py"


rule beyond_all:
    input:
        rules.workshop_example.output,
        rules.paper_comparison.output,
