"""Rule authors_standin: checkpoints in the authors' format and naming, made here (offline)."""

from pathlib import Path

from repdist.experiments.authors.checkpoints import write_standin
from repdist.pipeline.joblog import job_log
from repdist.training.loop import TrainConfig

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    folder = Path(sm.output.checksums).parent
    written = write_standin(folder, [tuple(c) for c in sm.params.configurations], sm.params.seeds,
                            TrainConfig(**sm.params.train_cfg), sm.params.n_train,
                            sm.params.train_data_seed)
    log.info("%d stand-in checkpoints in the authors' format in %s", len(written), folder)
