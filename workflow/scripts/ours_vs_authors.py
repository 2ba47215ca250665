"""Rule ours_vs_authors: our seed s against the authors' seed s, per configuration."""

import json

import pandas as pd

from repdist.experiments.retrace import ours_vs_authors, ours_vs_authors_markdown
from repdist.io import table_provenance, write_csv, write_table_text
from repdist.runlog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    configurations = []
    for k, w in sm.params.configurations:
        models = {}
        for who in ("ours", "authors"):
            files = [sm.input[f"{who}_{k}_{w}_{n}"] for n in
                     ("embeddings.parquet", "unembeddings.parquet", "metrics.json")]
            models[who] = [(e, u, json.loads(open(m).read())) for e, u, m in zip(*files,
                                                                                 strict=True)]
        configurations.append({
            "K": k, "width": w, "seeds": sm.params.seeds, **models,
            "ours_pairs": pd.read_parquet(sm.input[f"ours_pairs_{k}_{w}"]),
            "authors_pairs": pd.read_parquet(sm.input[f"authors_pairs_{k}_{w}"]),
        })
    table = ours_vs_authors(configurations, sm.params.measures)
    log.info("ours vs the authors':\n%s", table.to_string())
    meta = table_provenance(sm.config, experiment="ours_vs_authors")
    write_csv(sm.output.csv, table, meta)
    write_table_text(sm.output.md, ours_vs_authors_markdown(table), meta)
