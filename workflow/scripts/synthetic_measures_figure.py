"""Rule synthetic_measures_figure: every measure's pair means vs width for one class count."""

import pandas as pd

from repdist.figures.style import save_figure
from repdist.figures.synthetic import measures_vs_width_figure
from repdist.io import read_parquet_metadata
from repdist.runlog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]):
    pairs = pd.concat(
        [pd.read_parquet(p).assign(width=read_parquet_metadata(p)["width"]) for p in sm.input],
        ignore_index=True,
    )
    fig = measures_vs_width_figure(pairs, int(sm.wildcards.group))
    save_figure(fig, [sm.output.pdf, sm.output.png])
