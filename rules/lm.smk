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
    conda:
        "../envs/measures.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=20,
    params:
        data=LM["data"],
        run_config=run_config("lm"),
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
        mem_mb=4000,
        runtime=lm_runtime,
        gpu=int(LM_GPU),
    params:
        model_cfg=lm_model_settings(),
        train_cfg=LM["training"],
        positions=LM["positions"],
        device=LM["device"],
        checkpoint=lm_file("checkpoint.pt"),
        run_config=run_config("lm"),
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
        mem_mb=8000,
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


rule lm_all:
    input:
        rules.lm_pairs.output,
        rules.lm_figure.output,
