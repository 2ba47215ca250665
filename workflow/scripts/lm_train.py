"""Rule lm_train: one seed's GPT trained on the stdlib tokens, its f and g extracted, its files
written as every model's are."""

from pathlib import Path

import torch

from repdist.experiments.lm.seeds import LMRun, train_seed, write_lm_seed
from repdist.experiments.lm.tokens import read_tokenizer
from repdist.experiments.outputs import SeedFiles
from repdist.extract import causal_lm_representations
from repdist.models.gpt import GPTConfig
from repdist.pipeline.joblog import job_log
from repdist.training.checkpoint import remove_checkpoint
from repdist.training.devices import resolve_device
from repdist.training.lm import LMTrainConfig

sm = snakemake  # noqa: F821 (injected by Snakemake)
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus, checkpoint=sm.params.checkpoint) as log:
    torch.set_num_threads(sm.threads)
    device = resolve_device(sm.params.device, "lm.device", promised=bool(gpus))
    vocab = read_tokenizer(sm.input.tokenizer).vocab_size
    run = LMRun(GPTConfig(vocab=vocab, **sm.params.model_cfg),
                LMTrainConfig(**sm.params.train_cfg), int(sm.wildcards.S), sm.params.positions,
                sm.params.checkpoint, device)
    log.info("training seed %d: %s with %s on %s, %d thread(s)", run.seed, run.model,
             run.training, device, sm.threads)
    trained = train_seed(run, sm.input.train, sm.input.eval)
    reps = causal_lm_representations(trained.model, trained.eval_windows[:, :-1], "head",
                                     positions=run.positions, bias="fold", device=device)
    files = SeedFiles({"test": Path(sm.output.embeddings)}, Path(sm.output.unembeddings),
                      Path(sm.output.metrics), Path(sm.output.model))
    metrics = write_lm_seed(run, trained, reps, files, sm.params.run_config)
    log.info("seed %d: eval loss %.4f, accuracy %.4f", run.seed, metrics["eval_loss"],
             metrics["eval_accuracy"])
    remove_checkpoint(sm.params.checkpoint)  # every output is written: the checkpoint is spent
