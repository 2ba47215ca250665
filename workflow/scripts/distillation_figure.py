"""Rule distillation_figure: students against their teachers, per loss."""

from repdist.figures.distillation import distillation_figure
from repdist.figures.style import save_figure
from repdist.io import read_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]):
    table = read_csv(sm.input.table)
    title = f"Distilled students vs their teachers ({len(table)} students)"
    save_figure(distillation_figure(table, title), [sm.output.pdf, sm.output.png])
