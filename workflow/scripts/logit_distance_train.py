"""Rules logit_distance_{spirals,sub,cifar100}_teachers and _students: the follow-up's teachers
(trained on the labels; SUB's on the birds and the attributes; CIFAR-100's ResNet-50 from
ImageNet's weights where given), or every student of them (each teacher x loss x seed, on its
teacher's logits or the labels, measured every eval_every_epochs epochs), one stack a job, with
their schedule; each model written with its f, g, metrics (SUB: the attribute probe) and
weights (their keys)."""


import torch

from repdist.experiments.logit_distance import (
    Student,
    StudentRun,
    TeacherRun,
    follow_up_training,
    job_data,
    snapshots_metadata,
    train_students,
    train_teachers,
)
from repdist.experiments.outputs import train_test_seed_files
from repdist.io import provenance, write_parquet
from repdist.models.follow_up import FollowUpArch
from repdist.models.follow_up_resnet import ResNetArch, read_imagenet_weights
from repdist.pipeline.joblog import job_log
from repdist.training.checkpoint import remove_checkpoint
from repdist.training.distillation import cbm_objective
from repdist.training.devices import resolve_device
from repdist.training.loop import RunOptions

sm = snakemake  # noqa: F821 (injected by Snakemake)
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus, checkpoint=sm.params.checkpoint) as log:
    torch.set_num_threads(sm.threads)
    device = resolve_device(sm.params.device, "logit_distance.device", promised=bool(gpus))
    resnet = sm.params.resnet  # CIFAR-100's: the students' depth, ImageNet, batches (else None)
    if resnet is None:
        arch = student_arch = FollowUpArch(**sm.params.arch)
    else:
        arch = ResNetArch(**sm.params.arch)  # the teachers'
        student_arch = ResNetArch(**{**sm.params.arch, "depth": resnet["student_depth"]})
    training = follow_up_training(sm.params.training, sm.params.epochs)
    job = job_data(sm.params.dataset, sm.input.data, arch.num_classes,
                   sm.config["logit_distance"]["sub"]["probe_seed"])
    data, probe = job.data, job.probe
    teachers_job = "members" not in sm.params.keys()
    objective = (cbm_objective(torch.as_tensor(job.concepts))
                 if teachers_job and job.concepts is not None else None)  # SUB's teachers
    options = RunOptions(checkpoint=sm.params.checkpoint, device=device, objective=objective,
                         eval_batch_size=resnet and resnet["eval_batch_size"])
    meta = {"experiment": "logit_distance", "data": sm.params.dataset,
            **provenance(sm.params.run_config)}
    files = train_test_seed_files(sm.output)
    if teachers_job:
        weights = resnet and resnet["imagenet_weights"]
        imagenet = read_imagenet_weights(weights) if weights else None
        if resnet is not None:
            log.info("the teachers start from %s", f"ImageNet's weights ({weights})"
                     if imagenet is not None else "scratch (no imagenet_weights given)")
            meta["imagenet"] = imagenet is not None
        log.info("teachers %s, %s, %s on %s", sm.params.seeds, arch, training, device)
        run = TeacherRun(arch, sm.params.seeds, training, probe, imagenet,
                         in_order=bool(resnet and resnet["teacher_in_order"]))
        train_teachers(run, data, files, meta, options)
    else:
        teachers = list(dict.fromkeys(t for t, _, _ in sm.params.members))
        students = [Student(teachers.index(t), t, loss, s) for t, loss, s in sm.params.members]
        log.info("%d students of teachers %s, %s, %s on %s", len(students), teachers,
                 student_arch, training, device)
        run = StudentRun(student_arch, students, training, sm.params.eval_every_epochs,
                         sm.params.d_rep_subsets, probe,
                         teacher_arch=arch if resnet is not None else None)
        snapshots = train_students(run, sm.input.teachers, data, files, meta, options)
        write_parquet(sm.output.snapshots, snapshots,
                      snapshots_metadata(student_arch, training, sm.params.run_config))
    remove_checkpoint(sm.params.checkpoint)
