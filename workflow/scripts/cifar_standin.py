"""Rule cifar10_standin: a small generated data set in the CIFAR-10 on-disk format."""

from pathlib import Path

from repdist.data.cifar10 import write_standin
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    folder = Path(sm.output[0]).parent
    write_standin(folder, sm.params.n_train, sm.params.n_test, sm.params.seed)
    log.info("stand-in data (%d train, %d test) in %s", sm.params.n_train, sm.params.n_test, folder)
