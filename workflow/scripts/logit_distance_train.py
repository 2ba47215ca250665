"""Rules logit_distance_spirals_teachers and logit_distance_spirals_students: the follow-up's
teachers (trained on the labels), or every student of them (each teacher x loss x seed, on its
teacher's logits or the labels, measured every eval_every_epochs epochs), one stack a job, with
their schedule; each model written with its f, g, metrics and weights (their keys)."""

import torch

from repdist.data.spirals import load_spirals
from repdist.experiments.logit_distance import (
    Student,
    StudentRun,
    follow_up_training,
    snapshots_metadata,
    spirals_train_data,
    train_students,
    train_teachers,
)
from repdist.experiments.outputs import train_test_seed_files
from repdist.io import provenance, write_parquet
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
    meta = {"experiment": "logit_distance", "data": "spirals", **provenance(sm.params.run_config)}
    options = RunOptions(checkpoint=sm.params.checkpoint, device=device)
    files = train_test_seed_files(sm.output)
    if "members" not in sm.params.keys():
        log.info("teachers %s, %s, %s on %s", sm.params.seeds, arch, training, device)
        train_teachers(arch, sm.params.seeds, data, training, files, meta, options)
    else:
        teachers = list(dict.fromkeys(t for t, _, _ in sm.params.members))
        students = [Student(teachers.index(t), t, loss, s) for t, loss, s in sm.params.members]
        log.info("%d students of teachers %s, %s, %s on %s", len(students), teachers, arch,
                 training, device)
        run = StudentRun(arch, students, training, sm.params.eval_every_epochs,
                         sm.params.d_rep_subsets)
        snapshots = train_students(run, sm.input.teachers, data, files, meta, options)
        write_parquet(sm.output.snapshots, snapshots,
                      snapshots_metadata(arch, training, sm.params.run_config))
    remove_checkpoint(sm.params.checkpoint)
