"""Rule synthetic_measures_figure: every measure's pair means vs width for one class count."""

import pandas as pd

from repdist.experiments.widths import measures_by_width
from repdist.figures.style import save_figure
from repdist.figures.synthetic import MEASURE_PANELS, measures_vs_width_figure
from repdist.io import read_parquet_metadata
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]):
    pairs = pd.concat(
        [pd.read_parquet(p).assign(width=read_parquet_metadata(p)["width"]) for p in sm.input],
        ignore_index=True,
    )
    columns = [c for c, _ in MEASURE_PANELS if c in pairs.columns]
    summary = measures_by_width(pairs, columns)
    nan_pairs = int(pairs[columns].isna().any(axis=1).sum())
    fig = measures_vs_width_figure(summary, int(sm.wildcards.group), len(pairs), nan_pairs)
    save_figure(fig, [sm.output.pdf, sm.output.png])
