"""Rule synthetic_width_baseline: what paper Fig. 3 (right)'s width claim is read against, per
width: the same seeds untrained, and the null of d_LLV and d_{f,g}
(experiments/synthetic/width_baseline.py)."""

import json

import torch

from repdist.experiments.synthetic.training import SyntheticModelConfig
from repdist.experiments.synthetic.width_baseline import width_baseline
from repdist.io import table_provenance, write_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    torch.set_num_threads(sm.threads)
    configs = [SyntheticModelConfig(**c) for c in sm.params.model_cfgs]
    metrics = [json.loads(open(p).read()) for p in sm.input.metrics]
    models = {"embeddings": sm.input.embeddings, "unembeddings": sm.input.unembeddings,
              "metrics": metrics}
    table = width_baseline(configs, sm.input.pairs, models,
                           (sm.params.threshold, sm.params.min_seeds), sm.params.measures,
                           sm.params.null, sm.params.null_pairs)
    log.info("baselines:\n%s", table.to_string())
    write_csv(sm.output[0], table,
              table_provenance(sm.config, experiment="synthetic_width_baseline",
                               seeds=sm.params.seeds))
