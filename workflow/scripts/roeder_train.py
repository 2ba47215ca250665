"""Rule roeder_train: one data variant of Roeder et al.'s simulation, its seeds trained together
with seed-pair snapshots, then written per seed."""

import torch

from repdist.experiments.outputs import seed_files
from repdist.experiments.roeder.classifier import RoederModelConfig, roeder_metadata, train_roeder
from repdist.io import write_parquet
from repdist.pipeline.joblog import job_log
from repdist.training.loop import TrainConfig

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    torch.set_num_threads(sm.threads)
    model_cfg = RoederModelConfig(**sm.params.model_cfg)
    train_cfg = TrainConfig(**sm.params.train_cfg)
    files = seed_files(sm.output)
    log.info("training %s with %s, %d snapshots, %d thread(s)", model_cfg, train_cfg,
             len(sm.params.snapshots), sm.threads)
    table = train_roeder(model_cfg, train_cfg, sm.params.snapshots, sm.params.measures, files,
                         sm.params.run_config)
    log.info("mean m_CCA(f) per step:\n%s", table.groupby("step")["mcca_f"].mean().to_string())
    write_parquet(sm.output.snapshots, table,
                  roeder_metadata(model_cfg, train_cfg, sm.params.measures))
