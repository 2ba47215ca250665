"""Rule prh_figure: PRH's Fig. 3 (raw and calibrated) and the language x vision matrix, from
the study's table (their claim's verdicts are the paper comparison's)."""

import pandas as pd

from repdist.experiments.prh.study import family_order
from repdist.figures.prh import alignment_figure, matrix_figure
from repdist.figures.style import save_figure
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]):
    table = pd.read_parquet(sm.input[0])
    families = family_order(table["family"].tolist())
    save_figure(alignment_figure(table, families), [sm.output.pdf, sm.output.png])
    save_figure(matrix_figure(table, families), [sm.output.matrix_pdf, sm.output.matrix_png])
