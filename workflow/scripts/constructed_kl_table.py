"""Rule kl_table: paper Table 1 as CSV and booktabs LaTeX."""

from repdist.experiments.constructed.kl_table import (
    EXTENDED_LATEX_COLUMNS,
    KLTableConfig,
    kl_table,
    kl_table_latex,
    paper_columns,
)
from repdist.io import table_provenance, write_csv, write_table_text
from repdist.pipeline.joblog import job_log

with job_log(snakemake.log[0]) as log:  # noqa: F821 (snakemake is injected)
    cfg = KLTableConfig(**snakemake.params.cfg)  # noqa: F821
    table = kl_table(cfg)
    log.info("KL table:\n%s", table.to_string())
    meta = table_provenance(snakemake.config, experiment="kl_table")  # noqa: F821
    write_csv(snakemake.output.csv, paper_columns(table), meta)  # noqa: F821
    write_table_text(snakemake.output.tex, kl_table_latex(table), meta)  # noqa: F821
    write_csv(snakemake.output.extended_csv, table, meta)  # noqa: F821
    write_table_text(  # noqa: F821
        snakemake.output.extended_tex,  # noqa: F821
        kl_table_latex(table, EXTENDED_LATEX_COLUMNS),
        meta,
    )
