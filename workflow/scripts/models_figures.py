"""Rule models_figures: the bound figure and the measures figure of a `models:` group."""

import pandas as pd

from repdist.figures.models import group_figures
from repdist.figures.style import save_figure
from repdist.io import read_parquet_metadata
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]):
    pairs = pd.read_parquet(sm.input[0])
    bound, measures = group_figures(pairs, read_parquet_metadata(sm.input[0]), sm.wildcards.group)
    save_figure(bound, [sm.output.bound_pdf, sm.output.bound_png])
    save_figure(measures, [sm.output.measures_pdf, sm.output.measures_png])
