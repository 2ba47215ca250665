"""Rule lm_seed_layers: one trained GPT's layers (the embeddings, every block's output, the
head's input) on its eval contexts, at f's positions; on the CPU (a small model: no GPU held)."""

import numpy as np
import torch

from repdist.experiments.lm.seeds import build_lm, window_labels
from repdist.experiments.lm.layers import write_layers
from repdist.experiments.lm.tokens import read_tokens
from repdist.extract.layers import LayerReading, causal_lm_layers
from repdist.io import provenance, read_parquet_metadata
from repdist.io.representations import columns_of, read_embeddings
from repdist.models.gpt import GPTConfig
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    torch.set_num_threads(sm.threads)
    seed, meta = int(sm.wildcards.S), read_parquet_metadata(sm.input.embeddings)
    model = build_lm(GPTConfig(vocab=int(meta["K"]), **sm.params.model_cfg), seed)
    model.load_state_dict(torch.load(sm.input.model, map_location="cpu", weights_only=True))
    windows = read_tokens(sm.input.eval)
    layers = causal_lm_layers(model, windows[:, :-1], sm.params.layers,
                              LayerReading(sm.params.positions, "head", "cpu"))
    f = columns_of(read_embeddings(sm.input.embeddings), "f_")
    head = layers.states.get(layers.head_input)
    if head is not None and not np.allclose(head, f, rtol=0, atol=1e-5 * np.abs(f).max()):
        raise RuntimeError(f"seed {seed}: the head's input is not the seed's f")
    labels = window_labels(windows, sm.params.positions)
    write_layers(sm.output[0], layers.states, labels, layers.preds,
                 {"name": f"seed{seed}", "seed": seed, "positions": sm.params.positions,
                  "count": layers.count, "head_input": layers.head_input,
                  "source": layers.source, **provenance(sm.params.run_config)})
    log.info("seed %d: %d layers (head's input: %d), %d rows each", seed, layers.count,
             layers.head_input, len(labels))
