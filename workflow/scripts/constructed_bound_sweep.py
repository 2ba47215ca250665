"""Rule constructed_bound_sweep: d_LLV and d_{f,g} of one evenly spaced classifier vs noisy copies."""

from repdist.experiments.constructed.bound import ConstructedBoundConfig, constructed_bound_sweep
from repdist.io import table_provenance, write_csv
from repdist.pipeline.joblog import job_log

with job_log(snakemake.log[0]) as log:  # noqa: F821 (snakemake is injected)
    cfg = ConstructedBoundConfig(**snakemake.params.cfg)  # noqa: F821
    table = constructed_bound_sweep(cfg)
    log.info("%d noise levels, %d with d_LLV < 0.25", len(table), int((table.d_llv < 0.25).sum()))
    meta = table_provenance(  # noqa: F821
        snakemake.config, experiment="constructed_bound", settings=snakemake.params.cfg  # noqa: F821
    )
    write_csv(snakemake.output[0], table, meta)  # noqa: F821
