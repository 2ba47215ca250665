"""Rule roeder_words_train: Roeder et al.'s Fig. 1 models, log-bilinear word models at every seed
trained together on the corpus, then written per seed (and the vocabulary)."""

import torch

from repdist.experiments.outputs import seed_files
from repdist.experiments.roeder.words import WordsConfig, train_words
from repdist.pipeline.joblog import job_log
from repdist.training.checkpoint import remove_checkpoint
from repdist.training.devices import resolve_device
from repdist.training.loop import RunOptions, TrainConfig

sm = snakemake  # noqa: F821 (injected by Snakemake)
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus, checkpoint=sm.params.checkpoint) as log:
    torch.set_num_threads(sm.threads)
    device = resolve_device(sm.params.device, "roeder.words.device", promised=bool(gpus))
    model_cfg = WordsConfig(**sm.params.model_cfg)
    train_cfg = TrainConfig(**sm.params.train_cfg)
    files = seed_files(sm.output)
    log.info("training %s with %s on %s, %d thread(s)", model_cfg, train_cfg, device,
             sm.threads)
    info = train_words(model_cfg, train_cfg, files, sm.output.vocabulary, sm.params.run_config,
                       RunOptions(checkpoint=sm.params.checkpoint, device=device))
    log.info("data: %s", info)
    remove_checkpoint(sm.params.checkpoint)  # every output is written: the checkpoint is spent
