"""Rule lm_models_tokens: lm.corpus cut by the first model's tokenizer into the windows every
outside model reads: lm.text.context tokens of input and the next one (its last label)."""

from repdist.experiments.lm.extraction import (
    CorpusConfig,
    contexts_meta,
    corpus_text,
    loaded_tokenizer_digest,
    write_contexts,
)
from repdist.extract import load_tokenizer, text_contexts
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    source, text_cfg = sm.params.source, sm.params.text
    data = sm.params.data
    text, info = corpus_text(CorpusConfig(sm.params.corpus, data["max_bytes"],
                                          data["eval_fraction"]))
    tokenizer = load_tokenizer(source["tokenizer"], source["tokenizer_revision"])
    contexts = text_contexts(text, tokenizer, text_cfg["context"] + 1)
    if len(contexts) < text_cfg["contexts"]:
        raise ValueError(f"lm.corpus gives {len(contexts)} contexts of {text_cfg['context']} "
                         f"tokens, fewer than lm.text.contexts = {text_cfg['contexts']}: give "
                         "more text (lm.corpus, lm.data.max_bytes) or fewer contexts")
    contexts = contexts[: text_cfg["contexts"]]
    digest = loaded_tokenizer_digest(tokenizer, source["tokenizer"], source["tokenizer_revision"])
    write_contexts(sm.output[0], contexts, contexts_meta(info, source["tokenizer"], digest,
                                                         contexts, sm.params.run_config))
    log.info("%d windows of %d tokens from %s, tokenizer %s (digest %s)", *contexts.shape,
             info["corpus"], source["tokenizer"], digest[:12])
