"""Rules synthetic_train, synthetic_train_variants and bound_beyond_train: all seeds of one
configuration (or of every variant of a (K, W)) trained together, then written per seed."""

import torch

from repdist.experiments.outputs import seed_files
from repdist.experiments.synthetic.training import SyntheticModelConfig, train_configurations
from repdist.pipeline.joblog import job_log
from repdist.training.checkpoint import remove_checkpoint
from repdist.training.devices import resolve_device
from repdist.training.loop import TrainConfig

sm = snakemake  # noqa: F821 (injected by Snakemake)
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus, checkpoint=sm.params.checkpoint) as log:
    torch.set_num_threads(sm.threads)
    device = resolve_device(sm.params.device, "synthetic.device", promised=bool(gpus))
    model_cfgs = [
        SyntheticModelConfig(**sm.params.model_cfg, fix_g=fix_g, fix_f=fix_f)
        for fix_g, fix_f in sm.params.variants
    ]
    train_cfg = TrainConfig(**sm.params.train_cfg)
    files = seed_files(sm.output)
    n_seeds = len(model_cfgs[0].seeds)  # outputs are variant-major
    per_cfg = [files[i : i + n_seeds] for i in range(0, len(files), n_seeds)]
    log.info("training %s with %s on %s, %d thread(s)", model_cfgs, train_cfg, device, sm.threads)
    train_configurations(model_cfgs, train_cfg, per_cfg, sm.params.run_config,
                         sm.params.checkpoint, device, sm.params.cuda_graph)
    remove_checkpoint(sm.params.checkpoint)  # every output is written: the checkpoint is spent
