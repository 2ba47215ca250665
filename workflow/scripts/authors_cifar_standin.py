"""Rule authors_cifar_standin: ResNetCIFAR10 checkpoints in the authors' format, made here."""

from pathlib import Path

from repdist.experiments.authors.checkpoints import write_cifar_standin
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    paths = write_cifar_standin(Path(sm.output[0]).parent, sm.params.seeds, sm.params.base_width)
    log.info("%d stand-in CIFAR checkpoints in the authors' format", len(paths))
