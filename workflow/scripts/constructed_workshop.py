"""Rule workshop_example: the workshop paper's numbers, recomputed, its two embeddings, and its
App. E Fig. 4 (how the lengths were chosen)."""

import numpy as np

from repdist.experiments.constructed.workshop import workshop_latex, workshop_models, workshop_table
from repdist.figures.style import save_figure
from repdist.figures.constructed_workshop import workshop_figure, workshop_lengths_figure
from repdist.io import table_provenance, write_csv, write_table_text
from repdist.measures import mean_cca
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    table = workshop_table(sm.params.seed)
    log.info("workshop example:\n%s", table.to_string())
    meta = table_provenance(sm.config, experiment="workshop_example", table_seed=sm.params.seed)
    write_csv(sm.output.csv, table, meta)
    write_table_text(sm.output.tex, workshop_latex(table), meta)
    models = workshop_models(np.random.default_rng(sm.params.seed))
    fig = workshop_figure(models, mean_cca(models.f_prime, models.f_star))
    save_figure(fig, [sm.output.pdf, sm.output.png])
    save_figure(workshop_lengths_figure(), [sm.output.lengths_pdf, sm.output.lengths_png])
