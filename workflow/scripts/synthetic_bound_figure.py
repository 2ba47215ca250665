"""Rules synthetic_bound_figure and authors_bound_figure: paper Fig. 16 (right), all trained
pairs pooled (ours, or the authors' models)."""

import pandas as pd

from repdist.figures.bound import bound_figure
from repdist.figures.style import save_figure
from repdist.runlog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    pairs = pd.concat([pd.read_parquet(p) for p in sm.input], ignore_index=True)
    nan_pairs = int(pairs[["d_llv", "d_fg"]].isna().any(axis=1).sum())
    log.info("%d pairs pooled, %d with an undefined measure", len(pairs), nan_pairs)
    title = f"{sm.params.title} ({len(sm.input)} configurations)"
    fig = bound_figure(pairs, sm.params.rep_dim, title, 5)
    save_figure(fig, [sm.output.pdf, sm.output.png])
