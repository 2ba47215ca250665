"""Rules cifar10_train, cifar10_train_seeds and cifar10_train_all: one ResNet-18 model per seed
and M (a job's models trained together as one stacked network: every seed of an M, or every seed
of every M), their metrics and extracted representations."""

import torch

from repdist.data.cifar10 import load_cifar10
from repdist.experiments.cifar.training import CifarModelConfig, train_cifar_models
from repdist.experiments.outputs import train_test_seed_files
from repdist.pipeline.joblog import job_log
from repdist.training.checkpoint import remove_checkpoint
from repdist.training.loop import TrainConfig

sm = snakemake  # noqa: F821 (injected by Snakemake)


with job_log(sm.log[0], gpus=sm.resources.get("gpu", 0),
             checkpoint=sm.params.checkpoint) as log:
    torch.set_num_threads(sm.threads)
    cfg = CifarModelConfig(**sm.params.model_cfg)
    train_cfg = TrainConfig(**sm.params.train_cfg)
    data = load_cifar10(sm.params.folder)
    files = train_test_seed_files(sm.output)
    log.info("training seeds %s at M = %s with %s", list(cfg.seeds), cfg.rep_dim, train_cfg)
    metrics = train_cifar_models(cfg, train_cfg, data, files, sm.params.run_config,
                                 sm.params.checkpoint)
    remove_checkpoint(sm.params.checkpoint)
    for m in metrics:
        log.info("M = %d, seed %d on %s: %.2f steps/s, test loss %.4f (eval mode %.4f), "
                 "accuracy %.4f", m["M"], m["seed"], m["device"], m["steps_per_s"], m["final_test_loss"],
                 m["final_test_loss_eval"], m["test_accuracy"])
