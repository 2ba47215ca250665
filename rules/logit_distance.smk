# Beyond the paper: the authors' follow-up whole (Nielsen, Marconato, Gresele, Dittadi, Buchholz,
# "Logit Distance Bounds Representational Similarity", 2026), as their code runs it, on its
# spirals, SUB and CIFAR-100: the data, teachers, students by KL, L1, L2 and the labels, their
# measures every eval_every_epochs epochs, the final table with nulls, bounds (and SUB's concept
# probe), their figures. Each data set's own rules for its data first; then its teachers,
# students, table and figures, one rule of each kind a data set, written once for all three
# (each data set's files and settings from rules/helpers/logit_distance.smk).
include: "helpers/logit_distance.smk"


rule logit_distance_spirals_data:
    output:
        logit_data_file("spirals"),
    log:
        out("logs/logit_distance/spirals_data.log"),
    priority: AT_ONCE
    conda:
        "../envs/torch.yaml"
    params:
        data=LOGIT["spirals"]["data"],
    script:
        "../workflow/scripts/logit_distance_data.py"


# SUB: DINOv2-base features of its images (their dsets/preprocess_sub.py's file, `sub.features`),
# made here from the hub dataset or a folder (`sub.images`, `sub.encoder`), or from a stand-in's
# images and encoder (`sub.standin`); a concept-bottleneck teacher (birds and attributes)
rule logit_distance_sub_standin:
    output:
        images=directory(logit_file("sub", "standin/images")),
        encoder=directory(logit_file("sub", "standin/encoder")),
    log:
        out("logs/logit_distance/sub_standin.log"),
    priority: AT_ONCE
    conda:
        "../envs/lm.yaml"
    params:
        per_bird=SUB["standin_per_bird"],
        birds=SUB["birds"],
        attributes=SUB["attributes"],
        features_dim=SUB["features_dim"],
        seed=config["seed"],
    script:
        "../workflow/scripts/logit_distance_sub_standin.py"


rule logit_distance_sub_features:
    input:
        **sub_standin_inputs(),
    output:
        logit_file("sub", "data/sub_features.pt"),
    log:
        out("logs/logit_distance/sub_features.log"),
    benchmark:
        out("benchmarks/logit_distance_sub_features.tsv")
    conda:
        "../envs/lm.yaml"
    threads: LOGIT["threads"]
    resources:
        gpu=int(LOGIT_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 8000),
        runtime=120,
    params:
        **sub_sources(),
        image_size=SUB["image_size"],
        batch_size=SUB["extract_batch_size"],
        device=LOGIT["device"],
    script:
        "../workflow/scripts/logit_distance_sub_features.py"


# CIFAR-100: cifar-100-python (downloaded with its MD5, a folder, or a stand-in in its format);
# a ResNet-50 teacher (ImageNet's weights from a file where given) and ResNet-18 students
rule logit_distance_cifar100_download:
    output:
        [f"{CIFAR100['resources']}/cifar-100-python/{name}" for name in CIFAR100_FILES],
    log:
        out("logs/logit_distance/cifar100_download.log"),
    conda:
        "../envs/measures.yaml"
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 2000),
        runtime=30,
    params:
        standin=False,
        url=CIFAR100["url"],
    script:
        "../workflow/scripts/logit_distance_cifar100_data.py"


rule logit_distance_cifar100_standin:
    output:
        [
            logit_file("cifar100", f"standin/cifar-100-python/{name}")
            for name in CIFAR100_FILES
        ],
    log:
        out("logs/logit_distance/cifar100_standin.log"),
    priority: AT_ONCE
    conda:
        "../envs/measures.yaml"
    params:
        standin=True,
        n_train=CIFAR100["standin_train"],
        n_test=CIFAR100["standin_test"],
        seed=config["seed"],
    script:
        "../workflow/scripts/logit_distance_cifar100_data.py"


# Each data set's teachers (one stack), students (every teacher x loss x seed, one stack, measured
# every eval_every_epochs epochs), final table and figures: rules logit_distance_<set>_<kind>.
for logit_set in ("spirals", "sub", "cifar100"):

    rule:
        name:
            f"logit_distance_{logit_set}_teachers"
        input:
            data=logit_data_file(logit_set),
        output:
            **trained_files(logit_teacher_files(logit_set), CIFAR_MODEL_TABLES),
        log:
            training_log("logit_distance_train", f"{logit_set}_teachers"),
        benchmark:
            out(f"benchmarks/logit_distance_train/{logit_set}_teachers.tsv")
        conda:
            "../envs/torch.yaml"
        threads: LOGIT["threads"]
        resources:
            gpu=int(LOGIT_GPU),
            mem_mb=logit_mem_mb(logit_set, "teachers"),
            runtime=logit_runtime(logit_set, "teachers"),
        params:
            dataset=logit_set,
            arch=logit_model_settings(logit_set),
            seeds=LOGIT[logit_set]["teacher_seeds"],
            epochs=LOGIT[logit_set]["teacher_epochs"],
            training=LOGIT[logit_set]["training"],
            resnet=logit_resnet_settings(logit_set),
            probe_seed=logit_probe_seed(logit_set),
            device=LOGIT["device"],
            checkpoint=logit_file(logit_set, "teachers/checkpoint.pt"),
            run_config=run_config("logit_distance"),
        script:
            "../workflow/scripts/logit_distance_teachers.py"

    rule:
        name:
            f"logit_distance_{logit_set}_students"
        input:
            data=logit_data_file(logit_set),
            teachers=logit_teacher_files(logit_set)("model.pt"),
        output:
            **trained_files(logit_student_files(logit_set), CIFAR_MODEL_TABLES),
            snapshots=logit_file(logit_set, "students/snapshots.parquet"),
        log:
            training_log("logit_distance_train", f"{logit_set}_students"),
        benchmark:
            out(f"benchmarks/logit_distance_train/{logit_set}_students.tsv")
        conda:
            "../envs/torch.yaml"
        threads: LOGIT["threads"]
        resources:
            gpu=int(LOGIT_GPU),
            mem_mb=logit_mem_mb(logit_set, "students"),
            runtime=logit_runtime(logit_set, "students"),
        params:
            dataset=logit_set,
            arch=logit_model_settings(logit_set),
            members=logit_members(logit_set),
            epochs=LOGIT[logit_set]["student_epochs"],
            training=LOGIT[logit_set]["training"],
            eval_every_epochs=logit_eval_every(logit_set),
            d_rep_subsets=LOGIT["d_rep_subsets"],
            resnet=logit_resnet_settings(logit_set),
            probe_seed=logit_probe_seed(logit_set),
            device=LOGIT["device"],
            checkpoint=logit_file(logit_set, "students/checkpoint.pt"),
            run_config=run_config("logit_distance"),
        script:
            "../workflow/scripts/logit_distance_students.py"

    rule:
        name:
            f"logit_distance_{logit_set}_table"
        input:
            snapshots=logit_file(logit_set, "students/snapshots.parquet"),
            teacher_embeddings=logit_teacher_files(logit_set)("embeddings_test.parquet"),
            teacher_unembeddings=logit_teacher_files(logit_set)("unembeddings.parquet"),
            teacher_metrics=logit_teacher_files(logit_set)("metrics.json"),
            student_embeddings=logit_student_files(logit_set)("embeddings_test.parquet"),
            student_unembeddings=logit_student_files(logit_set)("unembeddings.parquet"),
            student_metrics=logit_student_files(logit_set)("metrics.json"),
        output:
            snapshots=logit_table(logit_set, "snapshots"),
            final=report(
                logit_table(logit_set, "final"),
                caption="../report/logit_distance_final.rst",
                category="Beyond the paper",
                subcategory="The follow-up: logit distance",
            ),
            summary=logit_table(logit_set, "summary"),
        log:
            out(f"logs/logit_distance/{logit_set}_table.log"),
        benchmark:
            out(f"benchmarks/logit_distance_{logit_set}_table.tsv")
        conda:
            "../envs/measures.yaml"
        params:
            dataset=logit_set,
            members=logit_members(logit_set),
            teacher_seeds=LOGIT[logit_set]["teacher_seeds"],
            null=config["null"],
            d_rep_subsets=LOGIT["d_rep_subsets"],
        script:
            "../workflow/scripts/logit_distance_table.py"

    rule:
        name:
            f"logit_distance_{logit_set}_figures"
        input:
            final=logit_table(logit_set, "final"),
            summary=logit_table(logit_set, "summary"),
        output:
            **logit_figure(logit_set, "metrics"),
            **logit_figure(logit_set, "bound"),
        log:
            out(f"logs/logit_distance/{logit_set}_figures.log"),
        conda:
            "../envs/figures.yaml"
        params:
            title=logit_figure_title(logit_set),
        script:
            "../workflow/scripts/logit_distance_figures.py"


rule logit_distance_all:
    input:
        logit_distance_targets(),
