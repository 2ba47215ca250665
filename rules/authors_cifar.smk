# The authors' CIFAR-10 fd2 ResNet-18s (with CIFAR-10 and M = 2 in this run): from their Zenodo
# record or a folder, extracted as our CIFAR models are, compared, and our seed s beside theirs.
include: "helpers/authors_cifar.smk"


rule authors_cifar_download:
    output:
        authors_cifar_checkpoints(f"{AUTHORS['resources']}/cifar10"),
    log:
        out("logs/authors_cifar_download.log"),
    conda:
        "../envs/torch.yaml"
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 1000),
        runtime=60,
    params:
        record=AUTHORS["cifar_record"],
    script:
        "../workflow/scripts/authors_cifar_download.py"


rule authors_cifar_standin:
    output:
        authors_cifar_checkpoints(f"{AUTHORS_STANDIN}/cifar10"),
    log:
        out("logs/authors_cifar_standin.log"),
    priority: AT_ONCE
    conda:
        "../envs/torch.yaml"
    params:
        seeds=CIFAR_SEEDS,
        base_width=CIFAR["base_width"],
    script:
        "../workflow/scripts/authors_cifar_standin.py"


rule authors_cifar_extract:
    input:
        checkpoints=authors_cifar_checkpoints(),
        data=cifar_data_files(),
    output:
        **model_tables(authors_cifar_files, CIFAR_MODEL_TABLES),
    log:
        out("logs/authors_cifar_extract.log"),
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        gpu=int(CIFAR_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 8000),
        runtime=cifar_extract_runtime,
    params:
        folder=lambda wc, input: str(Path(input.data[0]).parent),
        eval_batch_size=CIFAR["eval_batch_size"],
        device=CIFAR["device"],
        run_config=run_config("authors_models"),
    script:
        "../workflow/scripts/authors_extract_resnets.py"


use rule cifar10_pairs as authors_cifar_pairs with:
    input:
        **model_tables(authors_cifar_files, CIFAR_MODEL_TABLES),
    output:
        out("authors/cifar10/fd2/pairs.parquet"),
    log:
        out("logs/authors_cifar_pairs.log"),
    benchmark:
        out("benchmarks/authors_cifar_pairs.tsv")


use rule ours_vs_authors as ours_vs_authors_cifar with:
    input:
        unpack(ours_vs_authors_cifar_inputs),
    output:
        csv=report(
            out("tables/ours_vs_authors_cifar.csv"),
            caption="../report/ours_vs_authors_cifar.rst",
            category="The authors' models",
        ),
        md=out("tables/ours_vs_authors_cifar.md"),
    log:
        out("logs/ours_vs_authors_cifar.log"),
    params:
        configurations=[(10, CIFAR["g_width"])],
        seeds=CIFAR_SEEDS,


# Their fd2 models drawn as ours are (App. F.5, Fig. 3 left), on a CPU too, and ours beside theirs
# seed by seed.
use rule cifar10_reps_figure as authors_cifar_reps_figure with:
    input:
        embeddings=out(f"{AUTHORS_CIFAR_DIR}/embeddings_test.parquet"),
        unembeddings=out(f"{AUTHORS_CIFAR_DIR}/unembeddings.parquet"),
        meta=f"{cifar_folder()}/batches.meta",
    output:
        **figure(
            "authors_cifar10_reps_seed{S}",
            "authors_cifar10_reps",
            "The authors' models",
            subcategory="CIFAR-10 fd2, their checkpoints: App. F.5",
            labels={"seed": "{S}"},
        ),
    log:
        out("logs/authors_cifar_reps_figure_seed{S}.log"),


use rule cifar10_comparison_figure as authors_cifar_comparison_figure with:
    input:
        embeddings=[
            out(f"{AUTHORS_CIFAR_DIR.format(S=s)}/embeddings_test.parquet")
            for s in CIFAR["comparison_seeds"]
        ],
        meta=f"{cifar_folder()}/batches.meta",
    output:
        **figure(
            "authors_cifar10_embedding_comparison_{a}_{b}",
            "authors_cifar10_comparison",
            "The authors' models",
            subcategory="CIFAR-10 fd2, their checkpoints: Fig. 3 (left)",
        ),
    log:
        out("logs/authors_cifar_comparison_figure_{a}_{b}.log"),
    params:
        labels=lambda wc: (f"their seed {wc.a}", f"their seed {wc.b}"),


use rule cifar10_comparison_figure as ours_beside_authors_cifar_figure with:
    input:
        embeddings=[
            cifar_file("embeddings_test.parquet", M=2),
            out(f"{AUTHORS_CIFAR_DIR}/embeddings_test.parquet"),
        ],
        meta=f"{cifar_folder()}/batches.meta",
    output:
        **figure(
            "ours_beside_authors_cifar10_seed{S}",
            "ours_beside_authors_cifar10",
            "The authors' models",
            subcategory="CIFAR-10 fd2: our seed s beside theirs",
            labels={"seed": "{S}"},
        ),
    log:
        out("logs/ours_beside_authors_cifar_figure_seed{S}.log"),
    params:
        labels=lambda wc: (f"ours, seed {wc.S}", f"theirs, seed {wc.S}"),


rule authors_cifar_all:
    input:
        rules.ours_vs_authors_cifar.output,
        out("authors/cifar10/fd2/pairs.parquet"),
        authors_cifar_figures(),


# Their models alone, for a machine that cannot train ours (no GPU): no model of ours needed.
rule authors_cifar_theirs:
    input:
        out("authors/cifar10/fd2/pairs.parquet"),
        authors_cifar_figures(theirs_only=True),
