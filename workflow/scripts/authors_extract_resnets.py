"""Rule authors_cifar_extract: the authors' ResNet-18 checkpoints written as our CIFAR models'
files (embeddings of the test and train images, unembeddings, eval-mode metrics)."""

from repdist.data.cifar10 import load_cifar10
from repdist.experiments.authors.checkpoints import extract_cifar
from repdist.experiments.outputs import train_test_seed_files
from repdist.io import provenance
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0], gpus=sm.resources.get("gpu", 0)) as log:
    files = train_test_seed_files(sm.output)
    rows = extract_cifar(sm.input.checkpoints, load_cifar10(sm.params.folder), files,
                         sm.params.eval_batch_size, provenance(sm.params.run_config),
                         sm.params.device)
    for r in rows:
        log.info("%s: test accuracy %.4f", r["source"], r["test_accuracy"])
