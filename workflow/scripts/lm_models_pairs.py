"""Rule lm_models_pairs: every measure for every pair of the outside models (lm.models)."""

import json

from repdist.experiments.pairs import compare_named, pairs_metadata
from repdist.io import write_parquet
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    metrics = [json.loads(open(p).read()) for p in sm.input.metrics]
    pairs = compare_named(sm.params.names, sm.input.embeddings, sm.input.unembeddings, metrics,
                          sm.params.measures)
    flagged = int((pairs["warning"] != "").sum())
    log.info("%d pairs, %d with an undefined measure", len(pairs), flagged)
    write_parquet(sm.output[0], pairs,
                  pairs_metadata(sm.params.names, sm.input.embeddings, sm.params.measures))
