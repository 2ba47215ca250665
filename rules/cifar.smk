# CIFAR-10 ResNet-18s: paper Figs. 3 (left), 5 and App. F.5.
include: "helpers/cifar.smk"


rule cifar10_download:
    output:
        [f"{CIFAR['resources']}/cifar-10-batches-py/{name}" for name in CIFAR_FILES],
    log:
        out("logs/cifar10_download.log"),
    conda:
        "../envs/measures.yaml"
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 2000),
        runtime=30,
    params:
        resources=lambda wc, output: str(Path(output[0]).parent.parent),
        url=CIFAR["url"],
    script:
        "../workflow/scripts/cifar_download.py"


rule cifar10_standin:
    output:
        [out(f"cifar10_standin/cifar-10-batches-py/{name}") for name in CIFAR_FILES],
    log:
        out("logs/cifar10_standin.log"),
    priority: AT_ONCE
    conda:
        "../envs/measures.yaml"
    params:
        n_train=CIFAR["standin_train"],
        n_test=CIFAR["standin_test"],
        seed=config["seed"],
    script:
        "../workflow/scripts/cifar_standin.py"


rule cifar10_train:
    input:
        cifar_data_files(),
    output:
        **trained_files(cifar_file, CIFAR_MODEL_TABLES),
    log:
        training_log("cifar10_train", "fd{M}_seed{S}"),
    benchmark:
        out("benchmarks/cifar10_train/fd{M}_seed{S}.tsv")
    wildcard_constraints:
        M=cifar_train_m("seed"),
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        gpu=int(CIFAR_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 12000),
        runtime=cifar_train_runtime,
    params:
        model_cfg=cifar_model_settings(lambda wc: [int(wc.S)]),
        train_cfg=training_settings("cifar10"),
        folder=lambda wc, input: str(Path(input[0]).parent),
        run_config=run_config("cifar10"),
        checkpoint=lambda wc: cifar_file("checkpoint.pt", **wc),
    script:
        "../workflow/scripts/cifar_train.py"


# On a GPU one job trains every seed of an M as one stacked network (cifar10.seeds_per_job),
# or one job every seed of every M (cifar10.stack_across_m): the same files, each model as if
# trained alone.
ruleorder: cifar10_train_seeds > cifar10_train > cifar10_train_all


use rule cifar10_train as cifar10_train_seeds with:
    output:
        **trained_files(cifar_seed_files, CIFAR_MODEL_TABLES),
    log:
        training_log("cifar10_train", "fd{M}_seeds"),
    benchmark:
        out("benchmarks/cifar10_train/fd{M}_seeds.tsv")
    wildcard_constraints:
        M=cifar_train_m("seeds"),
    resources:
        gpu=int(CIFAR_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 16000),
        runtime=lambda wc, attempt: cifar_train_runtime(wc, attempt, len(CIFAR_SEEDS)),
    params:
        model_cfg=cifar_model_settings(lambda wc: CIFAR_SEEDS),
        checkpoint=lambda wc: out(f"cifar10/fd{wc.M}/checkpoint.pt"),


use rule cifar10_train as cifar10_train_all with:
    output:
        **trained_files(cifar_all_files, CIFAR_MODEL_TABLES),
    log:
        training_log("cifar10_train", "all_m"),
    benchmark:
        out("benchmarks/cifar10_train/all_m.tsv")
    resources:
        gpu=int(CIFAR_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 24000),
        runtime=lambda wc, attempt: cifar_train_runtime(
            wc, attempt, len(cifar_all_files(""))
        ),
    params:
        model_cfg=cifar_model_settings(
            lambda wc: CIFAR_SEEDS, lambda wc: CIFAR["rep_dims"]
        ),
        checkpoint=out("cifar10/checkpoint_all_m.pt"),


rule cifar10_pairs:
    input:
        **model_tables(cifar_seed_files, CIFAR_MODEL_TABLES),
    output:
        out("cifar10/fd{M}/pairs.parquet"),
    log:
        out("logs/cifar10_pairs/fd{M}.log"),
    benchmark:
        out("benchmarks/cifar10_pairs/fd{M}.tsv")
    conda:
        "../envs/measures.yaml"
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 4000),
        runtime=10,
    params:
        seeds=CIFAR_SEEDS,
        measures=pair_measures(),
    script:
        "../workflow/scripts/cifar_seed_pairs.py"


rule cifar10_reps_figure:
    input:
        embeddings=cifar_file("embeddings_test.parquet", M=2),
        unembeddings=cifar_file("unembeddings.parquet", M=2),
        meta=f"{cifar_folder()}/batches.meta",
    output:
        **figure(
            "cifar10_reps_seed{S}",
            "cifar10_reps",
            "CIFAR-10",
            subcategory="App. F.5: two-dimensional representations",
            labels={"seed": "{S}"},
        ),
    log:
        out("logs/cifar10_reps_figure_seed{S}.log"),
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/cifar_reps_figure.py"


rule cifar10_comparison_figure:
    input:
        embeddings=[
            cifar_file("embeddings_test.parquet", M=2, S=s)
            for s in CIFAR["comparison_seeds"]
        ],
        meta=f"{cifar_folder()}/batches.meta",
    output:
        **figure(
            "cifar10_embedding_comparison_{a}_{b}",
            "cifar10_comparison",
            "CIFAR-10",
            subcategory="Fig. 3 (left): same loss, different embeddings",
        ),
    log:
        out("logs/cifar10_comparison_figure_{a}_{b}.log"),
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/cifar_seed_comparison_figure.py"


rule cifar10_loss_diff_figure:
    input:
        [out(f"cifar10/fd{m}/pairs.parquet") for m in CIFAR["rep_dims"]],
    output:
        **figure(
            "loss_diff_vs_mcca",
            "loss_diff",
            "CIFAR-10",
            subcategory="Fig. 5: loss difference vs m_CCA",
            labels={"test losses": "as the paper (train-mode BatchNorm)"},
        ),
        **figure(
            "loss_diff_vs_mcca_eval",
            "loss_diff_eval",
            "CIFAR-10",
            prefix="eval_",
            subcategory="Fig. 5: loss difference vs m_CCA",
            labels={"test losses": "eval mode (running statistics)"},
        ),
    log:
        out("logs/cifar10_loss_diff_figure.log"),
    conda:
        "../envs/figures.yaml"
    params:
        rep_dims=CIFAR["rep_dims"],
        standin=CIFAR["standin"],
    script:
        "../workflow/scripts/cifar_loss_diff_figure.py"


rule cifar10_all:
    input:
        [out(f"cifar10/fd{m}/pairs.parquet") for m in CIFAR["rep_dims"]],
        cifar_figures(),
        figure_files("loss_diff_vs_mcca"),
        figure_files("loss_diff_vs_mcca_eval"),
