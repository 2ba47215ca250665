"""The Platonic Representation Hypothesis' study (`prh:`) as the DAG sees it before any job: its
models, its pairs, the checks of its keys, and whether what the run reads can be had from here.
Nothing here imports torch or transformers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..io.hub import path_shaped
from .config_errors import ConfigError, need
from .lm_model_sources import LMModel, Probe, check_sources, hub_unreachable, model_file

MODALITIES = ("language", "vision")


@dataclass(frozen=True)
class StudyEntry:
    """One model of the study: its modality, its source and its family (the figure's panel)."""

    modality: str
    source: LMModel
    family: str

    @property
    def name(self) -> str:
        return self.source.name


def study_entries(config: Mapping[str, Any]) -> list[StudyEntry]:
    """The models of `prh.language` then `prh.vision`, in the config's order."""
    out = []
    for modality in MODALITIES:
        for name, e in (config["prh"].get(modality) or {}).items():
            source = LMModel(name, e.get("model"), e.get("revision"), e.get("tokenizer"),
                             e.get("standin"))
            family = e.get("family") or (e.get("standin") or {}).get("arch") or name
            out.append(StudyEntry(modality, source, str(family)))
    return out


def study_on(config: Mapping[str, Any]) -> bool:
    """The study runs when both prh.language and prh.vision name models."""
    prh = config.get("prh") or {}
    return bool(prh.get("language")) and bool(prh.get("vision"))


def pairs_standin(config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The stand-in pairs' settings (n, seed, size), or None when the pairs are read."""
    spec = config["prh"]["pairs"].get("standin")
    return None if spec is None else {"n": 256, "seed": 0, "size": 32, **spec}


def check_prh(config: Mapping[str, Any]) -> None:
    """The study's keys; no `prh` section leaves the study out, as naming neither side does."""
    prh = config.get("prh") or {}
    empty = [m for m in MODALITIES if not prh.get(m)]
    if len(empty) == 1:
        need(False, f"prh.{empty[0]}", "the study compares language models with vision "
             f"encoders: name both (prh.{empty[0]} names none)")
    if empty:
        return
    entries = study_entries(config)
    for modality in MODALITIES:
        check_sources([e.source for e in entries if e.modality == modality], f"prh.{modality}")
    for entry in entries:
        key = f"prh.{entry.modality}.{entry.name}"
        spec = entry.source.standin or {}
        width, heads = spec.get("width", 16), spec.get("heads", 2)
        need(width % heads == 0, f"{key}.standin.heads", f"must divide the width {width}, got "
             f"{heads}")
        if entry.modality == "vision" and spec:
            size, patch = spec.get("image_size", 32), spec.get("patch_size", 8)
            need(size % patch == 0, f"{key}.standin.patch_size",
                 f"must divide image_size {size}, got {patch}")
    pairs = prh["pairs"]
    standin = pairs_standin(config)
    if standin is None:
        dataset = str(pairs["dataset"])
        need(not path_shaped(dataset) or Path(dataset).expanduser().is_dir(), "prh.pairs.dataset",
             f"{dataset!r} is a path and no folder is there: give a folder of images and "
             "metadata.jsonl (or parquet files), or a hub dataset id such as minhuh/prh")
    else:
        need(prh["k"] < standin["n"], "prh.k", f"k = {prh['k']} neighbours need more than "
             f"{standin['n']} pairs (prh.pairs.standin.n)")


def dataset_cached(repo: str, revision: str | None) -> bool:
    """Whether a hub dataset's files are in the local Hugging Face cache."""
    try:
        from huggingface_hub import snapshot_download
        snapshot_download(repo, repo_type="dataset", revision=revision, local_files_only=True)
    except Exception:  # not cached, or huggingface_hub missing where the DAG is built
        return False
    return True


def check_prh_available(config: Mapping[str, Any], needed: Sequence[str],
                        probe: Probe | None = None) -> None:
    """ConfigError with the `hf download` of each uncached source needed, the hub unreachable."""
    if not study_on(config):
        return
    models = [e.source for e in study_entries(config) if e.name in needed]
    missing = [m for m in models if m.on_hub and model_file(m, "config.json") is None]
    fetch = [f"hf download {m.model}" + (f" --revision {m.revision}" if m.revision else "")
             for m in missing]
    pairs = config["prh"]["pairs"]
    dataset = str(pairs["dataset"])
    if (needed and pairs_standin(config) is None and not Path(dataset).expanduser().is_dir()
            and not dataset_cached(dataset, pairs.get("revision"))):
        at = f" --revision {pairs['revision']}" if pairs.get("revision") else ""
        fetch.append(f"hf download {dataset} --repo-type dataset{at}")
    if not fetch or (why := hub_unreachable(probe)) is None:
        return
    raise ConfigError(
        f"config key 'prh': not folders and not in the Hugging Face cache, and the hub cannot be "
        f"reached from here ({why}): " + "; ".join(fetch) + ". Run these where the hub is "
        "reachable (then set HF_HOME here to that cache), or give folders; nothing was run")
