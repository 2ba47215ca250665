# Roeder et al. (2021)'s contrastive experiment (§5.2, App. A.3, Fig. 3), beyond the paper.
include: "helpers/roeder_cpc.smk"


rule roeder_cpc_train:
    input:
        cpc_data_files(),
    output:
        **trained_files(cpc_seed_files),
        snapshots=cpc_file("snapshots.parquet"),
        examples=cpc_file("examples.npz"),
    log:
        training_log("roeder_cpc_train", "{C}"),
    benchmark:
        out("benchmarks/roeder_cpc_train/{C}.tsv")
    wildcard_constraints:
        C=cpc_configuration_pattern(),
    priority: lambda wc: training_jobs.training_priority(CPC_CONFIGS[wc.C].width)
    conda:
        "../envs/torch.yaml"
    threads: CPC["threads"]
    resources:
        mem_mb=training_jobs.job_mem_mb(config, cpc_mem_mb()),
        runtime=cpc_runtime,
        gpu=int(CPC_GPU),
    params:
        model_cfg=cpc_model_settings,
        train_cfg=cpc_training,
        snapshots=cpc_snapshots,
        patience=CPC["patience"],
        device=CPC["device"],
        cifar_folder=cpc_cifar_folder,
        checkpoint=lambda wc: cpc_file("checkpoint.pt", wc.C),
        run_config=run_config("roeder"),
    script:
        "../workflow/scripts/roeder_cpc_train.py"


rule roeder_cpc_pairs:
    input:
        **cpc_pairs_files(),
    output:
        out("roeder_cpc/pairs.parquet"),
    log:
        out("logs/roeder_cpc_pairs.log"),
    benchmark:
        out("benchmarks/roeder_cpc_pairs.tsv")
    conda:
        "../envs/measures.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 2000),
        runtime=30,
    params:
        configurations=[asdict(c) for c in CPC_CONFIGS.values()],
        seeds=CPC_SEEDS,
        measures=cpc_pair_measures(),
    script:
        "../workflow/scripts/roeder_cpc_pairs.py"


rule roeder_cpc_figure:
    input:
        pairs=out("roeder_cpc/pairs.parquet"),
        snapshots=cpc_file("snapshots.parquet", CPC_BASE),
        examples=cpc_file("examples.npz", CPC_BASE),
        untrained=[cpc_file("snapshots.parquet", C) for C in CPC_CONFIGS],
    output:
        **figure(
            "roeder_cpc",
            "roeder_cpc",
            "Beyond the paper",
            subcategory="Roeder et al. 2021, Fig. 3",
        ),
        table=out("tables/roeder_cpc.csv"),
        summary=report(
            out("tables/roeder_cpc_summary.csv"),
            caption="../report/roeder_cpc_summary.rst",
            category="Beyond the paper",
            subcategory="Roeder et al. 2021, Fig. 3",
        ),
    log:
        out("logs/roeder_cpc_figure.log"),
    conda:
        "../envs/figures.yaml"
    params:
        cpc=CPC,
        configurations=list(CPC_CONFIGS),
    script:
        "../workflow/scripts/roeder_cpc_figure.py"


rule roeder_cpc_all:
    input:
        cpc_targets(),
