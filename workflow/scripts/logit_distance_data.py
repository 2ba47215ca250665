"""Rule logit_distance_spirals_data: the follow-up's spirals, generated as their code does and
saved in their format (their generator stops before saving)."""

from repdist.data.spirals import make_spirals, save_spirals
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    data = make_spirals(**sm.params.data)
    log.info("spirals %s: %s", sm.params.data, {split: len(x) for split, x in data.x.items()})
    save_spirals(data, sm.output[0])
