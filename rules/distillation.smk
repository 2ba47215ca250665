# Beyond the paper: the follow-up's question (Nielsen et al. 2026, "Logit Distance Bounds
# Representational Similarity") on this run's synthetic models: students distilled from them by
# KL, by logit distance (L2, L1) and from the labels alone, compared with their teachers.
include: "helpers/distillation.smk"


rule distillation_train:
    input:
        teachers=teacher_models,
    output:
        **trained_files(student_seed_files),
    log:
        training_log("distillation_train", "K{K}_w{W}_{loss}"),
    benchmark:
        out("benchmarks/distillation_train/K{K}_w{W}_{loss}.tsv")
    wildcard_constraints:
        loss="|".join(DISTILLATION["losses"]),
    priority: lambda wc: training_jobs.training_priority(wc.W, 2)
    conda:
        "../envs/torch.yaml"
    threads: SYNTHETIC["threads"]
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 3000),
        runtime=distillation_runtime,
        gpu=int(SYNTHETIC_GPU),
    params:
        model_cfg=lambda wc: synthetic_model_settings(wc.K, wc.W, DISTILLATION_TEACHERS),
        student_seed_offset=DISTILLATION["student_seed_offset"],
        train_cfg=training_settings("synthetic"),
        device=SYNTHETIC["device"],
        cuda_graph=SYNTHETIC["cuda_graph"],
        checkpoint=lambda wc: student_file("checkpoint.pt", **wc),
        run_config=run_config("synthetic", "distillation"),
    script:
        "../workflow/scripts/distillation_train.py"


rule distillation_table:
    input:
        **distillation_tables(),
    output:
        table=report(
            out("tables/distillation.csv"),
            caption="../report/distillation_table.rst",
            category="Beyond the paper",
            subcategory="Distillation: logit distance vs KL",
        ),
        summary=report(
            out("tables/distillation_summary.csv"),
            caption="../report/distillation_summary.rst",
            category="Beyond the paper",
            subcategory="Distillation: logit distance vs KL",
        ),
    log:
        out("logs/distillation_table.log"),
    benchmark:
        out("benchmarks/distillation_table.tsv")
    conda:
        "../envs/measures.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 2000),
        runtime=10,
    params:
        configurations=distillation_configs(),
        teacher_seeds=DISTILLATION_TEACHERS,
        losses=DISTILLATION["losses"],
        student_seed_offset=DISTILLATION["student_seed_offset"],
        data={k: SYNTHETIC[k] for k in ("n_test", "test_data_seed")},
        measures=pair_measures(),
    script:
        "../workflow/scripts/distillation_table.py"


rule distillation_figure:
    input:
        table=out("tables/distillation.csv"),
    output:
        **figure(
            "distillation",
            "distillation",
            "Beyond the paper",
            subcategory="Distillation: logit distance vs KL",
        ),
    log:
        out("logs/distillation_figure.log"),
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/distillation_figure.py"


rule distillation_all:
    input:
        rules.distillation_table.output,
        figure_files("distillation"),
