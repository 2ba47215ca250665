"""Rule lm_standins: the lm.models stand-ins (tiny GPT-2, GPT-NeoX, Llama built from configs,
one tokenizer trained on the stdlib's train text), saved as Hugging Face folders, offline."""

import os
import shutil
from pathlib import Path

from repdist.data.stdlib_text import read_stdlib_text
from repdist.models.lm_standins import StandinSpec, save_standins
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    folder = Path(sm.output[0])
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    text = read_stdlib_text(sm.params.data["max_bytes"], sm.params.data["eval_fraction"]).train
    specs = {name: StandinSpec(**spec) for name, spec in sm.params.specs.items()}
    made = save_standins(tmp, specs, text, sm.params.context)
    os.replace(tmp, folder)  # the folder takes its name once every stand-in is in it
    log.info("stand-ins in %s (tokenizer of %d tokens): %s", folder, made["vocab_size"],
             made["models"])
