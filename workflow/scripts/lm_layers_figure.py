"""Rule lm_layers_figure: similarity against layer (one line per SVCCA component count, CKA
and m_CCA; the head's input marked) and the report's table of means over pairs."""

import pandas as pd

from repdist.experiments.lm.layers import layer_summary
from repdist.figures.lm import layers_figure
from repdist.figures.style import save_figure
from repdist.io import read_parquet_metadata, table_provenance, write_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    table = pd.read_parquet(sm.input[0])
    meta = read_parquet_metadata(sm.input[0])
    summary = layer_summary(table)
    log.info("layer by layer, mean over pairs:\n%s", summary.to_string())
    save_figure(layers_figure(summary, meta), [sm.output.pdf, sm.output.png])
    keys = ("positions", "python_version", "models", "layers", "components")
    write_csv(sm.output.table, summary,
              table_provenance(sm.config, experiment=f"{sm.wildcards.branch}_layers",
                               **{k: meta.get(k) for k in keys}))
