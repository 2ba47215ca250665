"""Rule roeder_cpc_train: one configuration of Roeder et al.'s contrastive experiment (Fig. 3),
its seeds trained together, early-stopped, with snapshots of the pairs; then written per seed."""

import torch

from repdist.experiments.outputs import seed_files
from repdist.experiments.roeder.cpc import (
    CPCModelConfig,
    CPCRun,
    cpc_metadata,
    load_cpc_data,
    train_cpc,
    write_examples,
)
from repdist.experiments.roeder.cpc_tables import disjoint_pairs
from repdist.io import write_parquet
from repdist.pipeline.joblog import job_log
from repdist.training.checkpoint import remove_checkpoint
from repdist.training.devices import resolve_device
from repdist.training.loop import TrainConfig

sm = snakemake  # noqa: F821 (injected by Snakemake)
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus, checkpoint=sm.params.checkpoint) as log:
    torch.set_num_threads(sm.threads)
    device = resolve_device(sm.params.device, "roeder.cpc.device", promised=bool(gpus))
    cfg = CPCModelConfig(**sm.params.model_cfg)
    train_cfg = TrainConfig(**sm.params.train_cfg)
    data = load_cpc_data(cfg, sm.params.cifar_folder)
    files = seed_files(sm.output)
    run = CPCRun(sm.params.snapshots, disjoint_pairs(len(cfg.seeds)), sm.params.patience,
                 sm.params.checkpoint, device)
    log.info("training %s on %s (%d training, %d validation, %d test images) with %s on %s, "
             "pairs %s, %d snapshots, %d thread(s)", cfg, data.source, len(data.train),
             len(data.validation), len(data.test), train_cfg, device, run.pairs,
             len(run.snapshot_steps), sm.threads)
    table = train_cpc(cfg, train_cfg, data, run, files, sm.params.run_config)
    log.info("m_CCA of f and g per step (mean over the pairs):\n%s",
             table.groupby("step")[["mcca_f", "mcca_g"]].mean().to_string())
    write_parquet(sm.output.snapshots, table, cpc_metadata(cfg, train_cfg, run, data))
    write_examples(sm.output.examples, data, cfg, train_cfg.data_seed)
    remove_checkpoint(sm.params.checkpoint)  # every output is written: the checkpoint is spent
