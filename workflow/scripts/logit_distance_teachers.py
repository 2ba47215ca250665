"""Rules logit_distance_{spirals,sub,cifar100}_teachers: a data set's teachers of the follow-up,
one stack with their schedule (trained on the labels; SUB's on the birds and the attributes;
CIFAR-100's ResNet-50s from ImageNet's weights where given), each written with its f, g, metrics
(SUB: the attribute probe) and weights (their keys)."""

from repdist.experiments.logit_distance.training import follow_up_training, train_teachers
from repdist.experiments.logit_distance.jobs import (
    job_metadata,
    job_options,
    job_start,
    teacher_run,
)
from repdist.experiments.outputs import train_test_seed_files
from repdist.pipeline.joblog import job_log
from repdist.training.checkpoint import remove_checkpoint

sm = snakemake  # noqa: F821 (injected by Snakemake)
p = sm.params
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus, checkpoint=p.checkpoint) as log:
    device, job = job_start(p, sm.input.data, sm.threads, gpus)
    run = teacher_run(p.arch, p.seeds, follow_up_training(p.training, p.epochs), p.resnet,
                      job.probe)
    meta = job_metadata(p.dataset, p.run_config)
    if p.resnet is not None:
        weights = p.resnet["imagenet_weights"]
        log.info("the teachers start from %s", f"ImageNet's weights ({weights})"
                 if run.imagenet is not None else "scratch (no imagenet_weights given)")
        meta["imagenet"] = run.imagenet is not None
    log.info("teachers %s, %s, %s on %s", p.seeds, run.arch, run.training, device)
    train_teachers(run, job.data, train_test_seed_files(sm.output), meta,
                   job_options(p.checkpoint, device, p.resnet, job.concepts))
    remove_checkpoint(p.checkpoint)
