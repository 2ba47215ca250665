# Beyond the paper: seeds of one causal language model compared pair by pair. Small GPTs trained
# here on the standard library's sources (no download) with a BPE tokenizer trained on them; f
# and g from repdist.extract.causal_lm_representations; the pairs as the synthetic seeds'.
include: "helpers/lm.smk"


rule lm_tokens:
    output:
        tokenizer=out("lm/tokenizer.json"),
        train=out("lm/tokens_train.npz"),
        eval=out("lm/tokens_eval.npz"),
    log:
        out("logs/lm_tokens.log"),
    benchmark:
        out("benchmarks/lm_tokens.tsv")
    priority: AT_ONCE
    conda:
        "../envs/measures.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 4000),
        runtime=20,
    params:
        data=LM["data"],
        run_config=lm_seeds_run_config(),
    script:
        "../workflow/scripts/lm_tokens.py"


rule lm_train:
    input:
        tokenizer=rules.lm_tokens.output.tokenizer,
        train=rules.lm_tokens.output.train,
        eval=rules.lm_tokens.output.eval,
    output:
        model=lm_file("model.pt"),
        metrics=lm_file("metrics.json"),
        embeddings=lm_file("embeddings.parquet"),
        unembeddings=lm_file("unembeddings.parquet"),
    log:
        training_log("lm_train", "seed{S}"),
    benchmark:
        out("benchmarks/lm_train/seed{S}.tsv")
    conda:
        "../envs/torch.yaml"
    threads: LM["threads"]
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 4000),
        runtime=lm_runtime,
        gpu=int(LM_GPU),
    params:
        model_cfg=lm_model_settings(),
        train_cfg=LM["training"],
        positions=LM["positions"],
        device=LM["device"],
        checkpoint=lm_file("checkpoint.pt"),
        run_config=lm_seeds_run_config(),
    script:
        "../workflow/scripts/lm_train.py"


rule lm_pairs:
    input:
        **model_tables(lm_seed_files),
    output:
        out("lm/pairs.parquet"),
    log:
        out("logs/lm_pairs.log"),
    benchmark:
        out("benchmarks/lm_pairs.tsv")
    conda:
        "../envs/measures.yaml"
    threads: 1
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 8000),
        runtime=60,
    params:
        seeds=LM_SEEDS,
        measures=lm_measures(),
    script:
        "../workflow/scripts/seed_pairs.py"


rule lm_figure:
    input:
        out("lm/pairs.parquet"),
    output:
        **figure(
            "lm_seed_pairs",
            "lm_seed_pairs",
            "Beyond the paper",
            subcategory="Language models: seeds",
        ),
        table=report(
            out("tables/lm_seed_pairs.csv"),
            caption="../report/lm_seed_pairs_table.rst",
            category="Beyond the paper",
            subcategory="Language models: seeds",
        ),
    log:
        out("logs/lm_figure.log"),
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/lm_figure.py"


rule lm_seed_layers:
    input:
        model=lm_file("model.pt"),
        embeddings=lm_file("embeddings.parquet"),
        eval=rules.lm_tokens.output.eval,
    output:
        directory(lm_file("layers")),
    log:
        out("logs/lm_seed_layers/seed{S}.log"),
    benchmark:
        out("benchmarks/lm_seed_layers/seed{S}.tsv")
    conda:
        "../envs/torch.yaml"
    threads: LM["threads"]
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 4000),
        runtime=20,
    params:
        model_cfg=lm_model_settings(),
        positions=LM["positions"],
        layers=LM["layers"],
        run_config=lm_seeds_run_config("layers"),
    script:
        "../workflow/scripts/lm_seed_layers.py"


# Outside models (lm.models): stand-ins made here, the contexts cut once, each model extracted
# once (f, g and its layers), every pair compared (the one pairs loop) and drawn.
rule lm_standin:
    output:
        directory(lm_standin_folder()),
    log:
        out("logs/lm_standin/{name}.log"),
    wildcard_constraints:
        name=lm_model_names(standins=True),
    priority: AT_ONCE
    conda:
        "../envs/lm.yaml"
    params:
        spec=lambda wc: LM_STANDINS[wc.name],
        data=LM["data"],
        context=LM["text"]["context"],
    script:
        "../workflow/scripts/lm_standin.py"


rule lm_models_tokens:
    input:
        lm_models_needs(LM_MODEL_NAMES[:1]),
    output:
        out("lm_models/contexts.npz"),
    log:
        out("logs/lm_models_tokens.log"),
    benchmark:
        out("benchmarks/lm_models_tokens.tsv")
    priority: AT_ONCE
    conda:
        "../envs/lm.yaml"
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 4000),
        runtime=20,
    params:
        source=lm_model_source(LM_MODEL_NAMES[0]) if LM_MODELS_ON else None,
        corpus=LM["corpus"],
        data=LM["data"],
        text=LM["text"],
        run_config=lm_models_run_config(),
    script:
        "../workflow/scripts/lm_models_tokens.py"


rule lm_models_extract:
    input:
        lm_model_inputs,
    output:
        embeddings=lm_model_file("embeddings.parquet"),
        unembeddings=lm_model_file("unembeddings.parquet"),
        metrics=lm_model_file("metrics.json"),
        layers=directory(lm_model_file("layers")),
    log:
        training_log("lm_extract", "{name}"),
    benchmark:
        out("benchmarks/lm_extract/{name}.tsv")
    wildcard_constraints:
        name=lm_model_names(),
    conda:
        "../envs/lm.yaml"
    threads: LM["threads"]
    resources:
        gpu=int(LM_EXTRACT_GPU),
        mem_mb=training_jobs.job_mem_mb(config, 16000),
        runtime=60,
    params:
        source=lambda wc: lm_model_source(wc.name),
        positions=LM["positions"],
        layers=LM["layers"],
        device=LM["extract_device"],
        batch_size=LM["text"]["batch_size"],
        run_config=lambda wc: lm_models_run_config(wc.name),
    script:
        "../workflow/scripts/lm_models_extract.py"


rule lm_models_pairs:
    input:
        **model_tables(lm_models_files),
    output:
        out("lm_models/pairs.parquet"),
    log:
        out("logs/lm_models_pairs.log"),
    benchmark:
        out("benchmarks/lm_models_pairs.tsv")
    conda:
        "../envs/measures.yaml"
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 16000),
        runtime=60,
    params:
        names=LM_MODEL_NAMES,
        measures={**pair_measures(), "num_samples": None},
    script:
        "../workflow/scripts/lm_models_pairs.py"


rule lm_models_figure:
    input:
        out("lm_models/pairs.parquet"),
    output:
        **figure(
            "lm_models_pairs",
            "lm_models_pairs",
            "Beyond the paper",
            subcategory="Language models: outside models",
        ),
        table=report(
            out("tables/lm_models_pairs.csv"),
            caption="../report/lm_models_pairs_table.rst",
            category="Beyond the paper",
            subcategory="Language models: outside models",
        ),
    log:
        out("logs/lm_models_figure.log"),
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/lm_figure.py"


# Layer by layer, for the seeds (branch lm) and for lm.models (branch lm_models).
rule lm_layers:
    input:
        lm_layer_inputs,
    output:
        out("{branch}/layers.parquet"),
        out("{branch}/layers_best.parquet"),
    log:
        out("logs/{branch}_layers.log"),
    benchmark:
        out("benchmarks/{branch}_layers.tsv")
    wildcard_constraints:
        branch="lm|lm_models",
    conda:
        "../envs/measures.yaml"
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 8000),
        runtime=60,
    params:
        names=lm_layer_names,
        settings=LM_LAYER_SETTINGS,
        null=pair_measures().get("null"),
    script:
        "../workflow/scripts/lm_layers.py"


rule lm_layers_figure:
    input:
        out("{branch}/layers.parquet"),
    output:
        **figure(
            "{branch}_layers",
            "lm_layers",
            "Beyond the paper",
            subcategory="Language models: layer by layer",
            labels={"models": "{branch}"},
        ),
        table=report(
            out("tables/{branch}_layers.csv"),
            caption="../report/lm_layers_table.rst",
            category="Beyond the paper",
            subcategory="Language models: layer by layer",
            labels={"models": "{branch}", "figure": "table"},
        ),
    log:
        out("logs/{branch}_layers_figure.log"),
    wildcard_constraints:
        branch="lm|lm_models",
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/lm_layers_figure.py"


rule lm_all:
    input:
        rules.lm_pairs.output,
        rules.lm_figure.output,
        out("lm/layers.parquet"),
        figure_files("lm_layers"),
        out("tables/lm_layers.csv"),


rule lm_models_all:
    input:
        out("lm_models/pairs.parquet"),
        figure_files("lm_models_pairs"),
        out("tables/lm_models_pairs.csv"),
        out("lm_models/layers.parquet"),
        figure_files("lm_models_layers"),
        out("tables/lm_models_layers.csv"),
