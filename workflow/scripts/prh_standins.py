"""Rule prh_standins: the study's stand-ins, offline, in one folder that appears whole: the
rendered image-caption pairs (when prh.pairs.standin is set), the language stand-ins (tiny
causal LMs with a BPE tokenizer, trained a few steps on the captions) and the vision stand-ins
(tiny ViT, ViT-MAE, DINOv2 and CLIP vision towers, untrained)."""

from repdist.data.image_captions import read_pairs, standin_pairs, write_standin_pairs
from repdist.io import atomic_folder
from repdist.models.prh_standins import (
    VisionStandinSpec,
    save_language_standin,
    save_vision_standin,
)
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    p = sm.params
    with atomic_folder(sm.output[0]) as tmp:
        if p.pairs_standin is not None:
            write_standin_pairs(tmp / "pairs", **p.pairs_standin)
            captions = standin_pairs(**p.pairs_standin)[1]
        else:
            captions = list(read_pairs(p.pairs["dataset"], p.pairs.get("revision"),
                                       p.pairs["caption"]).captions)
        for name, spec in p.language.items():
            made = save_language_standin(tmp / "language" / name, spec, captions)
            log.info("language stand-in %s: %s", name, made)
        for name, spec in p.vision.items():
            made = save_vision_standin(tmp / "vision" / name, VisionStandinSpec(**spec))
            log.info("vision stand-in %s: %s", name, made)
