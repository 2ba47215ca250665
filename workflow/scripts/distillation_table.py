"""Rule distillation_table: every student against its teacher (measures, accuracy, probes),
and the summary per loss."""

import json

import pandas as pd

from repdist.experiments.distillation.table import (
    LoadedSeed,
    Teachers,
    distillation_summary,
    student_rows,
)
from repdist.io import table_provenance, write_csv
from repdist.io.representations import load_representations
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)


def loaded(embeddings, unembeddings, metrics):
    f, g = load_representations(embeddings, unembeddings)
    return LoadedSeed(f, g, float(json.loads(open(metrics).read())["test_accuracy"]))


def seeds_of(prefix, n):
    files = zip(sm.input[f"{prefix}_embeddings"], sm.input[f"{prefix}_unembeddings"],
                sm.input[f"{prefix}_metrics"], strict=True)
    models = [loaded(*f) for f in files]
    return [models[i : i + n] for i in range(0, len(models), n)]


with job_log(sm.log[0]) as log:
    n = len(sm.params.teacher_seeds)
    teachers, students = seeds_of("teacher", n), seeds_of("student", n)
    per_config = len(sm.params.losses)
    frames = []
    for ci, (k, w) in enumerate(sm.params.configurations):
        model_cfg = Teachers(k, w, sm.params.teacher_seeds, **sm.params.data)
        by_loss = dict(zip(sm.params.losses, students[ci * per_config : (ci + 1) * per_config],
                           strict=True))
        frames.append(student_rows(model_cfg, teachers[ci], by_loss,
                                   sm.params.student_seed_offset, sm.params.measures))
    table = pd.concat(frames, ignore_index=True)
    summary = distillation_summary(table)
    log.info("per loss, over every configuration:\n%s",
             summary[summary["K"] == "all"].T.to_string())
    meta = table_provenance(sm.config, experiment="distillation", measures=sm.params.measures)
    write_csv(sm.output.table, table, meta)
    write_csv(sm.output.summary, summary, meta)
