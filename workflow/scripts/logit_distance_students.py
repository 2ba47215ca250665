"""Rules logit_distance_{spirals,sub,cifar100}_students: every student of a data set's teachers
(each teacher x loss x seed, on its teacher's logits or the labels; CIFAR-100's ResNet-18s),
one stack with their schedule, measured every eval_every_epochs epochs; each written with its f,
g, metrics (SUB: the attribute probe) and weights (their keys), and the snapshots' table."""

from repdist.experiments.logit_distance.training import (
    follow_up_training,
    snapshots_metadata,
    train_students,
)
from repdist.experiments.logit_distance.jobs import (
    job_metadata,
    job_options,
    job_start,
    student_run,
)
from repdist.experiments.outputs import train_test_seed_files
from repdist.io import write_parquet
from repdist.pipeline.joblog import job_log
from repdist.training.checkpoint import remove_checkpoint

sm = snakemake  # noqa: F821 (injected by Snakemake)
p = sm.params
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus, checkpoint=p.checkpoint) as log:
    device, job = job_start(p, sm.input.data, sm.threads, gpus)
    run = student_run(p.arch, p.members, follow_up_training(p.training, p.epochs),
                      p.eval_every_epochs, p.d_rep_subsets, p.resnet, job.probe)
    log.info("%d students of teachers %s, %s, %s on %s", len(run.students),
             list(dict.fromkeys(s.teacher_seed for s in run.students)), run.arch, run.training,
             device)
    snapshots = train_students(run, sm.input.teachers, job.data, train_test_seed_files(sm.output),
                               job_metadata(p.dataset, p.run_config),
                               job_options(p.checkpoint, device, p.resnet))
    write_parquet(sm.output.snapshots, snapshots,
                  snapshots_metadata(run.arch, run.training, p.run_config))
    remove_checkpoint(p.checkpoint)
