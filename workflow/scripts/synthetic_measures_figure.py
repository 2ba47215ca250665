"""Rule synthetic_measures_figure: every measure's pair means vs width for one class count."""

from repdist.experiments.synthetic.widths import measures_by_width, read_pairs
from repdist.figures.style import save_figure
from repdist.figures.synthetic import MEASURE_PANELS, measures_vs_width_figure
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]):
    pairs = read_pairs(sm.input)
    columns = [c for c, _ in MEASURE_PANELS if c in pairs.columns]
    summary = measures_by_width(pairs, [*columns, *(f"{c}_tau" for c in columns)])
    nan_pairs = int(pairs[columns].isna().any(axis=1).sum())
    fig = measures_vs_width_figure(summary, int(sm.wildcards.group), len(pairs), nan_pairs)
    save_figure(fig, [sm.output.pdf, sm.output.png])
