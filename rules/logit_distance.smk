# Beyond the paper: the authors' follow-up whole (Nielsen, Marconato, Gresele, Dittadi, Buchholz,
# "Logit Distance Bounds Representational Similarity", 2026), as their code runs it, on its
# spirals, SUB and CIFAR-100: the data, teachers, students by KL, L1, L2 and the labels, their
# measures every eval_every_epochs epochs, the final table with nulls, bounds (and SUB's concept
# probe), their figures. The spirals' rules first; SUB's and CIFAR-100's are theirs with their own files
# and settings.
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


rule logit_distance_spirals_teachers:
    input:
        data=logit_data_file("spirals"),
    output:
        **trained_files(logit_teacher_files("spirals"), CIFAR_MODEL_TABLES),
    log:
        training_log("logit_distance_train", "spirals_teachers"),
    benchmark:
        out("benchmarks/logit_distance_train/spirals_teachers.tsv")
    conda:
        "../envs/torch.yaml"
    threads: LOGIT["threads"]
    resources:
        gpu=int(LOGIT_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 4000),
        runtime=logit_runtime("spirals", "teachers"),
    params:
        dataset="spirals",
        arch=logit_model_settings("spirals"),
        seeds=LOGIT["spirals"]["teacher_seeds"],
        epochs=LOGIT["spirals"]["teacher_epochs"],
        training=LOGIT["spirals"]["training"],
        device=LOGIT["device"],
        resnet=None,
        probe_seed=logit_probe_seed("spirals"),
        checkpoint=logit_file("spirals", "teachers/checkpoint.pt"),
        run_config=run_config("logit_distance"),
    script:
        "../workflow/scripts/logit_distance_teachers.py"


rule logit_distance_spirals_students:
    input:
        data=logit_data_file("spirals"),
        teachers=logit_teacher_files("spirals")("model.pt"),
    output:
        **trained_files(logit_student_files("spirals"), CIFAR_MODEL_TABLES),
        snapshots=logit_file("spirals", "students/snapshots.parquet"),
    log:
        training_log("logit_distance_train", "spirals_students"),
    benchmark:
        out("benchmarks/logit_distance_train/spirals_students.tsv")
    conda:
        "../envs/torch.yaml"
    threads: LOGIT["threads"]
    resources:
        gpu=int(LOGIT_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 6000),
        runtime=logit_runtime("spirals", "students"),
    params:
        dataset="spirals",
        arch=logit_model_settings("spirals"),
        members=logit_members("spirals"),
        epochs=LOGIT["spirals"]["student_epochs"],
        training=LOGIT["spirals"]["training"],
        eval_every_epochs=logit_eval_every("spirals"),
        d_rep_subsets=LOGIT["d_rep_subsets"],
        device=LOGIT["device"],
        resnet=None,
        probe_seed=logit_probe_seed("spirals"),
        checkpoint=logit_file("spirals", "students/checkpoint.pt"),
        run_config=run_config("logit_distance"),
    script:
        "../workflow/scripts/logit_distance_students.py"


rule logit_distance_spirals_table:
    input:
        snapshots=logit_file("spirals", "students/snapshots.parquet"),
        teacher_embeddings=logit_teacher_files("spirals")("embeddings_test.parquet"),
        teacher_unembeddings=logit_teacher_files("spirals")("unembeddings.parquet"),
        teacher_metrics=logit_teacher_files("spirals")("metrics.json"),
        student_embeddings=logit_student_files("spirals")("embeddings_test.parquet"),
        student_unembeddings=logit_student_files("spirals")("unembeddings.parquet"),
        student_metrics=logit_student_files("spirals")("metrics.json"),
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
        dataset="spirals",
        members=logit_members("spirals"),
        teacher_seeds=LOGIT["spirals"]["teacher_seeds"],
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
    params:
        title="Follow-up, spirals",
    script:
        "../workflow/scripts/logit_distance_figures.py"


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


use rule logit_distance_spirals_teachers as logit_distance_sub_teachers with:
    input:
        data=logit_data_file("sub"),
    output:
        **trained_files(logit_teacher_files("sub"), CIFAR_MODEL_TABLES),
    log:
        training_log("logit_distance_train", "sub_teachers"),
    benchmark:
        out("benchmarks/logit_distance_train/sub_teachers.tsv")
    resources:
        gpu=int(LOGIT_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 8000),
        runtime=logit_runtime("sub", "teachers"),
    params:
        dataset="sub",
        arch=logit_model_settings("sub"),
        seeds=SUB["teacher_seeds"],
        epochs=SUB["teacher_epochs"],
        training=SUB["training"],
        device=LOGIT["device"],
        resnet=None,
        probe_seed=logit_probe_seed("sub"),
        checkpoint=logit_file("sub", "teachers/checkpoint.pt"),
        run_config=run_config("logit_distance"),


use rule logit_distance_spirals_students as logit_distance_sub_students with:
    input:
        data=logit_data_file("sub"),
        teachers=logit_teacher_files("sub")("model.pt"),
    output:
        **trained_files(logit_student_files("sub"), CIFAR_MODEL_TABLES),
        snapshots=logit_file("sub", "students/snapshots.parquet"),
    log:
        training_log("logit_distance_train", "sub_students"),
    benchmark:
        out("benchmarks/logit_distance_train/sub_students.tsv")
    resources:
        gpu=int(LOGIT_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 12000),
        runtime=logit_runtime("sub", "students"),
    params:
        dataset="sub",
        arch=logit_model_settings("sub"),
        members=logit_members("sub"),
        epochs=SUB["student_epochs"],
        training=SUB["training"],
        eval_every_epochs=logit_eval_every("sub"),
        d_rep_subsets=LOGIT["d_rep_subsets"],
        device=LOGIT["device"],
        resnet=None,
        probe_seed=logit_probe_seed("sub"),
        checkpoint=logit_file("sub", "students/checkpoint.pt"),
        run_config=run_config("logit_distance"),


use rule logit_distance_spirals_table as logit_distance_sub_table with:
    input:
        snapshots=logit_file("sub", "students/snapshots.parquet"),
        teacher_embeddings=logit_teacher_files("sub")("embeddings_test.parquet"),
        teacher_unembeddings=logit_teacher_files("sub")("unembeddings.parquet"),
        teacher_metrics=logit_teacher_files("sub")("metrics.json"),
        student_embeddings=logit_student_files("sub")("embeddings_test.parquet"),
        student_unembeddings=logit_student_files("sub")("unembeddings.parquet"),
        student_metrics=logit_student_files("sub")("metrics.json"),
    output:
        snapshots=out("tables/logit_distance_sub_snapshots.csv"),
        final=report(
            out("tables/logit_distance_sub_final.csv"),
            caption="../report/logit_distance_final.rst",
            category="Beyond the paper",
            subcategory="The follow-up: logit distance",
        ),
        summary=out("tables/logit_distance_sub_summary.csv"),
    log:
        out("logs/logit_distance/sub_table.log"),
    benchmark:
        out("benchmarks/logit_distance_sub_table.tsv")
    params:
        dataset="sub",
        members=logit_members("sub"),
        teacher_seeds=SUB["teacher_seeds"],
        null=config["null"],
        d_rep_subsets=LOGIT["d_rep_subsets"],


use rule logit_distance_spirals_figures as logit_distance_sub_figures with:
    input:
        final=out("tables/logit_distance_sub_final.csv"),
        summary=out("tables/logit_distance_sub_summary.csv"),
    output:
        **figure(
            "logit_distance_sub_metrics",
            "logit_distance_metrics",
            "Beyond the paper",
            prefix="metrics_",
            subcategory="The follow-up: logit distance",
        ),
        **figure(
            "logit_distance_sub_bound",
            "logit_distance_bound",
            "Beyond the paper",
            prefix="bound_",
            subcategory="The follow-up: logit distance",
        ),
    log:
        out("logs/logit_distance/sub_figures.log"),
    params:
        title="Follow-up, SUB",


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


use rule logit_distance_spirals_teachers as logit_distance_cifar100_teachers with:
    input:
        data=logit_data_file("cifar100"),
    output:
        **trained_files(logit_teacher_files("cifar100"), CIFAR_MODEL_TABLES),
    log:
        training_log("logit_distance_train", "cifar100_teachers"),
    benchmark:
        out("benchmarks/logit_distance_train/cifar100_teachers.tsv")
    resources:
        gpu=int(LOGIT_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 8000),
        runtime=logit_runtime("cifar100", "teachers"),
    params:
        dataset="cifar100",
        arch=logit_model_settings("cifar100"),
        seeds=CIFAR100["teacher_seeds"],
        epochs=CIFAR100["teacher_epochs"],
        training=CIFAR100["training"],
        device=LOGIT["device"],
        resnet=logit_resnet_settings("cifar100"),
        probe_seed=logit_probe_seed("cifar100"),
        checkpoint=logit_file("cifar100", "teachers/checkpoint.pt"),
        run_config=run_config("logit_distance"),


use rule logit_distance_spirals_students as logit_distance_cifar100_students with:
    input:
        data=logit_data_file("cifar100"),
        teachers=logit_teacher_files("cifar100")("model.pt"),
    output:
        **trained_files(logit_student_files("cifar100"), CIFAR_MODEL_TABLES),
        snapshots=logit_file("cifar100", "students/snapshots.parquet"),
    log:
        training_log("logit_distance_train", "cifar100_students"),
    benchmark:
        out("benchmarks/logit_distance_train/cifar100_students.tsv")
    resources:
        gpu=int(LOGIT_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 12000),
        runtime=logit_runtime("cifar100", "students"),
    params:
        dataset="cifar100",
        arch=logit_model_settings("cifar100"),
        members=logit_members("cifar100"),
        epochs=CIFAR100["student_epochs"],
        training=CIFAR100["training"],
        eval_every_epochs=logit_eval_every("cifar100"),
        d_rep_subsets=LOGIT["d_rep_subsets"],
        device=LOGIT["device"],
        resnet=logit_resnet_settings("cifar100"),
        probe_seed=logit_probe_seed("cifar100"),
        checkpoint=logit_file("cifar100", "students/checkpoint.pt"),
        run_config=run_config("logit_distance"),


use rule logit_distance_spirals_table as logit_distance_cifar100_table with:
    input:
        snapshots=logit_file("cifar100", "students/snapshots.parquet"),
        teacher_embeddings=logit_teacher_files("cifar100")("embeddings_test.parquet"),
        teacher_unembeddings=logit_teacher_files("cifar100")("unembeddings.parquet"),
        teacher_metrics=logit_teacher_files("cifar100")("metrics.json"),
        student_embeddings=logit_student_files("cifar100")("embeddings_test.parquet"),
        student_unembeddings=logit_student_files("cifar100")("unembeddings.parquet"),
        student_metrics=logit_student_files("cifar100")("metrics.json"),
    output:
        snapshots=out("tables/logit_distance_cifar100_snapshots.csv"),
        final=report(
            out("tables/logit_distance_cifar100_final.csv"),
            caption="../report/logit_distance_final.rst",
            category="Beyond the paper",
            subcategory="The follow-up: logit distance",
        ),
        summary=out("tables/logit_distance_cifar100_summary.csv"),
    log:
        out("logs/logit_distance/cifar100_table.log"),
    benchmark:
        out("benchmarks/logit_distance_cifar100_table.tsv")
    params:
        dataset="cifar100",
        members=logit_members("cifar100"),
        teacher_seeds=CIFAR100["teacher_seeds"],
        null=config["null"],
        d_rep_subsets=LOGIT["d_rep_subsets"],


use rule logit_distance_spirals_figures as logit_distance_cifar100_figures with:
    input:
        final=out("tables/logit_distance_cifar100_final.csv"),
        summary=out("tables/logit_distance_cifar100_summary.csv"),
    output:
        **figure(
            "logit_distance_cifar100_metrics",
            "logit_distance_metrics",
            "Beyond the paper",
            prefix="metrics_",
            subcategory="The follow-up: logit distance",
        ),
        **figure(
            "logit_distance_cifar100_bound",
            "logit_distance_bound",
            "Beyond the paper",
            prefix="bound_",
            subcategory="The follow-up: logit distance",
        ),
    log:
        out("logs/logit_distance/cifar100_figures.log"),
    params:
        title="Follow-up, CIFAR-100",


rule logit_distance_all:
    input:
        [
            out(f"tables/logit_distance_{d}_{t}.csv")
            for d in LOGIT_SETS
            for t in ("final", "summary")
        ],
        [
            figure_files(f"logit_distance_{d}_{k}")
            for d in LOGIT_SETS
            for k in ("metrics", "bound")
        ],
