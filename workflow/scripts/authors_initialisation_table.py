"""Rule authors_initialisation: our initialisation against the authors' untrained checkpoints."""

from repdist.models.authors import read_checksums
from repdist.experiments.authors.checkpoints import initialisation_table
from repdist.io import table_provenance, write_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    table = initialisation_table(sm.input.untrained, read_checksums(sm.input.checksums))
    log.info("initialisation vs the authors' untrained files:\n%s", table.to_string())
    write_csv(sm.output.csv, table, table_provenance(sm.config, experiment="authors_init"))
