"""Rule cifar10_loss_diff_figure: paper Fig. 5 (App. F.4), with the protocol's test losses and
with eval-mode test losses."""

import pandas as pd

from repdist.figures.cifar import loss_diff_figure
from repdist.figures.style import save_figure
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]):
    pairs = {m: pd.read_parquet(p) for m, p in zip(sm.params.rep_dims, sm.input, strict=True)}
    for column, outputs in (("test_loss_diff", [sm.output.pdf, sm.output.png]),
                            ("test_loss_eval_diff", [sm.output.eval_pdf, sm.output.eval_png])):
        save_figure(loss_diff_figure(pairs, sm.params.standin, column), outputs)
