"""Rules logit_distance_{spirals,sub,cifar100}_figures: the follow-up's metrics over epochs and
its bounds."""

from repdist.figures.logit_distance import bound_figure, metrics_figure
from repdist.figures.style import save_figure
from repdist.io import read_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]):
    title = sm.params.title
    save_figure(metrics_figure(read_csv(sm.input.summary), title),
                [sm.output.metrics_pdf, sm.output.metrics_png])
    save_figure(bound_figure(read_csv(sm.input.final), title),
                [sm.output.bound_pdf, sm.output.bound_png])
