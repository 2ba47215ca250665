"""Rules lm_figure and lm_models_figure: the language models' pairs (the seeds, or lm.models)
as a figure (KL against d_LLV and m_CCA) and as the report's table."""

import pandas as pd

from repdist.figures.lm import seed_pairs_figure, seed_pairs_table
from repdist.figures.style import save_figure
from repdist.io import read_parquet_metadata, table_provenance, write_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    pairs = pd.read_parquet(sm.input[0])
    meta = read_parquet_metadata(sm.input[0])
    table = seed_pairs_table(pairs)
    log.info("seed pairs:\n%s", table.to_string())
    save_figure(seed_pairs_figure(pairs, meta), [sm.output.pdf, sm.output.png])
    keys = ("K", "M", "positions", "python_version", "bytes_train", "bytes_eval", "corpus",
            "measures")
    write_csv(sm.output.table, table,
              table_provenance(sm.config, experiment=meta.get("experiment", "lm"),
                               **{k: meta.get(k) for k in keys if k in meta}))
