"""Rules ours_vs_authors and ours_vs_authors_cifar: our seed s against the authors' seed s,
per configuration."""

from repdist.experiments.authors.ours_vs_authors import (
    ours_vs_authors,
    ours_vs_authors_markdown,
    read_configurations,
)
from repdist.io import table_provenance, write_csv, write_table_text
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    configurations = read_configurations(sm.params.configurations, sm.params.seeds, sm.input)
    table = ours_vs_authors(configurations, sm.params.measures)
    log.info("ours vs the authors':\n%s", table.to_string())
    meta = table_provenance(sm.config, experiment=sm.rule)
    write_csv(sm.output.csv, table, meta)
    write_table_text(sm.output.md, ours_vs_authors_markdown(table), meta)
