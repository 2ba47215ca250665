"""Rule authors_download: the authors' checkpoint files from their repository, sha256-verified."""

from pathlib import Path

from repdist.models.authors import read_checksums
from repdist.experiments.authors.checkpoints import fetch
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    checksums = read_checksums(sm.params.checksums)
    folder = Path(sm.output[0]).parent
    fetch(sm.params.url, sorted(checksums), folder, checksums)
    log.info("%d files from %s verified in %s", len(checksums), sm.params.url, folder)
