# Roeder et al. (2021)'s simulation study (§5.1, App. A.2, Fig. 2), beyond the paper.
include: "helpers/roeder.smk"


rule roeder_train:
    output:
        **trained_files(roeder_seed_files),
        snapshots=roeder_file("snapshots.parquet"),
    log:
        training_log("roeder_train", "noise{D}"),
    benchmark:
        out("benchmarks/roeder_train/noise{D}.tsv")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 3000),
        runtime=roeder_runtime,
    params:
        model_cfg=roeder_model_settings,
        train_cfg=roeder_training,
        snapshots=roeder_snapshots(),
        measures=pair_measures(snapshots=True),
        run_config=run_config("roeder"),
    script:
        "../workflow/scripts/roeder_train.py"


rule roeder_data_figure:
    output:
        **figure(
            "roeder_data",
            "roeder_data",
            "Beyond the paper",
            subcategory="Roeder et al. 2021, Fig. 2",
        ),
    log:
        out("logs/roeder_data_figure.log"),
    conda:
        "../envs/figures.yaml"
    params:
        n_train=ROEDER["n_train"],
        seed=ROEDER["train_data_seed"],
        num_classes=ROEDER["num_classes"],
    script:
        "../workflow/scripts/roeder_data_figure.py"


rule roeder_dynamics_figure:
    input:
        snapshots=[roeder_file("snapshots.parquet", D) for D in ROEDER_NOISE],
    output:
        **figure(
            "roeder_dynamics",
            "roeder_dynamics",
            "Beyond the paper",
            subcategory="Roeder et al. 2021, Fig. 2",
        ),
        table=out("tables/roeder_dynamics.csv"),
    log:
        out("logs/roeder_dynamics_figure.log"),
    conda:
        "../envs/figures.yaml"
    params:
        noise_dims=ROEDER_NOISE,
    script:
        "../workflow/scripts/roeder_dynamics_figure.py"


rule roeder_linear_fit:
    input:
        embeddings=[e for D in ROEDER_NOISE for e in roeder_fit_embeddings(D)],
    output:
        **figure(
            "roeder_linear_fit",
            "roeder_linear_fit",
            "Beyond the paper",
            subcategory="Roeder et al. 2021, Fig. 2",
        ),
        table=out("tables/roeder_linear_fit.csv"),
    log:
        out("logs/roeder_linear_fit.log"),
    conda:
        "../envs/figures.yaml"
    params:
        titles=[
            f"Roeder, {D} noise dims, seeds {ROEDER['fit_seeds'][0]} and {ROEDER['fit_seeds'][1]}"
            for D in ROEDER_NOISE
        ],
        suptitle="Roeder et al. Fig. 2c: one seed's f mapped linearly onto another's",
    script:
        "../workflow/scripts/roeder_linear_fit_figure.py"


use rule roeder_linear_fit as synthetic_linear_fit with:
    input:
        embeddings=neurips_fit_embeddings(),
    output:
        **figure(
            f"synthetic_linear_fit_{NEURIPS_FIT_NAME}",
            "synthetic_linear_fit",
            "Beyond the paper",
            subcategory="Roeder et al. 2021, Fig. 2",
        ),
        table=out(f"tables/synthetic_linear_fit_{NEURIPS_FIT_NAME}.csv"),
    log:
        out(f"logs/synthetic_linear_fit_{NEURIPS_FIT_NAME}.log"),
    params:
        titles=[
            f"NeurIPS MLP, K = {NEURIPS_FIT[0]}, width {NEURIPS_FIT[1]}, seeds "
            f"{ROEDER['fit_seeds'][0]} and "
            f"{ROEDER['fit_seeds'][1]}"
        ],
        suptitle="Roeder et al.'s Fig. 2c on the NeurIPS synthetic models",


rule roeder_all:
    input:
        figure_files("roeder_data"),
        figure_files("roeder_dynamics"),
        figure_files("roeder_linear_fit"),
        (
            figure_files(f"synthetic_linear_fit_{NEURIPS_FIT_NAME}")
            if neurips_fit_available()
            else []
        ),
        rules.roeder_words_all.input if WORDS["enabled"] else [],
        rules.roeder_cpc_all.input,
