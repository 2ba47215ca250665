"""Rule authors_extract: the authors' trained checkpoints of one configuration, verified and
written as our models' files (test-set embeddings, unembeddings, metrics)."""

from pathlib import Path

from repdist.experiments.authors.checkpoints import extract_synthetic
from repdist.experiments.outputs import SeedFiles
from repdist.io import provenance
from repdist.models.authors import read_checksums
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    files = [SeedFiles({"test": Path(e)}, Path(u), Path(m)) for e, u, m in
             zip(sm.output.embeddings, sm.output.unembeddings, sm.output.metrics, strict=True)]
    rows = extract_synthetic(sm.input.checkpoints, read_checksums(sm.input.checksums), files,
                             sm.params.n_test, sm.params.test_data_seed,
                             provenance(sm.params.run_config))
    for r in rows:
        log.info("%s: test accuracy %.4f", r["source"], r["test_accuracy"])
