"""Rules logit_distance_{spirals,sub,cifar100}_table: the snapshots as a table, each student's
final row (nulls, Theorem F.1, the KL bound; SUB's concept probe beside its teacher's) and their
figures' inverse-variance averages over teachers."""

import json
from pathlib import Path

import pandas as pd

from repdist.experiments.logit_distance.tables import (
    final_table,
    inverse_variance_summary,
    probe_columns,
)
from repdist.io import table_provenance, write_csv
from repdist.io.representations import load_representations
from repdist.measures.null import null_settings
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    i = sm.input
    null = sm.params.null
    settings = null_settings({k: null[k] for k in ("permutations", "alpha", "seed")})
    teachers = {int(t): load_representations(e, u) for t, e, u in zip(
        sm.params.teacher_seeds, i.teacher_embeddings, i.teacher_unembeddings, strict=True)}
    students = [load_representations(e, u)
                for e, u in zip(i.student_embeddings, i.student_unembeddings, strict=True)]
    teacher_metrics = {int(t): json.loads(Path(m).read_text())
                       for t, m in zip(sm.params.teacher_seeds, i.teacher_metrics, strict=True)}
    members = [{"teacher_seed": t, "loss": loss, "seed": s,
                **probe_columns(json.loads(Path(m).read_text()), teacher_metrics[int(t)])}
               for (t, loss, s), m in zip(sm.params.members, i.student_metrics, strict=True)]
    final = final_table(members, teachers, students, settings, sm.params.d_rep_subsets)
    snapshots = pd.read_parquet(i.snapshots)
    summary = inverse_variance_summary(snapshots)
    meta = table_provenance(sm.config, experiment="logit_distance", data=sm.params.dataset)
    write_csv(sm.output.snapshots, snapshots, meta)
    write_csv(sm.output.final, final, meta)
    write_csv(sm.output.summary, summary, meta)
    log.info("final rows:\n%s", final.groupby("loss")[
        ["mcca_f", "mcca_f_calibrated", "d_rep", "d_logit", "kl", "f1_holds"]].mean().to_string())
