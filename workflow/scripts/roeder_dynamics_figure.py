"""Rule roeder_dynamics_figure: Roeder et al.'s Fig. 2b (mean CCA between seeds over training)
for each data variant, with d_LLV and d_{f,g} of the same pairs; the curves as a table."""

import pandas as pd

from repdist.experiments.paper_comparison.checks import ROEDER_CLAIMED_STEP
from repdist.experiments.roeder.curves import snapshot_curves
from repdist.figures.dynamics import dynamics_figure
from repdist.figures.style import save_figure
from repdist.io import table_provenance, write_csv
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    tables = {int(d): pd.read_parquet(p)
              for d, p in zip(sm.params.noise_dims, sm.input.snapshots, strict=True)}
    curves = snapshot_curves(tables)
    log.info("curves:\n%s", curves.to_string())
    write_csv(sm.output.table, curves, table_provenance(sm.config, experiment="roeder"))
    runs = {f"{d} noise dimensions": t for d, t in tables.items()}
    fig = dynamics_figure(runs, "Roeder et al.'s simulation (Fig. 2b)", ROEDER_CLAIMED_STEP,
                          "Roeder: ≈4,000 iterations")
    save_figure(fig, [sm.output.pdf, sm.output.png])
