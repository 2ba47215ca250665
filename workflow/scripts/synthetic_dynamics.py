"""Rule training_dynamics: seed-pair similarity at snapshots during training."""

import torch

from repdist.experiments.synthetic.dynamics import snapshots_metadata, training_dynamics
from repdist.experiments.synthetic.training import SyntheticModelConfig
from repdist.figures.dynamics import dynamics_figure
from repdist.figures.style import save_figure
from repdist.io import write_parquet
from repdist.pipeline.joblog import job_log
from repdist.training.loop import TrainConfig

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    torch.set_num_threads(sm.threads)
    model_cfg = SyntheticModelConfig(**sm.params.model_cfg)
    train_cfg = TrainConfig(**sm.params.train_cfg)
    table = training_dynamics(model_cfg, train_cfg, sm.params.snapshots, sm.params.measures)
    log.info("means per step:\n%s", table.groupby("step")[["mcca_f", "d_llv", "d_fg"]].mean())
    write_parquet(sm.output.table, table,
                  snapshots_metadata(model_cfg, train_cfg.protocol, sm.params.measures))
    title = f"Training dynamics, K = {model_cfg.num_classes}, width {model_cfg.width}"
    save_figure(dynamics_figure(table, title), [sm.output.pdf, sm.output.png])
