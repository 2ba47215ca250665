"""Rule cifar10_reps_figure: App. F.5 for one seed (M = 2)."""

from repdist.data.cifar10 import read_class_names
from repdist.figures.cifar import reps_figure
from repdist.figures.style import save_figure
from repdist.io import read_parquet_metadata
from repdist.io.representations import columns_of, read_embeddings, read_unembeddings
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]):
    emb = read_embeddings(sm.input.embeddings)
    g = columns_of(read_unembeddings(sm.input.unembeddings), "g_")
    names = read_class_names(sm.input.meta)
    standin = bool(read_parquet_metadata(sm.input.embeddings).get("standin_data"))
    fig = reps_figure(columns_of(emb, "f_"), emb["pred"].to_numpy(), g, names,
                      int(sm.wildcards.S), standin)
    save_figure(fig, [sm.output.pdf, sm.output.png])
