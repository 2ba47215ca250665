"""Rule lm_standin: one lm.models stand-in (a tiny GPT-2, GPT-NeoX or Llama built from a config,
untrained) with the tokenizer every stand-in shares (trained on the stdlib's train text),
saved as a Hugging Face folder, offline."""

from repdist.data.stdlib_text import read_stdlib_text
from repdist.models.lm_standins import StandinSpec, save_standin
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    text = read_stdlib_text(sm.params.data["max_bytes"], sm.params.data["eval_fraction"]).train
    made = save_standin(sm.output[0], StandinSpec(**sm.params.spec), text, sm.params.context)
    log.info("stand-in %s in %s: %s", sm.wildcards.name, sm.output[0], made)
