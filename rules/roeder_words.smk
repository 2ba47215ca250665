# Roeder et al. (2021)'s Fig. 1 (App. A.1): log-bilinear word models (Mnih & Teh 2012) with 2-D
# word vectors at several seeds, one mapped onto another by least squares; beyond the paper.
include: "helpers/roeder_words.smk"


rule roeder_words_train:
    input:
        words_inputs(),
    output:
        **trained_files(words_seed_files),
        vocabulary=words_file("vocabulary.csv"),
    log:
        training_log("roeder_words_train"),
    benchmark:
        out("benchmarks/roeder_words_train.tsv")
    conda:
        "../envs/torch.yaml"
    threads: WORDS["threads"]
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 3000),
        runtime=roeder_words_runtime,
        gpu=int(WORDS_GPU),
    params:
        model_cfg=words_model_settings(),
        train_cfg=words_training(),
        device=WORDS["device"],
        checkpoint=words_file("checkpoint.pt"),
        run_config=words_run_config(),
    script:
        "../workflow/scripts/roeder_words_train.py"


rule roeder_words_pairs:
    input:
        **model_tables(words_seed_files),
    output:
        report(
            out("tables/roeder_words_pairs.csv"),
            caption="../report/roeder_words_pairs.rst",
            category="Beyond the paper",
            subcategory="Roeder et al. 2021, Fig. 1",
        ),
    log:
        out("logs/roeder_words_pairs.log"),
    benchmark:
        out("benchmarks/roeder_words_pairs.tsv")
    conda:
        "../envs/measures.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 2000),
        runtime=10,
    params:
        seeds=WORDS_SEEDS,
        rep_dim=WORDS["rep_dim"],
        measures=pair_measures(),
    script:
        "../workflow/scripts/roeder_words_pairs.py"


rule roeder_words_figure:
    input:
        vocabulary=words_file("vocabulary.csv"),
        embeddings=words_fit_files("embeddings.parquet"),
        unembeddings=words_fit_files("unembeddings.parquet"),
    output:
        **figure(
            "roeder_words",
            "roeder_words",
            "Beyond the paper",
            subcategory="Roeder et al. 2021, Fig. 1",
        ),
        table=out("tables/roeder_words_fit.csv"),
    log:
        out("logs/roeder_words_figure.log"),
    benchmark:
        out("benchmarks/roeder_words_figure.tsv")
    conda:
        "../envs/figures.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 1000),
        runtime=10,
    params:
        seeds=WORDS["fit_seeds"],
        shown=WORDS["shown"],
        rep_dim=WORDS["rep_dim"],
    script:
        "../workflow/scripts/roeder_words_figure.py"


rule roeder_words_all:
    input:
        figure_files("roeder_words"),
        out("tables/roeder_words_pairs.csv"),
        out("tables/roeder_words_fit.csv"),
