"""Rule lm_layers: every pair of models (the seeds, or lm.models) layer by layer: SVCCA at each
component count, linear CKA and m_CCA."""

from repdist.experiments.lm_layers import layer_table, layers_metadata, read_layer_set
from repdist.io import write_parquet
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    settings = sm.params.settings
    models = [read_layer_set(n, f) for n, f in zip(sm.params.names, sm.input, strict=True)]
    table = layer_table(models, settings["layers"], settings["components"])
    log.info("%d models, %d slots, %d rows", len(models), table["slot"].nunique(), len(table))
    write_parquet(sm.output[0], table,
                  layers_metadata(models, settings["layers"], settings["components"]))
