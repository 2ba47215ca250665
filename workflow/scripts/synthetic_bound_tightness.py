"""Rule bound_tightness: per M, the pairs the bound covers, its violations, and how tight it is."""

import pandas as pd

from repdist.experiments.synthetic.bound import bound_tightness
from repdist.io import read_parquet_metadata, table_provenance, write_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    by_m: dict[int, list[pd.DataFrame]] = {}
    for path in [*sm.input.paper, *sm.input.beyond]:
        by_m.setdefault(int(read_parquet_metadata(path)["M"]), []).append(pd.read_parquet(path))
    table = bound_tightness({m: (pd.concat(t, ignore_index=True), len(t))
                             for m, t in by_m.items()})
    log.info("bound tightness:\n%s", table.to_string())
    write_csv(sm.output.csv, table, table_provenance(sm.config, experiment="bound_tightness"))
