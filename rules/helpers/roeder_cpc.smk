# Helpers of rules/roeder_cpc.smk.
import re
from dataclasses import asdict

from repdist.experiments.roeder.cpc_tables import base_configuration, configurations
from repdist.pipeline.availability import cpc_reads_cifar

CPC = config["roeder"]["cpc"]
CPC_ON = config["roeder"]["enabled"] and CPC["enabled"]
CPC_SEEDS = list(range(CPC["n_seeds"]))
# every stack the panels need, once; the base one is panel (b)'s, and (c)'s with all the data
CPC_CONFIGS = {c.name: c for c in configurations(CPC)}
CPC_BASE = base_configuration(CPC).name
CPC_GPU = GPU_PLAN.uses_gpu(CPC["device"])
CPC_CHANNELS = {"cifar10": 3, "digits": 1}[CPC["dataset"]]
CPC_INPUTS = (
    CPC_CHANNELS * CPC["patch"][0] * CPC["patch"][1]
)  # a flattened patch's length


def cpc_file(name, C="{C}"):
    return out(f"roeder_cpc/{C}/{name}")


def cpc_seed_files(name):
    """One file per seed of a configuration (its wildcard C left open)."""
    return [cpc_file(f"seed{s}/{name}") for s in CPC_SEEDS]


def cpc_configuration_pattern():
    return "|".join(re.escape(name) for name in CPC_CONFIGS) or r"(?!)"


def cpc_model_settings(wildcards):
    """CPCModelConfig fields of configuration C."""
    c = CPC_CONFIGS[wildcards.C]
    keys = (
        "dataset",
        "depth",
        "rep_dim",
        "n_validation",
        "n_test",
        "split_seed",
        "patch",
        "shared_draws",
    )
    return {
        **{k: CPC[k] for k in keys},
        "augment": dict(CPC["augment"]),
        "width": c.width,
        "data_fraction": c.data_fraction,
        "seeds": CPC_SEEDS,
    }


def cpc_training(wildcards):
    """The clean protocol (exactly `steps` steps, early-stopped) at the configuration's budget."""
    steps = CPC_CONFIGS[wildcards.C].steps
    return {**CPC["training"], "protocol": "clean", "steps": steps}


def cpc_snapshots(wildcards):
    steps = CPC_CONFIGS[wildcards.C].steps
    return list(range(0, steps + 1, CPC["snapshot_every"]))


def cpc_cifar_folder(wildcards, input):
    """The cifar-10-batches-py folder of the job's input files (None on the digits)."""
    return str(Path(input[0]).parent) if len(input) else None


def cpc_data_files():
    return cifar_data_files() if cpc_reads_cifar(config) else []


def cpc_step_flops(width):
    """Floating-point operations of one training step of a stack: f and g, forward and
    backward (3 x 2 per weight), every seed, every image of a batch."""
    weights = (
        CPC_INPUTS * width + (CPC["depth"] - 1) * width**2 + width * CPC["rep_dim"]
    )
    return 6 * 2 * weights * CPC["n_seeds"] * CPC["training"]["batch_size"]


def cpc_runtime(wildcards, attempt=1):
    """Minutes, times the attempt: the configuration's steps, each the larger of a floor and
    its flops over a rate, doubled, plus 5. One CPU core: 2e10 flop/s (the digits' width-128
    and -256 stacks of 10 seeds did 2.3e10 and 3.9e10 per second of CPU time, start-up
    included, on a 2-core AMD EPYC, 1.6e10 and 2.6e10 on cores shared with other work:
    docs/results.md, CHANGELOG.md), 1 ms floor; a GPU: 3e13 flop/s (float32
    matrix products of an H100 at width 8,192) and a 6 ms floor (a narrow step's kernel
    launches), estimated (docs/gpu.md)."""
    c = CPC_CONFIGS[wildcards.C]
    rate, floor = (3e13, 6e-3) if CPC_GPU else (2e10, 1e-3)
    step_minutes = max(floor, cpc_step_flops(c.width) / rate) / 60
    return training_jobs.job_minutes(
        2 * step_minutes, [c.steps], floor=5, margin=5, times=attempt
    )


def cpc_mem_mb():
    """CIFAR-10's images as float32 (600 MB) twice over, or the digits' few."""
    return 4000 if CPC["dataset"] == "cifar10" else 2000


def cpc_pairs_files():
    """Every configuration's seed files by kind, configuration-major (the pairs job's inputs)."""
    return {
        key: [cpc_file(f"seed{s}/{name}", c) for c in CPC_CONFIGS for s in CPC_SEEDS]
        for key, name in MODEL_TABLES.items()
    }


def cpc_pair_measures():
    """The pairs tables' measures, with d_LLV's candidate input sets as many as the held-out
    images allow (N // (M + 1), at most 200)."""
    return {**pair_measures(), "num_samples": None}


def cpc_targets():
    """What roeder_all builds of Fig. 3 (nothing when roeder.cpc is off)."""
    if not CPC_ON:
        return []
    return [*figure_files("roeder_cpc"), out("tables/roeder_cpc_summary.csv")]
