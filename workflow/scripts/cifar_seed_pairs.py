"""Rules cifar10_pairs and authors_cifar_pairs: every measure for every pair of seeds at one
embedding dimension."""

import json

from repdist.experiments.pairs import compare_cifar_seeds, pairs_metadata
from repdist.io import write_parquet
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    metrics = [json.loads(open(p).read()) for p in sm.input.metrics]
    pairs = compare_cifar_seeds(sm.params.seeds, sm.input.embeddings_test,
                                sm.input.embeddings_train, sm.input.unembeddings, metrics,
                                sm.params.measures)
    log.info("%d pairs; mean test m_CCA %.4f", len(pairs), pairs["mcca_f_test"].mean())
    write_parquet(sm.output[0], pairs,
                  pairs_metadata(sm.params.seeds, sm.input.embeddings_test, sm.params.measures))
