"""Rule prh_extract: one model of the study on the image-caption pairs: every layer's features
(a language model's on the captions, with its bits per byte; a vision encoder's on the images),
batch by batch, resumable, written as one folder (experiments/prh/study.py)."""

import torch

from repdist.data.image_captions import read_pairs
from repdist.experiments.prh.study import extract_to_folder
from repdist.extract.hf import (
    load_causal_lm,
    load_image_processor,
    load_tokenizer,
    load_vision_encoder,
)
from repdist.extract.image_text import (
    Reading,
    language_features,
    vision_features,
    vision_pooling,
)
from repdist.io import provenance
from repdist.pipeline.joblog import job_log
from repdist.training.devices import resolve_device
from repdist.training.progress import ProgressLog

sm = snakemake  # noqa: F821 (injected by Snakemake)
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus) as log:
    torch.set_num_threads(sm.threads)
    p, name, modality = sm.params, sm.wildcards.name, sm.wildcards.modality
    device = resolve_device(p.settings["device"], "prh.device", promised=bool(gpus))
    pairs = read_pairs(p.pairs["dataset"], p.pairs.get("revision"), p.pairs["caption"])
    source = p.source
    bar = ProgressLog(len(pairs))
    progress = lambda done, total: bar.due() and bar.report(done, None)  # noqa: E731
    reading = Reading(p.settings["batch_size"], p.settings["padding"], device)
    if modality == "language":
        tokenizer = load_tokenizer(source["tokenizer"], source["tokenizer_revision"])
        model = load_causal_lm(source["model"], device, source["revision"])
        how = {"padding": p.settings["padding"], "pooling": "mask mean"}
        batches = lambda start: language_features(  # noqa: E731
            model, tokenizer, pairs.captions, reading, start, progress)
    else:
        model = load_vision_encoder(source["model"], device, source["revision"])
        processor = load_image_processor(source["model"], source["revision"])
        how = {"pooling": vision_pooling(model)}
        batches = lambda start: vision_features(  # noqa: E731
            model, processor, pairs.images, reading, start, progress)
    info = {"name": name, "modality": modality, "model": source["model"],
            "revision": source["revision"], "family": source.get("family"),
            "model_type": model.config.model_type, "pairs": pairs.source,
            "parameters": sum(t.numel() for t in model.parameters()), "device": str(device),
            "dtype": "float32", **how, **provenance(p.run_config)}
    log.info("%s (%s): %s on %s, %d pairs, %s", name, modality, source["model"], device,
             len(pairs), how)
    written = extract_to_folder(sm.output[0], batches, len(pairs), info, p.run_config)
    log.info("%s: %d layers of %d, %s%s", name, written["layers"], written["dim"],
             f"resumed at row {written['resumed_from_row']}, " if written["resumed_from_row"]
             else "", f"bits per byte {written['bits_per_byte']:.4f}"
             if "bits_per_byte" in written else "")
