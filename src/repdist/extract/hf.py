"""Hugging Face causal LMs, vision encoders and tokenizers, by local folder or hub id.

`transformers` is optional (`pip install repdist[lm]`): it is imported when a model is loaded, and
its absence is an ExtractionError that says how to install it, as is a model not found offline.
Models load in float32 with eager attention, so that softmax(f g^T) is the model's own next-token
distribution to float32 rounding."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..io.hub import hub_offline, path_shaped
from .classifier import ExtractionError

INSTALL = "pip install transformers (or pip install 'repdist[lm]')"


def _transformers(name: str) -> Any:
    """The transformers module, or an ExtractionError naming `name` and the install command."""
    try:
        import transformers
    except ImportError as err:
        raise ExtractionError(f"loading {name!r} needs the transformers package, which is not "
                              f"installed: {INSTALL}") from err
    return transformers


# HF_HUB_OFFLINE is read at each call (huggingface_hub reads it once, at import), so that setting
# it later still means "the cache only".
def _load(what: str, name_or_path: str, load: Any, revision: str | None = None,
          **kwargs: Any) -> Any:
    """`load(name_or_path, ...)` at `revision` (a hub branch, tag or commit, e.g. a Pythia
    checkpoint); missing-folder, offline and not-found errors become one ExtractionError naming
    the model and the way out. A path (io/hub.py::path_shaped) is never sent to the hub."""
    local = Path(name_or_path).expanduser()
    if local.exists() and not local.is_dir():
        raise ExtractionError(f"{name_or_path}: a {what} is a folder (save_pretrained's) or a "
                              "Hugging Face hub id, not a file")
    if path_shaped(name_or_path) and not local.is_dir():
        raise ExtractionError(f"{name_or_path}: no such folder (a path, not a hub id such as "
                              f"'gpt2' or 'EleutherAI/pythia-70m'): give the {what}'s folder "
                              "that save_pretrained wrote")
    if local.is_dir() and revision is not None:
        raise ExtractionError(f"{name_or_path}: a folder holds one set of weights, and "
                              f"from_pretrained ignores a revision there ({revision!r}): leave "
                              "the revision out, or give the hub id at that revision")
    source = str(local) if local.is_dir() else name_or_path
    offline = hub_offline()
    if revision is not None:
        kwargs["revision"] = revision
    try:
        return load(source, local_files_only=offline, **kwargs)
    except (OSError, ValueError) as err:  # hub errors are OSErrors; a bad id is a ValueError
        if local.is_dir():
            raise ExtractionError(f"{name_or_path}: this folder does not hold a {what} that "
                                  f"transformers can load ({type(err).__name__}: {err})") from err
        cache = os.environ.get("HF_HOME", "~/.cache/huggingface")
        why = ("HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set" if offline
               else "the hub could not be reached or has no such id")
        at = "" if revision is None else f" --revision {revision}"
        raise ExtractionError(
            f"{name_or_path!r}{'' if revision is None else f' at revision {revision!r}'}: no "
            f"such folder, not in the Hugging Face cache ({cache}), and {why}. Download it where "
            f"the hub is reachable (hf download {name_or_path}{at}, or save_pretrained to a "
            f"folder) and pass the folder, or set HF_HOME to a cache that holds it "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})") from err


def load_causal_lm(name_or_path: str, device: str | None = None,
                   revision: str | None = None) -> Any:
    """A Hugging Face causal LM (AutoModelForCausalLM) in eval mode, float32, eager attention, on
    `device` (default: the CPU), at `revision` (default: main). Loaded in its checkpoint's dtype
    (the keyword differs across transformers 4 and 5), then made float32: exact for 16 bits."""
    transformers = _transformers(name_or_path)
    model = _load("causal LM", name_or_path, transformers.AutoModelForCausalLM.from_pretrained,
                  revision, attn_implementation="eager")
    if device is not None:
        model = model.to(device)
    return model.float().eval()


def output_head(model: Any) -> str | None:
    """The module name of the model's get_output_embeddings(), None without one."""
    getter = getattr(model, "get_output_embeddings", None)
    head = getter() if callable(getter) else None
    if head is None:
        return None
    return next((name for name, module in model.named_modules() if module is head), None)


def load_tokenizer(name_or_path: str, revision: str | None = None) -> Any:
    """A Hugging Face tokenizer (AutoTokenizer), with load_causal_lm's errors; a folder without
    tokenizer files (special tokens only in transformers 5: no text has tokens) is one too."""
    transformers = _transformers(name_or_path)
    tokenizer = _load("tokenizer", name_or_path, transformers.AutoTokenizer.from_pretrained,
                      revision)
    if not set(tokenizer.get_vocab()) - set(tokenizer.all_special_tokens):
        raise ExtractionError(f"{name_or_path}: this does not hold a tokenizer that transformers "
                              "can load (no vocabulary besides special tokens): give the "
                              "tokenizer's own folder or hub id (repdist extract --tokenizer)")
    return tokenizer


def text_contexts(text: str, tokenizer: Any, context_length: int,
                  max_contexts: int | None = None) -> np.ndarray:
    """Consecutive windows of `context_length` tokens, (contexts, context_length) int64, the last
    shorter one dropped; tokenized whole, without special tokens (no BOS/EOS the text lacks)."""
    if context_length < 1:
        raise ExtractionError(f"the context length must be at least 1, got {context_length}")
    if max_contexts is not None and max_contexts < 1:
        raise ExtractionError(f"max_contexts must be at least 1, got {max_contexts}")
    ids = np.asarray(tokenizer(text, add_special_tokens=False)["input_ids"], dtype=np.int64)
    contexts = len(ids) // context_length
    if contexts == 0:
        raise ExtractionError(f"the text is {len(ids)} tokens long, shorter than one context "
                              f"of {context_length}: give more text or a shorter context length")
    if max_contexts is not None:
        contexts = min(contexts, max_contexts)
    return ids[: contexts * context_length].reshape(contexts, context_length)


# two-tower checkpoints whose vision tower alone is the encoder (their `vision_model`)
VISION_TOWERS = {"clip": "CLIPVisionModel", "siglip": "SiglipVisionModel"}
# the vision transformers whose hidden states are the blocks' outputs over a token sequence
VISION_ENCODERS = frozenset({"vit", "vit_mae", "dinov2", "clip_vision_model",
                             "siglip_vision_model"})


def load_vision_encoder(name_or_path: str, device: str | None = None,
                        revision: str | None = None) -> Any:
    """A Hugging Face vision encoder (AutoModel; a CLIP or SigLIP checkpoint's vision tower) in
    eval mode, float32, on `device`, at `revision`; ViT-MAE with mask ratio 0 (every patch
    seen). A model that does not take images (no `pixel_values`) is an ExtractionError."""
    transformers = _transformers(name_or_path)
    config = _load("vision encoder", name_or_path, transformers.AutoConfig.from_pretrained,
                   revision)
    model_type = getattr(config, "model_type", "")
    tower = VISION_TOWERS.get(model_type)
    cls = getattr(transformers, tower) if tower else transformers.AutoModel
    extra = {"mask_ratio": 0.0} if model_type == "vit_mae" else {}
    try:
        model = _load("vision encoder", name_or_path, cls.from_pretrained, revision, **extra)
    except ExtractionError:
        raise
    except Exception as err:  # an architecture AutoModel does not know
        raise ExtractionError(f"{name_or_path}: not a vision encoder transformers can load "
                              f"({type(err).__name__}: {err})") from err
    kind = getattr(model.config, "model_type", "")
    if getattr(model, "main_input_name", None) != "pixel_values" or kind not in VISION_ENCODERS:
        raise ExtractionError(f"{name_or_path}: not a vision transformer encoder (a "
                              f"{kind or 'model'} that takes "
                              f"{getattr(model, 'main_input_name', '?')}): give a ViT, ViT-MAE, "
                              "DINOv2, CLIP or SigLIP model")
    if device is not None:
        model = model.to(device)
    return model.float().eval()


def load_image_processor(name_or_path: str, revision: str | None = None) -> Any:
    """The model's own image processor, its PIL backend (no torchvision needed, and the same
    numbers whether torchvision is installed or not)."""
    transformers = _transformers(name_or_path)
    return _load("image processor", name_or_path,
                 transformers.AutoImageProcessor.from_pretrained, revision, backend="pil")
