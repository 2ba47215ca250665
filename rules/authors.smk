# The authors' own SmallMLP checkpoints: fetched (or read from a folder) and sha256-verified,
# extracted into the same files as ours, compared as ours are, and our seed s beside theirs.
rule authors_download:
    output:
        [f"{AUT['resources']}/{n}" for n in read_checksums(AUTHORS_CHECKSUMS)],
    log:
        out("logs/authors_download.log"),
    conda:
        "../envs/torch.yaml"
    resources:
        mem_mb=1000,
        runtime=20,
    params:
        url=AUT["url"],
        checksums=str(AUTHORS_CHECKSUMS),
    script:
        "../workflow/scripts/authors_download.py"


rule authors_standin:
    output:
        [
            authors_checkpoint(k, w, s, t, AUT_STANDIN)
            for k, w in authors_configs()
            for s in AUT["seeds"]
            for t in (False, True)
        ],
        checksums=f"{AUT_STANDIN}/SHA256SUMS.tsv",
    log:
        out("logs/authors_standin.log"),
    conda:
        "../envs/torch.yaml"
    params:
        configurations=authors_configs(),
        seeds=AUT["seeds"],
        train_cfg=training_settings(
            "synthetic", protocol="clean", steps=50, checkpoint_every=0
        ),
        n_train=SYN["n_train"],
        train_data_seed=SYN["train_data_seed"],
    script:
        "../workflow/scripts/authors_standin.py"


rule authors_extract:
    input:
        checkpoints=lambda wc: [authors_checkpoint(wc.K, wc.W, s) for s in AUT["seeds"]],
        checksums=authors_checksum_file(),
    output:
        embeddings=authors_seed_files("embeddings.parquet"),
        unembeddings=authors_seed_files("unembeddings.parquet"),
        metrics=authors_seed_files("metrics.json"),
    log:
        out("logs/authors_extract/K{K}_w{W}.log"),
    wildcard_constraints:
        K=r"\d+",
        W=r"\d+",
    conda:
        "../envs/torch.yaml"
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        n_test=SYN["n_test"],
        test_data_seed=SYN["test_data_seed"],
        run_config=lambda wc: {"authors_models": AUT, "seed": config["seed"]},
    script:
        "../workflow/scripts/authors_extract.py"


rule authors_pairs:
    input:
        embeddings=authors_seed_files("embeddings.parquet"),
        unembeddings=authors_seed_files("unembeddings.parquet"),
        metrics=authors_seed_files("metrics.json"),
    output:
        out(f"{AUT_DIR}/pairs.parquet"),
    log:
        out("logs/authors_pairs/K{K}_w{W}.log"),
    wildcard_constraints:
        K=r"\d+",
        W=r"\d+",
    priority: 1000000
    conda:
        "../envs/measures.yaml"
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        seeds=AUT["seeds"],
        measures=pair_measures(),
    script:
        "../workflow/scripts/synthetic_pairs.py"


rule authors_initialisation:
    input:
        untrained=authors_untrained_files(),
        checksums=authors_checksum_file(),
    output:
        csv=report(
            out("tables/authors_initialisation.csv"),
            caption="../report/authors_initialisation.rst",
            category="The authors' models",
        ),
    log:
        out("logs/authors_initialisation.log"),
    conda:
        "../envs/torch.yaml"
    script:
        "../workflow/scripts/authors_initialisation.py"


rule ours_vs_authors:
    input:
        unpack(ours_vs_authors_inputs),
    output:
        csv=report(
            out("tables/ours_vs_authors.csv"),
            caption="../report/ours_vs_authors.rst",
            category="The authors' models",
        ),
        md=out("tables/ours_vs_authors.md"),
    log:
        out("logs/ours_vs_authors.log"),
    conda:
        "../envs/measures.yaml"
    params:
        configurations=authors_configs(),
        seeds=AUT["seeds"],
        measures=pair_measures(),
    script:
        "../workflow/scripts/ours_vs_authors.py"


rule authors_width_figure:
    input:
        [out(f"{AUT_DIR.format(K=k, W=w)}/pairs.parquet") for k, w in authors_configs()],
    output:
        pdf=out("figures/d_llv_vs_width_K{group}_authors.pdf"),
        png=report(
            out("figures/d_llv_vs_width_K{group}_authors.png"),
            caption="../report/width_authors.rst",
            category="The authors' models",
        ),
        summary=out("tables/d_llv_vs_width_K{group}_authors.csv"),
    log:
        out("logs/authors_width_figure_K{group}.log"),
    wildcard_constraints:
        group=r"\d+(_\d+)*",
    conda:
        "../envs/figures.yaml"
    params:
        threshold=SYN["accuracy_threshold"],
        min_seeds=AUT["min_seeds"],
        seeds=AUT["seeds"],
        title="The authors' models",
    script:
        "../workflow/scripts/synthetic_width_figure.py"


rule authors_bound_figure:
    input:
        [out(f"{AUT_DIR.format(K=k, W=w)}/pairs.parquet") for k, w in authors_configs()],
    output:
        pdf=out("figures/d_llv_vs_d_fg_trained_synthetic_authors.pdf"),
        png=report(
            out("figures/d_llv_vs_d_fg_trained_synthetic_authors.png"),
            caption="../report/trained_bound_authors.rst",
            category="The authors' models",
        ),
    log:
        out("logs/authors_bound_figure.log"),
    conda:
        "../envs/figures.yaml"
    params:
        rep_dim=2,
        title="The authors' trained models",
    script:
        "../workflow/scripts/synthetic_bound_figure.py"


rule authors_all:
    input:
        rules.ours_vs_authors.output,
        rules.authors_initialisation.output,
        expand(
            out("figures/d_llv_vs_width_K{group}_authors.{ext}"),
            group=AUTHORS_GROUP,
            ext=["pdf", "png"],
        ),
        expand(
            out("figures/d_llv_vs_d_fg_trained_synthetic_authors.{ext}"),
            ext=["pdf", "png"],
        ),


rule authors_cifar_download:
    output:
        authors_cifar_checkpoints(f"{AUT['resources']}/cifar10"),
    log:
        out("logs/authors_cifar_download.log"),
    conda:
        "../envs/torch.yaml"
    resources:
        mem_mb=1000,
        runtime=60,
    params:
        record=AUT["cifar_record"],
    script:
        "../workflow/scripts/authors_cifar_download.py"


rule authors_cifar_standin:
    output:
        authors_cifar_checkpoints(f"{AUT_STANDIN}/cifar10"),
    log:
        out("logs/authors_cifar_standin.log"),
    conda:
        "../envs/torch.yaml"
    params:
        seeds=CIF_SEEDS,
        base_width=CIF["base_width"],
    script:
        "../workflow/scripts/authors_cifar_standin.py"


rule authors_cifar_extract:
    input:
        checkpoints=authors_cifar_checkpoints(),
        data=cifar_data_files(),
    output:
        embeddings_test=authors_cifar_files("embeddings_test.parquet"),
        embeddings_train=authors_cifar_files("embeddings_train.parquet"),
        unembeddings=authors_cifar_files("unembeddings.parquet"),
        metrics=authors_cifar_files("metrics.json"),
    log:
        out("logs/authors_cifar_extract.log"),
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        gpu=int(CIF_GPU),
        mem_mb=8000,
        runtime=60,
    params:
        folder=lambda wc, input: str(Path(input.data[0]).parent),
        eval_batch_size=CIF["eval_batch_size"],
        run_config=lambda wc: {"authors_models": AUT, "seed": config["seed"]},
    script:
        "../workflow/scripts/authors_cifar_extract.py"


rule authors_cifar_pairs:
    input:
        embeddings_test=authors_cifar_files("embeddings_test.parquet"),
        embeddings_train=authors_cifar_files("embeddings_train.parquet"),
        unembeddings=authors_cifar_files("unembeddings.parquet"),
        metrics=authors_cifar_files("metrics.json"),
    output:
        out("authors/cifar10/fd2/pairs.parquet"),
    log:
        out("logs/authors_cifar_pairs.log"),
    conda:
        "../envs/measures.yaml"
    resources:
        mem_mb=4000,
        runtime=10,
    params:
        seeds=CIF_SEEDS,
        measures=pair_measures(),
    script:
        "../workflow/scripts/cifar10_pairs.py"


rule ours_vs_authors_cifar:
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
    conda:
        "../envs/measures.yaml"
    params:
        seeds=CIF_SEEDS,
        measures=pair_measures(),
    script:
        "../workflow/scripts/ours_vs_authors_cifar.py"


rule authors_cifar_all:
    input:
        rules.ours_vs_authors_cifar.output,
        out("authors/cifar10/fd2/pairs.parquet"),
