"""Rule models_pairs: every pair of a `models:` group, as `repdist compare` measures them."""

from repdist.experiments.models.groups import compare_models, nan_report
from repdist.io import write_table
from repdist.measures import CompareSettings
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    settings = CompareSettings(**sm.params.measures)
    frame, meta = compare_models(sm.params.paths, settings)
    meta.update(experiment="models", group=sm.wildcards.group)
    log.info("%d models, %d pairs; mean d_LLV %.4f", len(meta["models"]), len(frame),
             frame["d_llv"].mean())
    for line in [*meta["notes"], *nan_report(frame)]:
        log.warning("%s", line)
    write_table(sm.output[0], frame, meta)
