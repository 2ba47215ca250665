"""Rules synthetic_width_figure and authors_width_figure: paper Fig. 3 (right) / App. F.7 for a
group of class counts (ours, or the authors' models)."""

from repdist.figures.style import save_figure
from repdist.experiments.synthetic.widths import width_summaries, width_table
from repdist.figures.synthetic import width_figure
from repdist.io import read_csv, table_provenance, write_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    summaries = width_summaries(sm.input.pairs, sm.params.threshold, sm.params.min_seeds)
    baseline = read_csv(sm.input.baseline) if "baseline" in sm.input.keys() else None
    table = width_table(summaries)
    log.info("summary:\n%s", table.to_string())
    write_csv(sm.output.summary, table,
              table_provenance(sm.config, experiment="synthetic_width", seeds=sm.params.seeds))
    fig = width_figure(summaries, sm.params.threshold, sm.params.min_seeds, sm.params.title,
                       baseline)
    save_figure(fig, [sm.output.pdf, sm.output.png])
