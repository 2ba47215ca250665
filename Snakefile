# repdist: reproduce every figure and table of Nielsen et al. (NeurIPS 2025) end to end.
# Run: snakemake --cores N   (toy scale: snakemake --cores N --configfile config.quick.yaml)

import sys
from pathlib import Path

from snakemake.logging import logger
from snakemake.utils import min_version, validate

min_version("9.0")


# Paper-scale defaults beside this file; --configfile overlays (e.g. config.quick.yaml) merge on top.
configfile: Path(workflow.basedir) / "config.yaml"


# The package lives in src/; putting it on PYTHONPATH makes it importable by every job,
# including jobs in per-rule conda envs and on cluster nodes, without a pip install.
SRC = str(Path(workflow.basedir) / "src")
sys.path.insert(0, SRC)

from repdist.pipeline.config_checks import (
    check_config,
    check_removed_keys,
)  # noqa: E402
from repdist.pipeline.config_types import (
    named_null_section,
    whole_numbers_as_int,
)  # noqa: E402
from repdist.pipeline.overlays import adapt_to_overlays  # noqa: E402
from repdist.pipeline.run_lock import lock_results_folder  # noqa: E402
from repdist.pipeline.stopping import stop_on_signals  # noqa: E402
from repdist.pipeline.environment import prepend_pythonpath  # noqa: E402
from repdist.pipeline.warm import start_for_local_jobs  # noqa: E402

prepend_pythonpath(SRC)

SCHEMA = "workflow/schemas/config.schema.yaml"
named_null_section(config)
# a key config.yaml no longer holds stops the run, naming it and why
check_removed_keys(config)
validate(config, SCHEMA)
whole_numbers_as_int(config, Path(workflow.basedir) / SCHEMA)
# branches built on the synthetic grid follow an overlay that narrows it (pipeline/overlays.py);
# the log and the report's front page say what each left out
ADAPTED = adapt_to_overlays(config)
for note in ADAPTED:
    logger.info(f"config adapted: {note}")
check_config(config)
# read by the report's front page (report/workflow.rst); no job's hash holds it
config["adapted_to_overlays"] = ADAPTED

OUT = config["outdir"]


# Every numeric wildcard once: classes K, width W, fixed lengths G and F, dimension M, seed S,
# the compared seeds a and b. A rule may narrow one further (e.g. the stacked widths).
wildcard_constraints:
    K=r"\d+",
    W=r"\d+",
    G=r"\d+",
    F=r"\d+",
    M=r"\d+",
    S=r"\d+",
    a=r"\d+",
    b=r"\d+",


# The report's front page: what the run holds and which branches it left out.
report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/constructed.smk"
include: "rules/synthetic.smk"
include: "rules/cifar.smk"
# before paper_comparison.smk: the comparison reads which follow-up data sets the run holds
include: "rules/logit_distance.smk"
include: "rules/paper_comparison.smk"
include: "rules/roeder_words.smk"
include: "rules/roeder_cpc.smk"
include: "rules/roeder.smk"
include: "rules/authors.smk"
include: "rules/authors_cifar.smk"
include: "rules/synthetic_bound.smk"
include: "rules/distillation.smk"
include: "rules/models.smk"
include: "rules/lm.smk"
include: "rules/prh.smk"


# Target rules only collect files: on a cluster they run on the login node, not as jobs.
localrules:
    all,
    constructed_all,
    synthetic_all,
    cifar10_all,
    beyond_all,
    roeder_all,
    roeder_words_all,
    roeder_cpc_all,
    authors_all,
    authors_cifar_all,
    authors_cifar_theirs,
    bound_beyond_m2,
    distillation_all,
    logit_distance_all,
    models_all,
    lm_all,
    lm_models_all,
    prh_all,


# The head process only (cluster jobs run with --no-hooks): one run per results folder, and
# SIGTERM or SIGINT cancel the jobs and end the run within a bounded time (pipeline/stopping.py).
onstart:
    check_downloads({job.rule.name for job in workflow.dag.needrun_jobs()})
    check_lm_models_downloads(workflow.dag.needrun_jobs())
    check_prh_downloads(workflow.dag.needrun_jobs())
    lock_results_folder(OUT)
    stop_on_signals(workflow.persistence.unlock, log=logger.warning)
    start_for_local_jobs(
        config["warm_starts"],
        workflow.local_exec,
        GPUS,
        workflow.dag.needrun_jobs(),
    )


rule all:
    default_target: True
    input:
        branch_targets(),
