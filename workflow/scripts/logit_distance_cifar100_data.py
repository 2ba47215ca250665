"""Rules logit_distance_cifar100_download and _standin: cifar-100-python fetched from its URL
with its MD5 and extracted, or a generated stand-in in the same format."""

from pathlib import Path

from repdist.data.cifar100 import fetch_cifar100, write_standin
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    folder = Path(sm.output[0]).parent
    if sm.params.standin:
        write_standin(folder, sm.params.n_train, sm.params.n_test, sm.params.seed)
        log.info("stand-in CIFAR-100 (%d train, %d test) in %s", sm.params.n_train,
                 sm.params.n_test, folder)
    else:
        log.info("CIFAR-100 ready in %s", fetch_cifar100(folder.parent, url=sm.params.url))
