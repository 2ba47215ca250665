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

from repdist.config_checks import (  # noqa: E402
    check_authors_available,
    check_authors_cifar_available,
    check_cifar_available,
    check_config,
)
from repdist.workflow_env import prepend_pythonpath  # noqa: E402

prepend_pythonpath(SRC)

validate(config, "workflow/schemas/config.schema.yaml")
check_config(config)

OUT = config["outdir"]


# The report's front page: what the run holds and which branches it left out.
report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/constructed.smk"
include: "rules/synthetic.smk"
include: "rules/cifar.smk"
include: "rules/beyond.smk"
include: "rules/authors.smk"
include: "rules/bound.smk"
include: "rules/models.smk"


# Target rules only collect files: on a cluster they run on the login node, not as jobs.
localrules:
    all,
    constructed_all,
    synthetic_all,
    cifar10_all,
    beyond_all,
    authors_all,
    authors_cifar_all,
    bound_beyond_m2,
    models_all,


onstart:
    # Once the DAG is known and before any job starts: a needed download that cannot happen
    # (offline, no copy) stops the run here, naming the key to set.
    needed = {job.rule.name for job in workflow.dag.needrun_jobs()}
    if "cifar10_download" in needed:
        check_cifar_available(config)
    if "authors_download" in needed:
        check_authors_available(config)
    if "authors_cifar_download" in needed:
        check_authors_cifar_available(config)
    if AUT["enabled"] == "auto" and not AUTHORS_ON:
        logger.info(
            "The authors' models are left out: no copy in "
            f"{AUT['resources']} and authors_models.root is not set (`make authors` downloads "
            "them; `make run` includes them)."
        )


rule all:
    default_target: True
    input:
        rules.constructed_all.input,
        rules.synthetic_all.input,
        rules.cifar10_all.input if CIF["enabled"] else [],
        rules.beyond_all.input,
        rules.authors_all.input if AUTHORS_ON else [],
        rules.authors_cifar_all.input if AUT_CIFAR_ON else [],
        rules.bound_beyond_m2.input if BB["enabled"] else [],
        rules.models_all.input,
