"""Rule lm_layers: every pair of models (the seeds, or lm.models) layer by layer: SVCCA at each
component count, linear CKA and m_CCA, each beside its permutation null (config `null`), and
the best slot of each pair calibrated as a whole."""

from repdist.experiments.lm.layers import layer_tables, layers_metadata, read_layer_set
from repdist.io import write_parquet
from repdist.measures.null import null_settings
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    settings = sm.params.settings
    null = null_settings(sm.params.null)
    models = [read_layer_set(n, f) for n, f in zip(sm.params.names, sm.input, strict=True)]
    tables = layer_tables(models, settings["layers"], settings["components"], null)
    table = tables.table
    log.info("%d models, %d slots, %d rows%s", len(models), table["slot"].nunique(), len(table),
             f", each beside a null of {null.permutations} permutations" if null else "")
    meta = {**layers_metadata(models, settings["layers"], settings["components"]),
            "null": sm.params.null}
    write_parquet(sm.output[0], table, meta)
    write_parquet(sm.output[1], tables.best, meta)
