"""Rule synthetic_data_figure: paper Fig. 4 for one class count."""

from repdist.data.radial import make_radial
from repdist.figures.style import save_figure
from repdist.figures.synthetic import data_figure
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]):
    data = make_radial(sm.params.n_train, int(sm.wildcards.K), sm.params.seed)
    save_figure(data_figure(data), [sm.output.pdf, sm.output.png])
