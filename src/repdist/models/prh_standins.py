"""Stand-ins for the Platonic Representation Hypothesis' study (`prh:` entries with `standin:`),
so its branch runs offline: tiny untrained Hugging Face vision encoders (ViT, ViT-MAE, DINOv2,
CLIP's vision tower) with their PIL image processors, and tiny causal LMs trained a few steps on
the captions, so that their bits per byte differ. transformers is imported when one is made."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .lm_standins import StandinSpec, build_standin, standin_tokenizer

VISION_ARCHITECTURES = ("vit", "vit_mae", "dinov2", "clip")


@dataclass(frozen=True)
class VisionStandinSpec:
    """One vision stand-in: its layout, width, blocks, heads, seed, image and patch size."""

    arch: str
    width: int = 16
    layers: int = 2
    heads: int = 2
    seed: int = 0
    image_size: int = 32
    patch_size: int = 8

    def __post_init__(self) -> None:
        if self.arch not in VISION_ARCHITECTURES:
            raise ValueError(f"a vision stand-in's arch must be one of {VISION_ARCHITECTURES}, "
                             f"got {self.arch!r}")


def build_vision_standin(spec: VisionStandinSpec) -> tuple[Any, Any]:
    """(model, image processor): the encoder in eval mode, its weights drawn from torch seed
    spec.seed, and a processor that brings any image to spec.image_size square."""
    import torch
    import transformers as tf

    shared = {"hidden_size": spec.width, "num_hidden_layers": spec.layers,
              "num_attention_heads": spec.heads, "intermediate_size": 4 * spec.width,
              "image_size": spec.image_size, "patch_size": spec.patch_size}
    side = {"height": spec.image_size, "width": spec.image_size}
    short = {"size": {"shortest_edge": spec.image_size}, "crop_size": side}
    torch.manual_seed(spec.seed)
    if spec.arch == "vit":
        model = tf.ViTModel(tf.ViTConfig(**shared))
        processor = tf.ViTImageProcessorPil(size=side)
    elif spec.arch == "vit_mae":
        model = tf.ViTMAEModel(tf.ViTMAEConfig(**shared, mask_ratio=0.0))
        processor = tf.ViTImageProcessorPil(size=side)
    elif spec.arch == "dinov2":
        model = tf.Dinov2Model(tf.Dinov2Config(**shared))
        processor = tf.BitImageProcessorPil(**short)
    else:
        model = tf.CLIPVisionModel(tf.CLIPVisionConfig(**shared))
        processor = tf.CLIPImageProcessorPil(**short)
    return model.float().eval(), processor


def save_vision_standin(folder: str | Path, spec: VisionStandinSpec) -> dict[str, Any]:
    """A vision stand-in and its processor in `folder` (written as it is: the caller's folder
    appears whole); returns what was made."""
    model, processor = build_vision_standin(spec)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return {"arch": spec.arch, "width": spec.width, "layers": spec.layers,
            "parameters": sum(p.numel() for p in model.parameters())}


def fit_captions(model: Any, tokenizer: Any, captions: Sequence[str], steps: int, seed: int,
                 lr: float = 1e-2, batch_size: int = 32) -> float:
    """`steps` Adam steps of next-token loss on batches of captions (each caption framed by
    the end-of-text token), drawn at `seed`; returns the last batch's loss (0 steps: NaN)."""
    import torch

    if steps <= 0:
        return float("nan")
    end = tokenizer.eos_token
    ids = [tokenizer(end + c + end, add_special_tokens=False)["input_ids"] for c in captions]
    longest = max(len(i) for i in ids)
    tokens = torch.full((len(ids), longest), tokenizer.eos_token_id, dtype=torch.long)
    mask = torch.zeros_like(tokens)
    for row, seq in enumerate(ids):
        tokens[row, :len(seq)] = torch.tensor(seq)
        mask[row, :len(seq)] = 1
    rng = np.random.default_rng(seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        rows = torch.as_tensor(rng.choice(len(ids), size=min(batch_size, len(ids)),
                                          replace=False))
        labels = tokens[rows].masked_fill(mask[rows] == 0, -100)
        loss = model(input_ids=tokens[rows], attention_mask=mask[rows], labels=labels).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    return float(loss.detach())


def save_language_standin(folder: str | Path, spec: Mapping[str, Any],
                          captions: Sequence[str]) -> dict[str, Any]:
    """A causal-LM stand-in (spec: StandinSpec's fields, plus `steps` of fit_captions) and its
    tokenizer, trained on the captions, in `folder`; returns what was made."""
    fields = dict(spec)
    steps = int(fields.pop("steps", 0))
    tokenizer = standin_tokenizer("\n".join(captions))
    context = max(len(tokenizer(c)["input_ids"]) for c in captions) + 2
    standin = StandinSpec(**fields)
    model = build_standin(standin, len(tokenizer), max(context, 8))
    loss = fit_captions(model, tokenizer, captions, steps, standin.seed)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return {"arch": standin.arch, "width": standin.width, "layers": standin.layers,
            "steps": steps, "final_loss": loss,
            "parameters": sum(p.numel() for p in model.parameters())}
