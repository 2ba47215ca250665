# The Platonic Representation Hypothesis' own study (Huh et al. 2024, Fig. 3): every layer of
# language models on the captions and of vision encoders on the images of the same pairs, one
# extraction job per model, the matrix of best-layer-pair alignments beside its null, drawn.
include: "helpers/prh.smk"


rule prh_standins:
    output:
        directory(prh_standin_folder()),
    log:
        out("logs/prh_standins.log"),
    benchmark:
        out("benchmarks/prh_standins.tsv")
    priority: AT_ONCE
    conda:
        "../envs/lm.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 4000),
        runtime=20,
    params:
        pairs=PRH["pairs"],
        pairs_standin=PRH_PAIRS_STANDIN,
        language=PRH_STANDINS["language"],
        vision=PRH_STANDINS["vision"],
    script:
        "../workflow/scripts/prh_standins.py"


rule prh_extract:
    input:
        prh_extract_inputs,
    output:
        directory(prh_features()),
    log:
        training_log("prh_extract", "{modality}-{name}"),
    benchmark:
        out("benchmarks/prh_extract/{modality}-{name}.tsv")
    wildcard_constraints:
        modality="language|vision",
        name=prh_names(),
    conda:
        "../envs/lm.yaml"
    threads: 1
    resources:
        gpu=int(PRH_EXTRACT_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 16000),
        runtime=60,
    params:
        source=lambda wc: prh_source(wc.modality, wc.name),
        pairs=prh_pairs(),
        settings={k: PRH[k] for k in ("padding", "batch_size", "device")},
        run_config=lambda wc: prh_run_config(wc.modality, wc.name),
    script:
        "../workflow/scripts/prh_extract.py"


rule prh_alignment:
    input:
        [prh_features(m, n) for m, n in prh_model_keys()],
    output:
        table=out("prh/alignment.parquet"),
        csv=out("tables/prh_study.csv"),
    log:
        out("logs/prh_alignment.log"),
    benchmark:
        out("benchmarks/prh_alignment.tsv")
    conda:
        "../envs/measures.yaml"
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 16000),
        runtime=120,
    params:
        names=[n for _, n in prh_model_keys()],
        settings={k: PRH[k] for k in PRH_ALIGNMENT_KEYS},
        null=pair_measures().get("null"),
        run_config=prh_run_config(),
    script:
        "../workflow/scripts/prh_alignment.py"


rule prh_figure:
    input:
        out("prh/alignment.parquet"),
    output:
        **figure(
            "prh_study", "prh_study", "Beyond the paper", subcategory="PRH's study"
        ),
        **figure(
            "prh_study_matrix",
            "prh_study_matrix",
            "Beyond the paper",
            prefix="matrix_",
            subcategory="PRH's study",
        ),
    log:
        out("logs/prh_figure.log"),
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/prh_figure.py"


rule prh_all:
    input:
        out("prh/alignment.parquet"),
        out("tables/prh_study.csv"),
        figure_files("prh_study"),
        figure_files("prh_study_matrix"),
