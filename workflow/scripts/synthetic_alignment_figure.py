"""Rules synthetic_alignment_figure and authors_alignment_figure: the Platonic Representation
Hypothesis' claim (alignment rises with width and accuracy) on unnormalised synthetic models
(ours, or the authors'), a figure and its table."""

from repdist.experiments.synthetic.alignment import alignment_trends, read_alignment_table
from repdist.figures.style import save_figure
from repdist.figures.synthetic import alignment_figure
from repdist.io import table_provenance, write_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    table = read_alignment_table(sm.input)
    trends = alignment_trends(table)
    log.info("alignment:\n%s\ntrends: %s", table.to_string(), trends)
    write_csv(sm.output.table, table, table_provenance(sm.config, experiment="prh_alignment"))
    fig = alignment_figure(table, trends["rho_width_by_k"], trends["rho_accuracy"],
                           models=sm.params.models)
    save_figure(fig, [sm.output.pdf, sm.output.png])
