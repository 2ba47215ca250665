"""Rule constructed_bound_figure: paper Fig. 16 (left) for one class count."""

from repdist.figures.bound import bound_figure
from repdist.figures.style import save_figure
from repdist.io import read_csv
from repdist.runlog import job_log

with job_log(snakemake.log[0]):  # noqa: F821 (snakemake is injected)
    table = read_csv(snakemake.input[0])  # noqa: F821
    k = int(snakemake.wildcards.K)  # noqa: F821
    fig = bound_figure(table, rep_dim=2, title=f"Constructed models, K = {k}")
    save_figure(fig, [snakemake.output.pdf, snakemake.output.png])  # noqa: F821
