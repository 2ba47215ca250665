"""Rule prh_alignment: every language model beside every vision encoder, the metric maximised
over layer pairs, raw and beside the null of the maximum, Benjamini-Hochberg over the matrix."""

from repdist.experiments.prh.study import StudySettings, read_study_model, study_table
from repdist.io import table_provenance, write_csv, write_parquet
from repdist.measures.null import null_settings
from repdist.pipeline.joblog import job_log
from repdist.training.progress import ProgressLog

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    p = sm.params
    models = [read_study_model(n, f) for n, f in zip(p.names, sm.input, strict=True)]
    language = [m for m in models if m.modality == "language"]
    vision = [m for m in models if m.modality == "vision"]
    settings = StudySettings(**p.settings)
    null = null_settings(p.null)
    bar = ProgressLog(len(language) * len(vision))
    table = study_table(language, vision, settings, null,
                        progress=lambda done, total: bar.due() and bar.report(done, None))
    log.info("%s over layer pairs%s:\n%s", settings.metric,
             f", beside a null of {null.permutations} permutations" if null else "",
             table[["language", "vision", "score", "language_layer", "vision_layer", "tau",
                    "calibrated", "q"]].to_string())
    meta = table_provenance(sm.config, experiment="prh_study", settings=p.settings,
                            null=p.null, models={m.name: dict(m.info) for m in models})
    write_parquet(sm.output.table, table, meta)
    write_csv(sm.output.csv, table, meta)
