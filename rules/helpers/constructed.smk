# Helpers of rules/constructed.smk.
CONSTRUCTED_NOISE = {
    c["num_classes"]: c["noise_level"] for c in config["constructed"]["classifiers"]
}
