"""Rule cifar10_download: fetch, MD5-check and extract the CIFAR-10 python archive."""

from repdist.data.cifar10 import fetch_cifar10
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    folder = fetch_cifar10(sm.params.resources, url=sm.params.url)
    log.info("CIFAR-10 ready in %s", folder)
