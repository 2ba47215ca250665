"""The outside language models of `lm.models`, as the DAG sees them before any job: where each
one's files are, whether the models share a tokenizer, and whether a hub model can be had here.
Nothing here imports torch or transformers: tokenizers are compared by the digest of their files
(io/hub.py::tokenizer_digest). A model whose files are not here yet is compared when its
extraction job loads its tokenizer (experiments/lm/extraction.py::check_same_vocabulary)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..io.download import unreachable
from ..io.hub import HUB_URL, hub_file, hub_offline, path_shaped, tokenizer_digest
from .config_errors import ConfigError, need

STANDIN_TOKENIZER = "repdist stand-in tokenizer"  # every stand-in of a run has the same one


@dataclass(frozen=True)
class LMModel:
    """One entry of `lm.models`: a hub id or a folder (`model`) at `revision`, its tokenizer
    (default: the model's own), or a stand-in built here from `standin` (tests, make quick)."""

    name: str
    model: str | None = None
    revision: str | None = None
    tokenizer: str | None = None
    standin: Mapping[str, Any] | None = None

    @property
    def local(self) -> Path | None:
        """The model's folder, when `model` names one."""
        if self.model is None:
            return None
        folder = Path(self.model).expanduser()
        return folder if folder.is_dir() else None

    @property
    def on_hub(self) -> bool:
        """A hub id (not a stand-in, a folder here, or a path: io/hub.py::path_shaped)."""
        return (self.standin is None and self.local is None and self.model is not None
                and not path_shaped(self.model))

    @property
    def where(self) -> str:
        """The model as a person names it: a folder, id@revision, or the stand-in's layout."""
        if self.standin is not None:
            return f"stand-in {self.standin.get('arch')}"
        return self.model + (f"@{self.revision}" if self.revision else "")


def lm_models(config: Mapping[str, Any]) -> list[LMModel]:
    """The entries of `lm.models`, in the config's order."""
    entries = config["lm"].get("models") or {}
    return [LMModel(name, e.get("model"), e.get("revision"), e.get("tokenizer"),
                    e.get("standin")) for name, e in entries.items()]


def model_file(entry: LMModel, filename: str) -> Path | None:
    """One of the model's files, from its folder or the cache; None when not here (a stand-in)."""
    if entry.standin is None and entry.model is not None:
        return hub_file(entry.model, filename, entry.revision)
    return None


def tokenizer_identity(entry: LMModel) -> str | None:
    """The model's tokenizer digest, None when its files are not here; stand-ins share one."""
    if entry.standin is not None:
        return STANDIN_TOKENIZER
    if entry.tokenizer:
        return tokenizer_digest(entry.tokenizer)
    return tokenizer_digest(entry.model, entry.revision) if entry.model else None


def check_shared_tokenizer(entries: Sequence[LMModel]) -> None:
    """ConfigError naming the groups when the models' tokenizers differ; absent ones are skipped."""
    groups: dict[str, list[str]] = {}
    for entry in entries:
        digest = tokenizer_identity(entry)
        if digest is not None:
            groups.setdefault(digest, []).append(entry.name)
    need(len(groups) <= 1, "lm.models",
         "the models compared together must share a tokenizer (the same contexts, the same "
         "labels), but they do not: " + "; ".join(
             f"{', '.join(names)} share one" if len(names) > 1 else f"{names[0]} has its own"
             for names in groups.values()) +
         ". Compare models of one tokenizer per run (e.g. one overlay per family)")


def check_sources(entries: Sequence[LMModel], section: str = "lm.models") -> None:
    """ConfigError for a `model:` or `tokenizer:` that is a path (io/hub.py::path_shaped) where
    no folder is, or a `revision:` of a folder; `section`: the entries' config key."""
    for entry in entries:
        for key, value in (("model", entry.model), ("tokenizer", entry.tokenizer)):
            need(value is None or not path_shaped(value) or Path(value).expanduser().is_dir(),
                 f"{section}.{entry.name}.{key}",
                 f"{value!r} is a path (not a hub id such as 'gpt2' or 'EleutherAI/pythia-70m') "
                 "and no folder is there: give the folder save_pretrained wrote (a relative "
                 "path is read from the directory snakemake runs in), or a hub id")
        need(entry.revision is None or entry.local is None, f"{section}.{entry.name}.revision",
             f"{entry.model} is a folder, which holds one set of weights: from_pretrained "
             f"ignores a revision there, so {entry.revision!r} would not be the weights used. "
             "Leave revision out, or give the hub id at that revision (or a folder saved from "
             "it)")


Probe = Callable[[str], str | None]


def hub_unreachable(probe: Probe | None = None) -> str | None:
    """Why the hub cannot be reached (HF_HUB_OFFLINE, or no connection); None when it can."""
    if hub_offline():
        return "HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set"
    return (probe or unreachable)(HUB_URL)


def check_lm_models_available(entries: Sequence[LMModel], probe: Probe | None = None) -> None:
    """ConfigError naming each uncached hub model, while the hub cannot be reached."""
    missing = [e for e in entries if e.on_hub and model_file(e, "config.json") is None]
    if not missing or (why := hub_unreachable(probe)) is None:
        return
    names = ", ".join(f"{e.name} ({e.where})" for e in missing)
    fetch = "; ".join(f"hf download {e.model}" + (f" --revision {e.revision}" if e.revision
                                                   else "") for e in missing)
    raise ConfigError(
        f"config key 'lm.models': {names}: not a folder and not in the Hugging Face cache, and "
        f"the hub cannot be reached from here ({why}). Where it can: {fetch} (then set HF_HOME "
        "here to that cache), or save_pretrained the model to a folder and give it as "
        "lm.models.NAME.model; or leave the model out of lm.models")
