"""Rule cifar10_train: one ResNet-18 model, its metrics and its extracted representations."""

from pathlib import Path

import torch

from repdist.data.cifar10 import load_cifar10
from repdist.experiments.cifar import CifarModelConfig, CifarPaths, train_cifar_model
from repdist.runlog import job_log
from repdist.training.loop import TrainConfig

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    torch.set_num_threads(sm.threads)
    cfg = CifarModelConfig(**sm.params.model_cfg)
    train_cfg = TrainConfig(**sm.params.train_cfg)
    data = load_cifar10(sm.params.folder)
    paths = CifarPaths(*(Path(sm.output[k]) for k in ("model", "metrics", "embeddings_test",
                                                       "embeddings_train", "unembeddings")))
    checkpoint = Path(sm.params.checkpoint)
    metrics = train_cifar_model(cfg, train_cfg, data, paths, sm.params.run_config, checkpoint)
    checkpoint.unlink(missing_ok=True)
    log.info("trained %s on %s: %.2f steps/s, test loss %.4f, test accuracy %.4f",
             cfg, metrics["device"], metrics["steps_per_s"], metrics["final_test_loss"],
             metrics["test_accuracy"])
