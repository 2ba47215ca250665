# CIFAR-10 ResNet-18s: paper Figs. 3 (left), 5 and App. F.5.


rule cifar10_download:
    output:
        [f"{CIF['resources']}/cifar-10-batches-py/{name}" for name in CIFAR_FILES],
    log:
        out("logs/cifar10_download.log"),
    conda:
        "../envs/measures.yaml"
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        resources=lambda wc, output: str(Path(output[0]).parent.parent),
        url=CIF["url"],
    script:
        "../workflow/scripts/cifar10_download.py"


rule cifar10_standin:
    output:
        [out(f"cifar10_standin/cifar-10-batches-py/{name}") for name in CIFAR_FILES],
    log:
        out("logs/cifar10_standin.log"),
    conda:
        "../envs/measures.yaml"
    params:
        n_train=CIF["standin_train"],
        n_test=CIF["standin_test"],
        seed=config["seed"],
    script:
        "../workflow/scripts/cifar10_standin.py"


rule cifar10_train:
    input:
        cifar_data_files(),
    output:
        model=cifar_file("model.pt"),
        metrics=cifar_file("metrics.json"),
        embeddings_test=cifar_file("embeddings_test.parquet"),
        embeddings_train=cifar_file("embeddings_train.parquet"),
        unembeddings=cifar_file("unembeddings.parquet"),
    log:
        out("logs/cifar10_train/fd{M}_seed{S}.log"),
    benchmark:
        out("benchmarks/cifar10_train/fd{M}_seed{S}.tsv")
    wildcard_constraints:
        M=r"\d+",
        S=r"\d+",
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        gpu=int(CIF_GPU),
        mem_mb=12000,
        runtime=cifar_train_runtime,
    params:
        **cifar_train_params(lambda wc: [int(wc.S)]),
        checkpoint=lambda wc: cifar_file("checkpoint.pt", **wc),
    script:
        "../workflow/scripts/cifar10_train.py"


# On a GPU one job trains every seed of an M as one stacked network (cifar10.seeds_per_job):
# the same files, each seed's model as if trained alone.
ruleorder: cifar10_train_seeds > cifar10_train


rule cifar10_train_seeds:
    input:
        cifar_data_files(),
    output:
        model=cifar_seed_files("model.pt"),
        metrics=cifar_seed_files("metrics.json"),
        embeddings_test=cifar_seed_files("embeddings_test.parquet"),
        embeddings_train=cifar_seed_files("embeddings_train.parquet"),
        unembeddings=cifar_seed_files("unembeddings.parquet"),
    log:
        out("logs/cifar10_train/fd{M}_seeds.log"),
    benchmark:
        out("benchmarks/cifar10_train/fd{M}_seeds.tsv")
    wildcard_constraints:
        M=r"\d+" if cifar_seeds_per_job() > 1 else r"(?!)",
    conda:
        "../envs/torch.yaml"
    threads: 2
    resources:
        gpu=int(CIF_GPU),
        mem_mb=16000,
        runtime=lambda wc: cifar_train_runtime(wc) * 2,
    params:
        **cifar_train_params(lambda wc: CIF_SEEDS),
        checkpoint=lambda wc: out(f"cifar10/fd{wc.M}/checkpoint.pt"),
    script:
        "../workflow/scripts/cifar10_train.py"


rule cifar10_pairs:
    input:
        embeddings_test=lambda wc: cifar_seed_files("embeddings_test.parquet", wc.M),
        embeddings_train=lambda wc: cifar_seed_files("embeddings_train.parquet", wc.M),
        unembeddings=lambda wc: cifar_seed_files("unembeddings.parquet", wc.M),
        metrics=lambda wc: cifar_seed_files("metrics.json", wc.M),
    output:
        out("cifar10/fd{M}/pairs.parquet"),
    log:
        out("logs/cifar10_pairs/fd{M}.log"),
    benchmark:
        out("benchmarks/cifar10_pairs/fd{M}.tsv")
    wildcard_constraints:
        M=r"\d+",
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


rule cifar10_reps_figure:
    input:
        embeddings=cifar_file("embeddings_test.parquet", M=2),
        unembeddings=cifar_file("unembeddings.parquet", M=2),
        meta=f"{cifar_folder()}/batches.meta",
    output:
        pdf=out("figures/cifar10_reps_seed{S}.pdf"),
        png=report(
            out("figures/cifar10_reps_seed{S}.png"),
            caption="../report/cifar10_reps.rst",
            category="CIFAR-10",
            subcategory="App. F.5: two-dimensional representations",
            labels={"seed": "{S}"},
        ),
    log:
        out("logs/cifar10_reps_figure_seed{S}.log"),
    wildcard_constraints:
        S=r"\d+",
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/cifar10_reps_figure.py"


rule cifar10_comparison_figure:
    input:
        embeddings=[
            cifar_file("embeddings_test.parquet", M=2, S=s)
            for s in CIF["comparison_seeds"]
        ],
        meta=f"{cifar_folder()}/batches.meta",
    output:
        pdf=out("figures/cifar10_embedding_comparison_{a}_{b}.pdf"),
        png=report(
            out("figures/cifar10_embedding_comparison_{a}_{b}.png"),
            caption="../report/cifar10_comparison.rst",
            category="CIFAR-10",
            subcategory="Fig. 3 (left): same loss, different embeddings",
        ),
    log:
        out("logs/cifar10_comparison_figure_{a}_{b}.log"),
    wildcard_constraints:
        a=r"\d+",
        b=r"\d+",
    conda:
        "../envs/figures.yaml"
    script:
        "../workflow/scripts/cifar10_comparison_figure.py"


rule cifar10_loss_diff_figure:
    input:
        [out(f"cifar10/fd{m}/pairs.parquet") for m in CIF["rep_dims"]],
    output:
        pdf=out("figures/loss_diff_vs_mcca.pdf"),
        png=report(
            out("figures/loss_diff_vs_mcca.png"),
            caption="../report/loss_diff.rst",
            category="CIFAR-10",
            subcategory="Fig. 5: loss difference vs m_CCA",
            labels={"test losses": "as the paper (train-mode BatchNorm)"},
        ),
        pdf_eval=out("figures/loss_diff_vs_mcca_eval.pdf"),
        png_eval=report(
            out("figures/loss_diff_vs_mcca_eval.png"),
            caption="../report/loss_diff_eval.rst",
            category="CIFAR-10",
            subcategory="Fig. 5: loss difference vs m_CCA",
            labels={"test losses": "eval mode (running statistics)"},
        ),
    log:
        out("logs/cifar10_loss_diff_figure.log"),
    conda:
        "../envs/figures.yaml"
    params:
        rep_dims=CIF["rep_dims"],
        standin=CIF["standin"],
    script:
        "../workflow/scripts/cifar10_loss_diff_figure.py"


rule cifar10_all:
    input:
        [out(f"cifar10/fd{m}/pairs.parquet") for m in CIF["rep_dims"]],
        expand(
            out("figures/cifar10_reps_seed{S}.{ext}"), S=CIF_SEEDS, ext=["pdf", "png"]
        )
        if 2 in CIF["rep_dims"]
        else [],
        expand(
            out("figures/cifar10_embedding_comparison_{a}_{b}.{ext}"),
            a=CIF["comparison_seeds"][0],
            b=CIF["comparison_seeds"][1],
            ext=["pdf", "png"],
        )
        if 2 in CIF["rep_dims"]
        else [],
        expand(
            out("figures/loss_diff_vs_mcca{kind}.{ext}"),
            kind=["", "_eval"],
            ext=["pdf", "png"],
        ),
