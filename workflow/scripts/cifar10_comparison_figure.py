"""Rule cifar10_comparison_figure: paper Fig. 3 (left), two seeds' 2-D embeddings."""

import pandas as pd

from repdist.data.cifar10 import read_class_names
from repdist.figures.cifar import comparison_figure
from repdist.figures.style import save_figure
from repdist.io import read_parquet_metadata
from repdist.measures import mean_cca
from repdist.representations import columns_of
from repdist.runlog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    a, b = (pd.read_parquet(p) for p in sm.input.embeddings)
    f_a, f_b = columns_of(a, "f_"), columns_of(b, "f_")
    mcca = mean_cca(f_a, f_b)
    log.info("m_CCA(seed %s, seed %s) on the test set = %.6f", sm.wildcards.a, sm.wildcards.b,
             mcca)
    names = read_class_names(sm.input.meta)
    standin = bool(read_parquet_metadata(sm.input.embeddings[0]).get("standin_data"))
    fig = comparison_figure(f_a, a["pred"].to_numpy(), f_b, b["pred"].to_numpy(), names, mcca,
                            (int(sm.wildcards.a), int(sm.wildcards.b)), standin)
    save_figure(fig, [sm.output.pdf, sm.output.png])
