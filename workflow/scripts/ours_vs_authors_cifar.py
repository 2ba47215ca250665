"""Rule ours_vs_authors_cifar: our CIFAR-10 fd2 seed s against the authors' seed s."""

import json

import pandas as pd

from repdist.experiments.retrace import ours_vs_authors, ours_vs_authors_markdown
from repdist.io import table_provenance, write_csv, write_table_text
from repdist.runlog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    models = {}
    for who in ("ours", "authors"):
        files = [sm.input[f"{who}_{n}"] for n in
                 ("embeddings_test.parquet", "unembeddings.parquet", "metrics.json")]
        models[who] = [(e, u, json.loads(open(m).read())) for e, u, m in zip(*files, strict=True)]
    # m_CCA on the test images (the embeddings compared here), named as the synthetic tables
    pairs = {f"{who}_pairs": pd.read_parquet(sm.input[f"{who}_pairs"]).rename(
        columns={"mcca_f_test": "mcca_f"}) for who in ("ours", "authors")}
    configuration = {"K": 10, "width": 128, "seeds": sm.params.seeds, **models, **pairs}
    table = ours_vs_authors([configuration], sm.params.measures)
    log.info("ours vs the authors' (CIFAR-10, M = 2):\n%s", table.to_string())
    meta = table_provenance(sm.config, experiment="ours_vs_authors_cifar")
    write_csv(sm.output.csv, table, meta)
    write_table_text(sm.output.md, ours_vs_authors_markdown(table), meta)
