"""Rules logit_distance_spirals_data and logit_distance_sub_standin: the follow-up's spirals,
generated as their code does and saved in their format (their generator stops before saving),
or a stand-in of SUB's features file in their format."""

from repdist.data.spirals import make_spirals, save_spirals
from repdist.data.sub import write_sub_standin
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    if "data" in sm.params.keys():
        data = make_spirals(**sm.params.data)
        log.info("spirals %s: %s", sm.params.data,
                 {split: len(x) for split, x in data.x.items()})
        save_spirals(data, sm.output[0])
    else:
        log.info("SUB stand-in: %d points a bird", sm.params.per_bird)
        write_sub_standin(sm.output[0], sm.params.per_bird, sm.params.seed)
