"""Rule lm_models_extract: one outside model on the shared contexts: f and g of its head, its
layers' hidden states, its loss and accuracy, written beside each other."""

from pathlib import Path

import numpy as np
import torch

from repdist.experiments.lm.seeds import window_labels
from repdist.experiments.lm.layers import write_layers
from repdist.experiments.lm.extraction import (
    check_same_vocabulary,
    loaded_tokenizer_digest,
    model_metrics,
    read_contexts,
    write_lm_model,
)
from repdist.experiments.outputs import SeedFiles
from repdist.extract import causal_lm_representations, load_causal_lm, load_tokenizer
from repdist.extract.hf import output_head
from repdist.extract.layers import LayerReading, causal_lm_layers
from repdist.io import provenance
from repdist.pipeline.joblog import job_log
from repdist.training.devices import resolve_device
from repdist.training.progress import ProgressLog

sm = snakemake  # noqa: F821 (injected by Snakemake)
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus) as log:
    torch.set_num_threads(sm.threads)
    name, source, p = sm.wildcards.name, sm.params.source, sm.params
    device = resolve_device(p.device, "lm.extract_device", promised=bool(gpus))
    windows, meta = read_contexts(sm.input[0])
    contexts, labels = windows[:, :-1], window_labels(windows, p.positions)
    tokenizer = load_tokenizer(source["tokenizer"], source["tokenizer_revision"])
    check_same_vocabulary(name, loaded_tokenizer_digest(tokenizer, source["tokenizer"],
                                                        source["tokenizer_revision"]), meta)
    model = load_causal_lm(source["model"], revision=source["revision"])
    head = output_head(model)
    log.info("%s: %s (revision %s) on %s, %d contexts of %d tokens, head %s", name,
             source["model"], source["revision"] or "main", device, *contexts.shape, head)
    reps = causal_lm_representations(model, contexts, head, positions=p.positions, bias="fold",
                                     device=device, batch_size=p.batch_size)
    bar = ProgressLog(len(contexts))
    layers = causal_lm_layers(model, contexts, p.layers,
                              LayerReading(p.positions, head, device, p.batch_size),
                              targets=labels,
                              progress=lambda done, total: bar.due() and bar.report(done, None))
    bar.report(len(contexts), None)
    known = reps.labels >= 0
    if len(reps.f) != len(labels) or not np.array_equal(reps.labels[known], labels[known]):
        raise RuntimeError(f"{name}: f's positions are not the windows' ({len(reps.f)} rows, "
                           f"{len(labels)} next tokens)")
    metrics = model_metrics(layers.nll, layers.labels, layers.preds)
    info = {"name": name, "model": source["model"], "revision": source["revision"],
            "positions": p.positions, "contexts": int(len(contexts)),
            "context": int(contexts.shape[1]), "corpus": meta.get("corpus"),
            "python_version": meta.get("python_version"), "head": reps.info["head"],
            "bias": reps.info["bias"], "device": str(device)}
    o = sm.output
    write_lm_model(SeedFiles({"test": Path(o.embeddings)}, Path(o.unembeddings),
                             Path(o.metrics)), reps.f, reps.g, labels,
                   {**info, **provenance(p.run_config)}, metrics)
    write_layers(o.layers, layers.states, layers.labels, layers.preds,
                 {**info, "count": layers.count, "head_input": layers.head_input,
                  "source": layers.source, **provenance(p.run_config)})
    log.info("%s: f %s, g %s, %d layers (head's input: %d), loss %.4f, accuracy %.4f", name,
             reps.f.shape, reps.g.shape, layers.count, layers.head_input,
             metrics["eval_loss"], metrics["eval_accuracy"])
