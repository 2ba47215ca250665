"""Rule logit_distance_spirals_teachers: the follow-up's teachers, one stack, trained on the
labels with their schedule, each written with its f, g, metrics and weights (their keys)."""

import torch

from repdist.data.spirals import load_spirals
from repdist.experiments.logit_distance import (
    follow_up_training,
    spirals_train_data,
    train_teachers,
)
from repdist.experiments.outputs import train_test_seed_files
from repdist.io import provenance
from repdist.models.follow_up import FollowUpArch
from repdist.pipeline.joblog import job_log
from repdist.training.checkpoint import remove_checkpoint
from repdist.training.devices import resolve_device
from repdist.training.loop import RunOptions

sm = snakemake  # noqa: F821 (injected by Snakemake)
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus, checkpoint=sm.params.checkpoint) as log:
    torch.set_num_threads(sm.threads)
    device = resolve_device(sm.params.device, "logit_distance.device", promised=bool(gpus))
    arch = FollowUpArch(**sm.params.arch)
    training = follow_up_training(sm.params.training, sm.params.epochs)
    data = spirals_train_data(load_spirals(sm.input.data, arch.num_classes))
    files = train_test_seed_files(sm.output)
    log.info("teachers %s, %s, %s on %s", sm.params.seeds, arch, training, device)
    train_teachers(arch, sm.params.seeds, data, training, files,
                   {"experiment": "logit_distance", "data": "spirals",
                    **provenance(sm.params.run_config)},
                   RunOptions(checkpoint=sm.params.checkpoint, device=device))
    remove_checkpoint(sm.params.checkpoint)
