# repdist: reproduce every figure and table of Nielsen et al. (NeurIPS 2025) end to end.
# Run: snakemake --cores N   (toy scale: snakemake --cores N --configfile config.quick.yaml)

import sys
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")


# Paper-scale defaults beside this file; --configfile overlays (e.g. config.quick.yaml) merge on top.
configfile: Path(workflow.basedir) / "config.yaml"


# The package lives in src/; putting it on PYTHONPATH makes it importable by every job,
# including jobs in per-rule conda envs and on cluster nodes, without a pip install.
SRC = str(Path(workflow.basedir) / "src")
sys.path.insert(0, SRC)

from repdist.config_checks import check_cifar_available, check_config  # noqa: E402
from repdist.workflow_env import prepend_pythonpath  # noqa: E402

prepend_pythonpath(SRC)

validate(config, "workflow/schemas/config.schema.yaml")
check_config(config)

OUT = config["outdir"]


include: "rules/common.smk"
include: "rules/constructed.smk"
include: "rules/synthetic.smk"
include: "rules/cifar.smk"
include: "rules/beyond.smk"


# Target rules only collect files: on a cluster they run on the login node, not as jobs.
localrules:
    all,
    constructed_all,
    synthetic_all,
    cifar10_all,
    beyond_all,


onstart:
    # Once the DAG is known and before any job starts: a needed CIFAR-10 download that cannot
    # happen (offline, no copy) stops the run here, naming the key to set.
    if any(
        job.rule.name == "cifar10_download" for job in workflow.dag.needrun_jobs()
    ):
        check_cifar_available(config)


rule all:
    default_target: True
    input:
        rules.constructed_all.input,
        rules.synthetic_all.input,
        rules.cifar10_all.input if CIF["enabled"] else [],
        rules.beyond_all.input,
