# The authors' own SmallMLP checkpoints: fetched (or read from a folder) and sha256-verified,
# extracted into the same files as ours, compared as ours are, and our seed s beside theirs.
include: "helpers/authors.smk"


rule authors_download:
    output:
        [f"{AUTHORS['resources']}/{n}" for n in read_checksums(AUTHORS_CHECKSUMS)],
    log:
        out("logs/authors_download.log"),
    conda:
        "../envs/torch.yaml"
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 1000),
        runtime=20,
    params:
        url=AUTHORS["url"],
        checksums=str(AUTHORS_CHECKSUMS),
    script:
        "../workflow/scripts/authors_download.py"


rule authors_standin:
    output:
        [
            authors_checkpoint(k, w, s, t, AUTHORS_STANDIN)
            for k, w in authors_configs()
            for s in AUTHORS["seeds"]
            for t in (False, True)
        ],
        checksums=f"{AUTHORS_STANDIN}/SHA256SUMS.tsv",
    log:
        out("logs/authors_standin.log"),
    priority: AT_ONCE
    conda:
        "../envs/torch.yaml"
    params:
        configurations=authors_configs(),
        seeds=AUTHORS["seeds"],
        train_cfg=training_settings(
            "synthetic", protocol="clean", steps=50, checkpoint_every=0
        ),
        n_train=SYNTHETIC["n_train"],
        train_data_seed=SYNTHETIC["train_data_seed"],
    script:
        "../workflow/scripts/authors_standin.py"


rule authors_extract:
    input:
        checkpoints=lambda wc: [
            authors_checkpoint(wc.K, wc.W, s) for s in AUTHORS["seeds"]
        ],
        checksums=authors_checksum_file(),
    output:
        **model_tables(authors_seed_files),
    log:
        out("logs/authors_extract/K{K}_w{W}.log"),
    conda:
        "../envs/torch.yaml"
    resources:
        mem_mb=training_jobs.job_mem_mb(config, 1000),
        runtime=10,
    params:
        n_test=SYNTHETIC["n_test"],
        test_data_seed=SYNTHETIC["test_data_seed"],
        run_config=run_config("authors_models"),
    script:
        "../workflow/scripts/authors_extract_mlps.py"


use rule synthetic_pairs as authors_pairs with:
    input:
        **model_tables(authors_seed_files),
    output:
        authors_file("pairs.parquet"),
    log:
        out("logs/authors_pairs/K{K}_w{W}.log"),
    benchmark:
        out("benchmarks/authors_pairs/K{K}_w{W}.tsv")
    params:
        seeds=AUTHORS["seeds"],


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
        "../workflow/scripts/authors_initialisation_table.py"


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
        seeds=AUTHORS["seeds"],
        measures=pair_measures(),
    script:
        "../workflow/scripts/authors_ours_vs_authors.py"


use rule synthetic_width_figure as authors_width_figure with:
    input:
        pairs=[authors_file("pairs.parquet", K=k, W=w) for k, w in authors_configs()],
    output:
        **figure(
            "d_llv_vs_width_K{group}_authors", "width_authors", "The authors' models"
        ),
        summary=out("tables/d_llv_vs_width_K{group}_authors.csv"),
    log:
        out("logs/authors_width_figure_K{group}.log"),
    params:
        min_seeds=AUTHORS["min_seeds"],
        seeds=AUTHORS["seeds"],
        title="The authors' models",


use rule synthetic_bound_figure as authors_bound_figure with:
    input:
        [authors_file("pairs.parquet", K=k, W=w) for k, w in authors_configs()],
    output:
        **figure(
            "d_llv_vs_d_fg_trained_synthetic_authors",
            "trained_bound_authors",
            "The authors' models",
        ),
    log:
        out("logs/authors_bound_figure.log"),
    params:
        rep_dim=2,
        title=f"The authors' trained models ({len(authors_configs())} configurations)",


use rule synthetic_alignment_figure as authors_alignment_figure with:
    input:
        [authors_file("pairs.parquet", K=k, W=w) for k, w in authors_configs()],
    output:
        **figure(
            "prh_alignment_authors", "prh_alignment_authors", "The authors' models"
        ),
        table=out("tables/prh_alignment_authors.csv"),
    log:
        out("logs/authors_alignment_figure.log"),
    params:
        models="the authors' trained models",


rule authors_all:
    input:
        figure_files("prh_alignment_authors"),
        rules.ours_vs_authors.output,
        rules.authors_initialisation.output,
        figure_files(f"d_llv_vs_width_K{AUTHORS_GROUP}_authors"),
        figure_files("d_llv_vs_d_fg_trained_synthetic_authors"),
