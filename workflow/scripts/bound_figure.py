"""Rules constructed_bound_figure, synthetic_bound_figure, authors_bound_figure and
bound_beyond_figure: d_LLV against d_{f,g} with the bound (paper Fig. 16), every input table's
pairs pooled."""

import pandas as pd

from repdist.figures.bound import bound_figure
from repdist.figures.style import save_figure
from repdist.io import read_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    tables = [read_csv(p) if p.endswith(".csv") else pd.read_parquet(p) for p in sm.input]
    pairs = pd.concat(tables, ignore_index=True)
    nan_pairs = int(pairs[["d_llv", "d_fg"]].isna().any(axis=1).sum())
    log.info("%d pairs pooled, %d with an undefined measure", len(pairs), nan_pairs)
    fig = bound_figure(pairs, sm.params.rep_dim, sm.params.title, sm.params.marker_size)
    save_figure(fig, [sm.output.pdf, sm.output.png])
