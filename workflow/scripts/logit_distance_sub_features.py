"""Rule logit_distance_sub_features: SUB's features file as the follow-up's
dsets/preprocess_sub.py makes it (its images resized to 512 x 512, DINOv2-base's processor, the
CLS token of the last hidden state), from the hub dataset or a folder of its parquet files, or
from the stand-in's images and encoder."""

import torch

from repdist.data.sub import SUB_SPLIT, sub_batches, sub_images
from repdist.experiments.logit_distance.training import write_sub_features
from repdist.extract.hf import load_image_processor, load_vision_encoder
from repdist.extract.image_text import final_cls
from repdist.pipeline.joblog import job_log
from repdist.training.devices import resolve_device
from repdist.training.progress import ProgressLog

sm = snakemake  # noqa: F821 (injected by Snakemake)
gpus = sm.resources.get("gpu", 0)
with job_log(sm.log[0], gpus=gpus) as log:
    torch.set_num_threads(sm.threads)
    p = sm.params
    device = resolve_device(p.device, "logit_distance.device", promised=bool(gpus))
    images = sub_images(p.images, p.revision)
    model = load_vision_encoder(p.encoder, device, p.encoder_revision)
    processor = load_image_processor(p.encoder, p.encoder_revision)
    log.info("SUB: %d images from %s; %s (%s) on %s, resized to %d first, batches of %d",
             images.rows, images.source, p.encoder, model.config.model_type, device,
             p.image_size, p.batch_size)
    bar = ProgressLog(images.rows)

    def features():
        done = 0
        for pictures, birds, attributes in sub_batches(images, p.batch_size, p.image_size):
            yield final_cls(model, processor, pictures, device), birds, attributes
            done += len(birds)
            if bar.due():
                bar.report(done, None)

    rows = write_sub_features(sm.output[0], features(), {
        "model": p.encoder, "image_size": p.image_size, "dataset": images.source,
        "split": SUB_SPLIT})
    log.info("SUB: %d features of %d written", rows, model.config.hidden_size)
