"""Rules roeder_linear_fit and synthetic_linear_fit: Roeder et al.'s Fig. 2c for pairs of
models (embeddings listed model a, model b, pair after pair), with each fit's held-out R^2."""

from repdist.experiments.roeder.curves import linear_fit_table
from repdist.figures.roeder_linear_fit import linear_fit_figure
from repdist.figures.style import save_figure
from repdist.io import table_provenance, write_csv
from repdist.io.representations import columns_of, read_embeddings
from repdist.measures.probe import linear_fit
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    f = [columns_of(read_embeddings(p), "f_") for p in sm.input.embeddings]
    fits = [linear_fit(title, a, b)
            for title, a, b in zip(sm.params.titles, f[::2], f[1::2], strict=True)]
    table = linear_fit_table(fits)
    log.info("held-out R^2:\n%s", table.to_string())
    write_csv(sm.output.table, table, table_provenance(sm.config, experiment="linear_fit"))
    save_figure(linear_fit_figure(fits, sm.params.suptitle), [sm.output.pdf, sm.output.png])
