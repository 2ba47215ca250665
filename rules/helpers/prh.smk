# Helpers of rules/prh.smk.
import re

from repdist.pipeline.prh_sources import (
    check_prh_available,
    pairs_standin,
    study_entries,
    study_on,
)

PRH = config["prh"]
PRH_ON = study_on(config)
PRH_ENTRIES = {(e.modality, e.name): e for e in study_entries(config)} if PRH_ON else {}
PRH_PAIRS_STANDIN = pairs_standin(config)
PRH_STANDINS = {
    m: {
        n: dict(e.source.standin)
        for (mm, n), e in PRH_ENTRIES.items()
        if mm == m and e.source.standin
    }
    for m in ("language", "vision")
}
PRH_NEEDS_STANDINS = PRH_PAIRS_STANDIN is not None or any(PRH_STANDINS.values())
PRH_EXTRACT_GPU = GPU_PLAN.uses_gpu(PRH["device"])
# what the alignment reads of `prh` (the models' own entries are in their jobs' configs)
PRH_ALIGNMENT_KEYS = (
    "metric",
    "k",
    "outlier_quantile",
    "exact_quantile",
    "concatenated",
)


def prh_standin_folder():
    return out("prh/standins")


def prh_pairs():
    """Where the pairs are read: the stand-in folder or the configured dataset."""
    pairs = dict(PRH["pairs"])
    if PRH_PAIRS_STANDIN is not None:
        pairs.update(dataset=f"{prh_standin_folder()}/pairs", revision=None)
    pairs.pop("standin", None)
    return pairs


def prh_source(modality, name):
    """A model's folder (its stand-in's) or hub id, revision and tokenizer, and family."""
    entry = PRH_ENTRIES[(modality, name)]
    s = entry.source
    model = f"{prh_standin_folder()}/{modality}/{name}" if s.standin else s.model
    return {
        "model": model,
        "revision": s.revision,
        "tokenizer": s.tokenizer or model,
        "tokenizer_revision": None if s.tokenizer else s.revision,
        "family": entry.family if modality == "vision" else None,
    }


def prh_features(modality="{modality}", name="{name}"):
    return out(f"prh/{modality}/{name}")


def prh_model_keys():
    return list(PRH_ENTRIES)


def prh_names():
    """The models' names as a wildcard pattern (none: a pattern no name matches)."""
    names = sorted({n for _, n in PRH_ENTRIES})
    return "|".join(re.escape(n) for n in names) or "(?!)"


def prh_extract_inputs(wildcards):
    return [prh_standin_folder()] if PRH_NEEDS_STANDINS else []


def prh_run_config(modality=None, name=None):
    """The config an extraction job records: the pairs, how features are read, and its own
    entry (adding a model reruns no other); the alignment's: its keys and every entry.
    """
    keep = {k: PRH[k] for k in ("pairs", "padding", "batch_size")}
    if modality is None:
        keep = {**keep, **{k: PRH[k] for k in PRH_ALIGNMENT_KEYS}}
        keep.update(language=PRH["language"], vision=PRH["vision"])
    else:
        keep[modality] = {name: PRH[modality][name]}
    return {**run_config(), "prh": keep}


def check_prh_downloads(jobs):
    """At start-up: the hub models and dataset this run must read, not here and not reachable,
    stop the run naming each `hf download` line (pipeline/prh_sources.py)."""
    needed = [j.wildcards.get("name") for j in jobs if j.rule.name == "prh_extract"]
    check_prh_available(config, needed)
