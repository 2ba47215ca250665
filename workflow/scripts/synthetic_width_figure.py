"""Rule synthetic_width_figure: paper Fig. 3 (right) / App. F.7 for a group of class counts."""

import pandas as pd

from repdist.figures.style import save_figure
from repdist.figures.synthetic import width_figure, width_summary
from repdist.io import read_parquet_metadata, table_provenance, write_csv
from repdist.runlog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    by_k: dict[int, list[pd.DataFrame]] = {}
    for path in sm.input:
        meta = read_parquet_metadata(path)
        by_k.setdefault(int(meta["K"]), []).append(pd.read_parquet(path).assign(width=meta["width"]))
    summaries = {
        k: width_summary(pd.concat(tables), sm.params.threshold, sm.params.min_seeds)
        for k, tables in sorted(by_k.items())
    }
    table = pd.concat([s.assign(num_classes=k) for k, s in summaries.items()], ignore_index=True)
    log.info("summary:\n%s", table.to_string())
    seeds = list(range(sm.config["synthetic"]["n_seeds"]))
    write_csv(sm.output.summary, table,
              table_provenance(sm.config, experiment="synthetic_width", seeds=seeds))
    fig = width_figure(summaries, sm.params.threshold, sm.params.min_seeds)
    save_figure(fig, [sm.output.pdf, sm.output.png])
