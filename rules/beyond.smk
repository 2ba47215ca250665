# Beyond the paper: the workshop paper's hand-built example (seed 000, §4 and App. D), the
# paper comparison, and similarity between seeds during training.
include: "helpers/beyond.smk"


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


rule beyond_all:
    input:
        rules.workshop_example.output,
        rules.paper_comparison.output,
        [figure_files(f"measures_vs_width_K{k}") for k in SYNTHETIC["class_counts"]],
        figure_files("training_dynamics"),
