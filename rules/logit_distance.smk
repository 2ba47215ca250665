# Beyond the paper: the authors' follow-up whole (Nielsen, Marconato, Gresele, Dittadi, Buchholz,
# "Logit Distance Bounds Representational Similarity", 2026), as their code runs it: the spirals
# generated and saved, teachers, students by KL, L1, L2 and the labels, their measures every
# eval_every_epochs epochs, the final table with nulls and bounds, their figures.
include: "helpers/logit_distance.smk"


rule logit_distance_spirals_data:
    output:
        logit_file("data/spirals.npz"),
    log:
        out("logs/logit_distance/spirals_data.log"),
    priority: AT_ONCE
    conda:
        "../envs/torch.yaml"
    params:
        data=SPIRALS["data"],
    script:
        "../workflow/scripts/logit_distance_data.py"


rule logit_distance_spirals_teachers:
    input:
        data=logit_file("data/spirals.npz"),
    output:
        **trained_files(spirals_teacher_files, CIFAR_MODEL_TABLES),
    log:
        training_log("logit_distance_train", "spirals_teachers"),
    benchmark:
        out("benchmarks/logit_distance_train/spirals_teachers.tsv")
    conda:
        "../envs/torch.yaml"
    threads: LOGIT["threads"]
    resources:
        gpu=int(LOGIT_GPU),
        mem_mb=4000,
        runtime=logit_runtime("teachers"),
    params:
        arch=logit_model_settings(),
        seeds=SPIRALS["teacher_seeds"],
        epochs=SPIRALS["teacher_epochs"],
        training=SPIRALS["training"],
        device=LOGIT["device"],
        checkpoint=logit_file("teachers/checkpoint.pt"),
        run_config=run_config("logit_distance"),
    script:
        "../workflow/scripts/logit_distance_train.py"


rule logit_distance_spirals_students:
    input:
        data=logit_file("data/spirals.npz"),
        teachers=spirals_teacher_files("model.pt"),
    output:
        **trained_files(spirals_student_files, CIFAR_MODEL_TABLES),
        snapshots=logit_file("students/snapshots.parquet"),
    log:
        training_log("logit_distance_train", "spirals_students"),
    benchmark:
        out("benchmarks/logit_distance_train/spirals_students.tsv")
    conda:
        "../envs/torch.yaml"
    threads: LOGIT["threads"]
    resources:
        gpu=int(LOGIT_GPU),
        mem_mb=6000,
        runtime=logit_runtime("students"),
    params:
        arch=logit_model_settings(),
        members=spirals_members(),
        epochs=SPIRALS["student_epochs"],
        training=SPIRALS["training"],
        eval_every_epochs=LOGIT["eval_every_epochs"],
        d_rep_subsets=LOGIT["d_rep_subsets"],
        device=LOGIT["device"],
        checkpoint=logit_file("students/checkpoint.pt"),
        run_config=run_config("logit_distance"),
    script:
        "../workflow/scripts/logit_distance_train.py"


rule logit_distance_spirals_table:
    input:
        snapshots=logit_file("students/snapshots.parquet"),
        teacher_embeddings=spirals_teacher_files("embeddings_test.parquet"),
        teacher_unembeddings=spirals_teacher_files("unembeddings.parquet"),
        student_embeddings=spirals_student_files("embeddings_test.parquet"),
        student_unembeddings=spirals_student_files("unembeddings.parquet"),
    output:
        snapshots=out("tables/logit_distance_spirals_snapshots.csv"),
        final=report(
            out("tables/logit_distance_spirals_final.csv"),
            caption="../report/logit_distance_final.rst",
            category="Beyond the paper",
            subcategory="The follow-up: logit distance",
        ),
        summary=out("tables/logit_distance_spirals_summary.csv"),
    log:
        out("logs/logit_distance/spirals_table.log"),
    benchmark:
        out("benchmarks/logit_distance_spirals_table.tsv")
    conda:
        "../envs/measures.yaml"
    params:
        members=spirals_members(),
        teacher_seeds=SPIRALS["teacher_seeds"],
        null=config["null"],
        d_rep_subsets=LOGIT["d_rep_subsets"],
    script:
        "../workflow/scripts/logit_distance_table.py"


rule logit_distance_spirals_figures:
    input:
        final=out("tables/logit_distance_spirals_final.csv"),
        summary=out("tables/logit_distance_spirals_summary.csv"),
    output:
        **figure(
            "logit_distance_spirals_metrics",
            "logit_distance_metrics",
            "Beyond the paper",
            prefix="metrics_",
            subcategory="The follow-up: logit distance",
        ),
        **figure(
            "logit_distance_spirals_bound",
            "logit_distance_bound",
            "Beyond the paper",
            prefix="bound_",
            subcategory="The follow-up: logit distance",
        ),
    log:
        out("logs/logit_distance/spirals_figures.log"),
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/logit_distance_figures.py"


rule logit_distance_all:
    input:
        rules.logit_distance_spirals_table.output,
        figure_files("logit_distance_spirals_metrics"),
        figure_files("logit_distance_spirals_bound"),
