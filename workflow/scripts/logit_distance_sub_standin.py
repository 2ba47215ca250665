"""Rule logit_distance_sub_standin: SUB's test split in the hub's layout (stand-in images) and a
tiny DINOv2 built from a config at the run's seed (untrained, as wide as SUB's features), with its
image processor: what logit_distance_sub_features reads in place of the hub's."""

from repdist.data.sub import write_sub_image_standin
from repdist.io import atomic_folder
from repdist.models.prh_standins import VisionStandinSpec, save_vision_standin
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    p = sm.params
    write_sub_image_standin(sm.output.images, p.per_bird, p.seed, p.birds, p.attributes)
    width = p.features_dim
    spec = VisionStandinSpec("dinov2", width=width, layers=1,
                             heads=width // 64 if width % 64 == 0 else 1, seed=p.seed)
    with atomic_folder(sm.output.encoder) as tmp:
        made = save_vision_standin(tmp, spec)
    log.info("SUB stand-in: %d images a bird, %d birds; encoder %s", p.per_bird, p.birds, made)
