# Beyond the paper: the paper comparison, each of its claims checked against this run's tables;
# and beyond_all, the target of the work beyond the paper (the workshop example of
# rules/constructed.smk, the training dynamics of rules/synthetic.smk).
include: "helpers/paper_comparison.smk"


rule paper_comparison:
    input:
        kl_table=out("tables/kl_table.csv"),
        constructed=[out(f"constructed/bound_K{k}.csv") for k in CONSTRUCTED_K],
        widths=[
            out(f"tables/d_llv_vs_width_K{'_'.join(map(str, g))}.csv")
            for g in SYNTHETIC["width_figures"]
        ],
        width_baselines=[
            out(f"tables/width_baseline_K{'_'.join(map(str, g))}.csv")
            for g in SYNTHETIC["width_figures"]
        ],
        trained=bound_figure_pairs(),
        workshop=out("tables/workshop_example.csv"),
        alignment=out("tables/prh_alignment.csv"),
        prh_study=lambda wc: [out("tables/prh_study.csv")] if PRH_ON else [],
        authors=[out("tables/ours_vs_authors.csv")] if AUTHORS_ON else [],
        authors_alignment=(
            [out("tables/prh_alignment_authors.csv")] if AUTHORS_ON else []
        ),
        tightness=(
            [out("tables/bound_tightness.csv")] if BOUND_BEYOND["enabled"] else []
        ),
        distillation=(
            [out("tables/distillation.csv")]
            if config["distillation"]["enabled"]
            else []
        ),
        logit_distance=(
            [out(f"tables/logit_distance_{d}_final.csv") for d in LOGIT_SETS]
            if config["logit_distance"]["enabled"]
            else []
        ),
        roeder=(
            [out("tables/roeder_dynamics.csv")] if config["roeder"]["enabled"] else []
        ),
        roeder_words=(
            [out("tables/roeder_words_pairs.csv"), out("tables/roeder_words_fit.csv")]
            if config["roeder"]["enabled"] and config["roeder"]["words"]["enabled"]
            else []
        ),
        roeder_cpc=(
            [out("tables/roeder_cpc_summary.csv")]
            if config["roeder"]["enabled"] and config["roeder"]["cpc"]["enabled"]
            else []
        ),
        cifar=(
            [out("cifar10/fd2/pairs.parquet")]
            if CIFAR["enabled"] and 2 in CIFAR["rep_dims"]
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
        comparison_seeds=CIFAR["comparison_seeds"],
        standin=CIFAR["standin"],
        authors_standin=AUTHORS["standin"],
        prh_standins=lambda wc: PRH_NEEDS_STANDINS,
        logit_sets=logit_set_names(),
        sub_standin=SUB["standin"],
        scale=config["scale"],
        configfiles=config_file_names(),
    script:
        "../workflow/scripts/paper_comparison.py"


rule beyond_all:
    input:
        rules.workshop_example.output,
        rules.paper_comparison.output,
        [figure_files(f"measures_vs_width_K{k}") for k in SYNTHETIC["class_counts"]],
        figure_files("training_dynamics"),
