"""Rule paper_comparison: our numbers next to the paper's, with tolerances and verdicts."""

import pandas as pd

from repdist.experiments.paper_comparison.checks import (
    alignment_checks,
    bound_checks,
    cifar_checks,
    distillation_checks,
    comparison_frame,
    comparison_markdown,
    kl_table_checks,
    prh_study_checks,
    retrace_checks,
    roeder_checks,
    roeder_words_checks,
    roeder_cpc_checks,
    run_title,
    tightness_checks,
    width_checks,
    width_tables,
    workshop_checks,
)
from repdist.experiments.logit_distance.tables import follow_up_checks, probe_checks
from repdist.io import (
    read_csv,
    read_table_metadata,
    table_provenance,
    write_csv,
    write_table_text,
)
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    checks = kl_table_checks(read_csv(sm.input.kl_table))
    constructed = {k: read_csv(p) for k, p in zip(sm.params.constructed_k,
                                                     sm.input.constructed, strict=True)}
    trained = pd.concat([pd.read_parquet(p) for p in sm.input.trained], ignore_index=True)
    checks += bound_checks(constructed, trained)
    checks += width_checks(width_tables(sm.input.widths), width_tables(sm.input.width_baselines))
    checks += workshop_checks(read_csv(sm.input.workshop))
    checks += alignment_checks(read_csv(sm.input.alignment))
    if sm.input.prh_study:
        checks += prh_study_checks(read_csv(sm.input.prh_study[0]), sm.params.prh_standins)
    if sm.input.tightness:
        checks += tightness_checks(read_csv(sm.input.tightness[0]))
    if sm.input.authors_alignment:
        checks += alignment_checks(read_csv(sm.input.authors_alignment[0]), "the authors' models")
    if sm.input.authors:
        checks += retrace_checks(read_csv(sm.input.authors[0]), standin=sm.params.authors_standin)
    if sm.input.distillation:
        checks += distillation_checks(read_csv(sm.input.distillation[0]))
    for name, final_csv in zip(sm.params.logit_sets.values(), sm.input.logit_distance):
        final = read_csv(final_csv)
        checks += follow_up_checks(final, name)
        checks += probe_checks(final, name, sm.params.sub_standin)
    if sm.input.roeder:
        checks += roeder_checks(read_csv(sm.input.roeder[0]))
    if sm.input.roeder_words:
        pairs_csv, fit_csv = sm.input.roeder_words
        data = read_table_metadata(pairs_csv).get("corpus", "?")
        checks += roeder_words_checks(read_csv(pairs_csv), read_csv(fit_csv),
                                      f"{data} corpus")
    if sm.input.roeder_cpc:
        data = read_table_metadata(sm.input.roeder_cpc[0])["data"]
        checks += roeder_cpc_checks(read_csv(sm.input.roeder_cpc[0]), data)
    if sm.input.cifar:
        checks += cifar_checks(pd.read_parquet(sm.input.cifar[0]),
                               tuple(sm.params.comparison_seeds), sm.params.standin)
    scale = sm.params.scale
    run = run_title(sm.config["outdir"], sm.params.configfiles, scale)
    frame = comparison_frame(checks, scale)
    log.info("paper comparison of %s:\n%s", run, frame.to_string())
    meta = table_provenance(sm.config, experiment="paper_comparison", scale=scale, run=run)
    write_csv(sm.output.csv, frame, meta)
    write_table_text(sm.output.md, comparison_markdown(frame, sm.config["protocol"], run, scale),
                     meta)
