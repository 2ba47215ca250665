"""Rules cifar10_comparison_figure (paper Fig. 3 left: two seeds' 2-D embeddings), and its uses
for the authors' models and for ours beside theirs (params.labels name the two sides)."""

from repdist.data.cifar10 import read_class_names
from repdist.experiments.pairs import embeddings_mcca
from repdist.figures.cifar import seed_comparison
from repdist.figures.style import save_figure
from repdist.io import read_parquet_metadata
from repdist.io.representations import read_embeddings
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    a, b = (read_embeddings(p) for p in sm.input.embeddings)
    labels = getattr(sm.params, "labels", None) or (f"seed {sm.wildcards.a}",
                                                    f"seed {sm.wildcards.b}")
    standin = bool(read_parquet_metadata(sm.input.embeddings[0]).get("standin_data"))
    mcca = embeddings_mcca(a, b)
    fig = seed_comparison(a, b, mcca, read_class_names(sm.input.meta), tuple(labels), standin)
    log.info("m_CCA(%s, %s) on the test set = %.6f", *labels, mcca)
    save_figure(fig, [sm.output.pdf, sm.output.png])
