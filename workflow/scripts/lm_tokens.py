"""Rule lm_tokens: the stdlib text, a BPE tokenizer trained on it, both splits' token windows."""

from repdist.experiments.lm.tokens import LMDataConfig, make_tokens
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    info = make_tokens(LMDataConfig(**sm.params.data), sm.output.tokenizer, sm.output.train,
                       sm.output.eval, sm.params.run_config)
    log.info("tokens: %s", info)
