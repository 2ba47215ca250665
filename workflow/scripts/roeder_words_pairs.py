"""Rule roeder_words_pairs: every pair of Roeder et al.'s Fig. 1 seeds, the pairs loop's measures
(KL, d_LLV, m_CCA of f and g) and the held-out R^2 of the linear fits of b onto a."""

import json

from repdist.experiments.pairs import pairs_metadata
from repdist.experiments.roeder.words_pairs import words_pairs
from repdist.io import table_provenance, write_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    metrics = [json.loads(open(p).read()) for p in sm.input.metrics]
    pairs = words_pairs(sm.params.seeds, sm.input.embeddings, sm.input.unembeddings, metrics,
                        sm.params.measures, sm.params.rep_dim)
    shown = ["seed_a", "seed_b", "kl", "d_llv", "mcca_f", "mcca_g", "r2_g", "r2_f", "warning"]
    log.info("pairs:\n%s", pairs[shown].to_string())
    models = pairs_metadata(sm.params.seeds, sm.input.embeddings, sm.params.measures)
    keys = ("K", "M", "context", "steps", "corpus", "python_version", "measures")
    write_csv(sm.output[0], pairs, table_provenance(
        sm.config, experiment="roeder_words_pairs", **{k: models[k] for k in keys if k in models}))
