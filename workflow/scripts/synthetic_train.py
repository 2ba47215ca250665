"""Rule synthetic_train: all seeds of one configuration trained together, then written per seed."""

from pathlib import Path

import torch

from repdist.experiments.synthetic import SeedPaths, SyntheticModelConfig, train_configuration
from repdist.runlog import job_log
from repdist.training.loop import TrainConfig

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    torch.set_num_threads(sm.threads)
    model_cfg = SyntheticModelConfig(**sm.params.model_cfg)
    train_cfg = TrainConfig(**sm.params.train_cfg)
    paths = [
        SeedPaths(Path(m), Path(me), Path(e), Path(u))
        for m, me, e, u in zip(
            sm.output.models, sm.output.metrics, sm.output.embeddings, sm.output.unembeddings,
            strict=True,
        )
    ]
    log.info("training %s with %s on %d thread(s)", model_cfg, train_cfg, sm.threads)
    checkpoint = Path(sm.params.checkpoint)
    train_configuration(model_cfg, train_cfg, paths, sm.params.run_config, checkpoint)
    checkpoint.unlink(missing_ok=True)  # every output is written: the checkpoint is spent
