# Helpers of rules/roeder.smk.
from repdist.pipeline.overlays import NEURIPS_FIT, neurips_fit_trained

ROEDER = config["roeder"]
ROEDER_NOISE = [v["noise_dims"] for v in ROEDER["variants"]]
ROEDER_SEEDS = list(range(ROEDER["n_seeds"]))
NEURIPS_FIT_NAME = "K{}_w{}".format(*NEURIPS_FIT)  # the NeurIPS Fig. 2c's file names


def roeder_file(name, D="{D}"):
    return out(f"roeder/noise{D}/{name}")


def roeder_seed_files(name):
    """One file per seed of a variant (its wildcard D left open)."""
    return [roeder_file(f"seed{s}/{name}") for s in ROEDER_SEEDS]


def roeder_model_settings(wildcards):
    """RoederModelConfig fields of one variant."""
    keys = ("num_classes", "width", "depth", "g_depth", "rep_dim", "n_train", "n_test")
    return {
        **{k: ROEDER[k] for k in keys + ("train_data_seed", "test_data_seed")},
        "noise_dims": int(wildcards.D),
        "seeds": ROEDER_SEEDS,
    }


def roeder_training(wildcards):
    """The clean protocol (Roeder's exact iteration count) at the variant's learning rate."""
    lr = {v["noise_dims"]: v["lr"] for v in ROEDER["variants"]}[int(wildcards.D)]
    return training_settings("roeder", protocol="clean", lr=lr)


def roeder_snapshots():
    return list(range(0, ROEDER["training"]["steps"] + 1, ROEDER["snapshot_every"]))


def roeder_fit_embeddings(D):
    """The embeddings of Fig. 2c's two seeds (model a, model b) of one variant."""
    return [roeder_file(f"seed{s}/embeddings.parquet", D) for s in ROEDER["fit_seeds"]]


def neurips_fit_embeddings():
    """The same two seeds of the NeurIPS synthetic models at NEURIPS_FIT (K, width),
    unnormalised."""
    k, w = NEURIPS_FIT
    return [
        synthetic_file(f"seed{s}/embeddings.parquet", K=k, W=w, G=0, F=0)
        for s in ROEDER["fit_seeds"]
    ]


def neurips_fit_available():
    """Whether the synthetic grid trains the NeurIPS Fig. 2c models (an overlay may narrow it:
    the log and the report's front page then say so, pipeline/overlays.py)."""
    return neurips_fit_trained(config)


def roeder_runtime(wildcards, attempt=1):
    """Minutes, times the attempt: a job of 10 seeds x 50,000 steps at width 64 took 6.4-8.6 min
    on one core of a 2-core AMD EPYC (docs/results.md), given 35."""
    scale = ROEDER["n_seeds"] / 10 * ROEDER["training"]["steps"] / 50000
    width = (ROEDER["width"] / 64) ** 2
    return training_jobs.job_minutes(
        30, [scale, width], floor=5, margin=5, times=attempt
    )
