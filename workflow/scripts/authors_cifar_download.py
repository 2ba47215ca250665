"""Rule authors_cifar_download: the authors' CIFAR-10 fd2 checkpoints from their Zenodo record,
each checked against the record's checksum."""

from pathlib import Path

from repdist.experiments.authors.checkpoints import fetch_cifar
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    names = [Path(p).name for p in sm.output]
    fetch_cifar(sm.params.record, names, Path(sm.output[0]).parent)
    log.info("%d checkpoints from %s verified", len(names), sm.params.record)
