"""Rule distillation_train: the students of one (K, width, loss), trained together, each
matching its teacher, then written per student."""

import torch

from repdist.experiments.distillation.training import StudentSpec, train_students
from repdist.experiments.outputs import seed_files
from repdist.experiments.synthetic.training import SyntheticModelConfig
from repdist.pipeline.joblog import job_log
from repdist.training.checkpoint import remove_checkpoint
from repdist.training.devices import resolve_device
from repdist.training.loop import RunOptions, TrainConfig

sm = snakemake  # noqa: F821 (injected by Snakemake)
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus, checkpoint=sm.params.checkpoint) as log:
    torch.set_num_threads(sm.threads)
    device = resolve_device(sm.params.device, "synthetic.device", promised=bool(gpus))
    model_cfg = SyntheticModelConfig(**sm.params.model_cfg, fix_g=0.0, fix_f=0.0)
    spec = StudentSpec(sm.wildcards.loss, sm.params.student_seed_offset)
    train_cfg = TrainConfig(**sm.params.train_cfg)
    files = seed_files(sm.output)
    log.info("students %s of teachers %s (K = %d, width %d) by loss %s with %s on %s",
             spec.student_seeds(model_cfg.seeds), list(model_cfg.seeds), model_cfg.num_classes,
             model_cfg.width, spec.loss, train_cfg, device)
    train_students(model_cfg, spec, train_cfg, sm.input.teachers, files, sm.params.run_config,
                   RunOptions(checkpoint=sm.params.checkpoint, device=device,
                              cuda_graph=sm.params.cuda_graph))
    remove_checkpoint(sm.params.checkpoint)  # every output is written: the checkpoint is spent
