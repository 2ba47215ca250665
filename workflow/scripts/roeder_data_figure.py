"""Rule roeder_data_figure: Roeder et al.'s Fig. 2a, the training inputs' two signal
coordinates coloured by class (the noise columns of the other variant do not change them)."""

from repdist.data.roeder import make_roeder
from repdist.figures.style import save_figure
from repdist.figures.synthetic import data_figure
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]):
    data = make_roeder(sm.params.n_train, sm.params.seed, sm.params.num_classes)
    save_figure(data_figure(data, "Roeder et al.'s simulation data", cmap="tab20"),
                [sm.output.pdf, sm.output.png])
