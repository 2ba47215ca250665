"""Rule authors_cifar_extract: the authors' ResNet-18 checkpoints written as our CIFAR models'
files (embeddings of the test and train images, unembeddings, eval-mode metrics)."""

from repdist.data.cifar10 import load_cifar10
from repdist.experiments.authors import extract_cifar
from repdist.io import provenance
from repdist.runlog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    outputs = [dict(zip(("embeddings_test", "embeddings_train", "unembeddings", "metrics"), files,
                        strict=True))
               for files in zip(sm.output.embeddings_test, sm.output.embeddings_train,
                                sm.output.unembeddings, sm.output.metrics, strict=True)]
    rows = extract_cifar(sm.input.checkpoints, load_cifar10(sm.params.folder), outputs,
                         sm.params.eval_batch_size, provenance(sm.params.run_config))
    for r in rows:
        log.info("%s: test accuracy %.4f", r["source"], r["test_accuracy"])
