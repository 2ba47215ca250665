"""Every layer's features of a language model on captions and of a vision encoder on images, as
the Platonic Representation Hypothesis' `extract_features.py` (Huh et al. 2024) takes them.

Language: every `hidden_states` entry (the embeddings included), each averaged over the caption's
tokens, and each caption's bits per byte; `batch` padding (`caption_batches`) makes a caption's
features its own. Vision: the CLS token after every block, or every token averaged for encoders
without one (`vision_features`)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..io.host import to_host
from .classifier import ExtractionError

PADDINGS = ("batch", "prh")
LOG2_E = 1 / math.log(2)
NO_CLS = frozenset({"siglip_vision_model", "siglip2_vision_model"})  # mean-pooled
Progress = Callable[[int, int], None]


def prh_tokenizer(tokenizer: Any) -> Any:
    """The tokenizer as theirs sets it up (`models.load_tokenizer`): left padding, and the
    end-of-text token as the pad token where it has none."""
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ExtractionError("the tokenizer has neither a pad nor an end-of-text token to "
                                  "pad captions with")
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


@dataclass(frozen=True)
class Reading:
    """How inputs are read: inputs per forward pass, the captions' padding (PADDINGS) and the
    torch device (None: where the model is)."""

    batch_size: int = 16
    padding: str = "batch"
    device: Any = None


@dataclass(frozen=True)
class CaptionBatch:
    """One batch's tokens (left-padded), mask, position ids (None: not passed) and rows."""

    ids: Any
    mask: Any
    positions: Any
    rows: slice


# Captions are left-padded (prh_tokenizer). `prh`, theirs bit for bit, pads to the longest caption
# of the whole set and passes no position ids, so a model with absolute positions (GPT-2) reads
# each caption shifted by its padding. `batch` pads to each batch's longest caption, with position
# ids counted from each caption's first token.
def caption_batches(tokenizer: Any, captions: Sequence[str], batch_size: int,
                    padding: str = "batch", start: int = 0) -> Iterator[CaptionBatch]:
    """The captions in batches from row `start`, tokenized as `padding` says (see above)."""
    import torch

    if padding not in PADDINGS:
        raise ExtractionError(f"padding must be one of {PADDINGS}, got {padding!r}")
    tokenizer = prh_tokenizer(tokenizer)
    whole = tokenizer(list(captions), padding="longest", return_tensors="pt") \
        if padding == "prh" else None
    for lo in range(start, len(captions), batch_size):
        rows = slice(lo, min(lo + batch_size, len(captions)))
        if whole is not None:
            yield CaptionBatch(whole["input_ids"][rows], whole["attention_mask"][rows], None, rows)
            continue
        tokens = tokenizer(list(captions[rows]), padding="longest", return_tensors="pt")
        mask = tokens["attention_mask"]
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0).to(torch.long)
        yield CaptionBatch(tokens["input_ids"], mask, positions, rows)


def bits_per_byte(logits: Any, ids: Any, mask: Any, captions: Sequence[str]) -> np.ndarray:
    """Each caption's summed cross-entropy of its tokens predicted from a real token (theirs:
    the mask of the input position), in bits, over its UTF-8 bytes (float64)."""
    import torch

    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    scored = logp.gather(-1, ids[:, 1:, None]).squeeze(-1).double()
    nats = -(scored * mask[:, :-1].double()).sum(dim=1)
    size = np.array([len(c.encode("utf-8")) for c in captions], dtype=np.float64)
    return to_host(nats, np.float64) * LOG2_E / size


def language_features(model: Any, tokenizer: Any, captions: Sequence[str],
                      reading: Reading = Reading(), start: int = 0,
                      progress: Progress | None = None,
                      ) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
    """(rows, features B x L x D float32, bits per byte B) batch by batch from row `start`:
    every hidden state mask-mean pooled over the caption's tokens (see above)."""
    import torch

    device = reading.device
    takes_positions = "position_ids" in inspect.signature(model.forward).parameters
    for batch in caption_batches(tokenizer, captions, reading.batch_size, reading.padding, start):
        ids, mask = batch.ids.to(device), batch.mask.to(device)
        kwargs = {"input_ids": ids, "attention_mask": mask, "output_hidden_states": True}
        if batch.positions is not None and takes_positions:
            kwargs["position_ids"] = batch.positions.to(device)
        with torch.no_grad():
            out = model(**kwargs)
            weights = mask[:, None, :, None].float()
            states = torch.stack(out.hidden_states, dim=1).float()  # B x L x T x D
            pooled = (states * weights).sum(dim=2) / weights.sum(dim=2)
            bpb = bits_per_byte(out.logits, ids, mask, captions[batch.rows])
        yield batch.rows, to_host(pooled, np.float32), bpb
        if progress is not None:
            progress(batch.rows.stop, len(captions))


def vision_pooling(model: Any) -> str:
    """How a vision encoder's tokens become one vector a block: `cls` (token 0) or `mean`."""
    return "mean" if getattr(model.config, "model_type", "") in NO_CLS else "cls"


def vision_features(model: Any, processor: Any, images: Sequence[Any],
                    reading: Reading = Reading(), start: int = 0,
                    progress: Progress | None = None) -> Iterator[tuple[slice, np.ndarray]]:
    """(rows, features B x L x D float32) batch by batch from row `start`: every block's output
    (`hidden_states[1:]`, timm's `blocks.{i}.add_1` in theirs) at the CLS token, or averaged
    (vision_pooling), the images prepared by the model's own image processor."""
    import torch

    pooling, device = vision_pooling(model), reading.device
    for lo in range(start, len(images), reading.batch_size):
        rows = slice(lo, min(lo + reading.batch_size, len(images)))
        pixels = processor(images=list(images[rows]), return_tensors="pt")["pixel_values"]
        with torch.no_grad():
            out = model(pixel_values=pixels.to(device), output_hidden_states=True,
                        **_patch_order(model, len(pixels), device))
            blocks = torch.stack(out.hidden_states[1:], dim=1).float()  # B x L x T x D
            pooled = blocks[:, :, 0] if pooling == "cls" else blocks.mean(dim=2)
        yield rows, to_host(pooled, np.float32)
        if progress is not None:
            progress(rows.stop, len(images))


def final_cls(model: Any, processor: Any, images: Sequence[Any], device: Any = None) -> np.ndarray:
    """The encoder's output at the CLS token after its final norm (`last_hidden_state[:, 0]`, as
    the follow-up's dsets/preprocess_sub.py reads DINOv2), B x D float32, for one batch."""
    import torch

    pixels = processor(images=list(images), return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        out = model(pixel_values=pixels.to(device),
                    **_patch_order(model, len(pixels), device))
    return to_host(out.last_hidden_state[:, 0].float(), np.float32)


def _patch_order(model: Any, batch: int, device: Any) -> dict[str, Any]:
    """ViT-MAE draws a random order of its patches even at mask ratio 0 (the CLS token's
    output then moves by float rounding from call to call); an increasing `noise` keeps them in
    place, so that its features are the same at every run."""
    import torch

    config = model.config
    if getattr(config, "model_type", "") != "vit_mae":
        return {}
    patches = (config.image_size // config.patch_size) ** 2
    return {"noise": torch.arange(patches, dtype=torch.float32, device=device).expand(batch, -1)}
