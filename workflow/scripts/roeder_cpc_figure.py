"""Rule roeder_cpc_figure: Roeder et al.'s Fig. 3 (the data, and mean CCA of f and g between
pairs of models over training, data and width) with its tables: one row per pair and point,
and the mean ± standard error per point, beside the null's tau and the untrained models'
value at the point."""

import numpy as np
import pandas as pd

from repdist.experiments.roeder.cpc_tables import cpc_summary, cpc_table, untrained_means
from repdist.figures.roeder_cpc import cpc_figure
from repdist.figures.style import save_figure
from repdist.io import read_npz_metadata, table_provenance, write_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    # every configuration's step 0: its seeds before training, the baseline of each point
    untrained = untrained_means({name: pd.read_parquet(path) for name, path in
                                 zip(sm.params.configurations, sm.input.untrained, strict=True)})
    table = cpc_table(pd.read_parquet(sm.input.snapshots), pd.read_parquet(sm.input.pairs),
                      sm.params.cpc, untrained)
    summary = cpc_summary(table)
    data = read_npz_metadata(sm.input.examples)["data"]
    log.info("data: %s; mean ± standard error per point:\n%s", data, summary.to_string())
    meta = table_provenance(sm.config, experiment="roeder_cpc", data=data)
    write_csv(sm.output.table, table, meta)
    write_csv(sm.output.summary, summary, meta)
    with np.load(sm.input.examples) as examples:
        fig = cpc_figure(dict(examples), summary, f"Roeder et al. Fig. 3 on {data}")
    save_figure(fig, [sm.output.pdf, sm.output.png])
