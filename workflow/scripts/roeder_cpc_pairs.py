"""Rule roeder_cpc_pairs: every configuration of Roeder et al.'s Fig. 3, its disjoint pairs of
seeds compared on the held-out test patches (KL, d_LLV, m_CCA of f and g ...)."""

import json
from pathlib import Path

from repdist.experiments.pairs import pairs_metadata
from repdist.experiments.roeder.cpc_tables import CPCConfiguration, TrainedConfiguration, cpc_pairs
from repdist.io import write_parquet
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    n = len(sm.params.seeds)
    trained = []
    for k, config in enumerate(sm.params.configurations):
        part = slice(k * n, (k + 1) * n)  # inputs are configuration-major, seeds in order
        trained.append(TrainedConfiguration(
            CPCConfiguration(**config), sm.input.embeddings[part], sm.input.unembeddings[part],
            [json.loads(open(p).read()) for p in sm.input.metrics[part]]))
    pairs = cpc_pairs(trained, sm.params.seeds, sm.params.measures)
    log.info("%d configurations, %d pairs:\n%s", len(trained), len(pairs),
             pairs[["width", "data_fraction", "max_steps", "seed_a", "seed_b", "kl", "d_llv",
                    "mcca_f", "mcca_g"]].to_string())
    # each model by its configuration's folder and seed (w16_p1_t40/seed2): what differs
    # between the configurations is kept per model
    models = ["/".join(Path(p).parts[-3:-1]) for p in sm.input.embeddings]
    write_parquet(sm.output[0], pairs, pairs_metadata(models, sm.input.embeddings,
                                                      sm.params.measures))
