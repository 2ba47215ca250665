# Helpers shared by all workflow files (output paths, per-experiment settings).


def out(path):
    """A path under the configured output folder."""
    return f"{OUT}/{path}"


def measure_settings(**overrides):
    """The d_LLV settings of config['measures'], with per-experiment overrides."""
    settings = {k: config["measures"][k] for k in ("lam", "dist_type", "sum_or_max")}
    settings.update(overrides)
    return settings


CONSTRUCTED_K = [c["num_classes"] for c in config["constructed"]["classifiers"]]
CONSTRUCTED_NOISE = {
    c["num_classes"]: c["noise_level"] for c in config["constructed"]["classifiers"]
}
