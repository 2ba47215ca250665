"""A causal LM's hidden states layer by layer, at the positions f is taken, for Roeder et al.
2021, Fig. 4: which layers of two models are linearly related?

The layers are the embeddings, every block's output, then the head's input (f), in order
(`_hidden_source`). Every state is kept in float32, the precision the models compute in, at the
positions of `causal_lm_representations`, so that layers of two models describe the same inputs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..io.host import to_host
from .causal_lm import (POSITIONS, kept_indices, mask_keywords, next_tokens,
                        takes_attention_mask, token_batches)
from .classifier import ExtractionError, head_call, run_model, tapped_head

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class LayerStates:
    """`states[l]`: the selected layer l's hidden states (N x width, float32) at the kept
    positions; `count`: the model's layers, `head_input` the head's input's (count - 1);
    `labels`: the next tokens (-1 where unknown), `preds`: the model's most likely next token,
    `nll`: its -log p of the next token (float64; NaN where unknown); `source`: the states'."""

    states: dict[int, np.ndarray]
    count: int
    head_input: int
    labels: np.ndarray
    preds: np.ndarray
    nll: np.ndarray
    source: str


def layer_indices(selected: str | Sequence[int], count: int) -> list[int]:
    """The layers `selected` names among `count`: "all", or indices (negative ones count from
    the end: -1 is the head's input), sorted, each once."""
    if selected == "all":
        return list(range(count))
    if isinstance(selected, str):
        raise ValueError(f"layers must be 'all' or a list of indices, got {selected!r}")
    bad = [i for i in selected if not -count <= int(i) < count]
    if bad:
        raise ExtractionError(f"layer(s) {bad} out of range: the model has {count} layers "
                              f"(0 = the embeddings, {count - 1} or -1 = the head's input)")
    return sorted({int(i) % count for i in selected})


class _BlockTaps:
    """Forward hooks on `blocks`: the first block's input and every block's output of a pass."""

    def __init__(self, blocks: nn.ModuleList) -> None:
        self.states: list[torch.Tensor] = []
        first = blocks[0].register_forward_pre_hook(lambda m, args: self._keep(args[0]))
        self.handles = [first, *(b.register_forward_hook(lambda m, a, out: self._keep(out))
                                 for b in blocks)]

    def _keep(self, x: Any) -> None:
        self.states.append((x[0] if isinstance(x, tuple) else x).detach())

    def take(self) -> list[torch.Tensor]:
        states, self.states = self.states, []
        return states


def _is_hf(model: nn.Module) -> bool:
    return hasattr(getattr(model, "config", None), "output_hidden_states")


# A Hugging Face model's `output_hidden_states` (GPT-2, GPT-NeoX and Llama end with the final
# norm's output, the head's input), or a `blocks` ModuleList's (models/gpt.py) first input and
# every block's output. The head's input is added unless the last state equals it bit for bit.
@contextlib.contextmanager
def _hidden_source(model: nn.Module) -> Iterator[Callable[..., list[torch.Tensor]]]:
    """A function (ids on the device, mask on the host) -> one forward pass's hidden states."""
    takes_mask = takes_attention_mask(model)
    if _is_hf(model):
        yield lambda ids, mask: list(run_model(
            model, ids, **mask_keywords(takes_mask, mask, ids.device),
            output_hidden_states=True).hidden_states)
        return
    blocks = getattr(model, "blocks", None)
    if not isinstance(blocks, nn.ModuleList) or len(blocks) == 0:
        raise ExtractionError(f"{type(model).__name__} gives no hidden states: a Hugging Face "
                              "model (output_hidden_states) or a model with a `blocks` "
                              "ModuleList is needed to read its layers")
    taps = _BlockTaps(blocks)

    def run(ids: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
        run_model(model, ids, **mask_keywords(takes_mask, mask, ids.device))
        return taps.take()

    try:
        yield run
    finally:
        for handle in taps.handles:
            handle.remove()


@dataclass(frozen=True)
class LayerReading:
    """Where and how the states are read: the positions ("last" or "all"), the head's module
    name, the device and the batch size, as for causal_lm_representations."""

    positions: str = "last"
    head: str | None = None
    device: str | torch.device | None = None
    batch_size: int = 16


@torch.no_grad()
def causal_lm_layers(model: nn.Module, tokens: Any, layers: str | Sequence[int] = "all",
                     reading: LayerReading = LayerReading(), *,
                     targets: np.ndarray | None = None,
                     progress: Progress | None = None) -> LayerStates:
    """The selected layers' hidden states of `model` on `tokens` (as for causal_lm_representations);
    `targets`: the next token of every kept position where the caller knows more than the input
    (a window's last token); `progress(contexts done, contexts)` runs after every batch."""
    positions = reading.positions
    if positions not in POSITIONS:
        raise ValueError(f"positions must be one of {POSITIONS}, got {positions!r}")
    total = len(tokens["input_ids"] if isinstance(tokens, Mapping) else tokens)
    kept: dict[int, list[np.ndarray]] = {}
    labels, preds, nll, done, shape = [], [], [], 0, None
    with tapped_head(model, reading.head, "drop", reading.device) as tapped, \
            _hidden_source(model) as hidden:
        for ids, mask in token_batches(tokens, reading.batch_size):
            states = hidden(ids.to(tapped.device), mask)
            f, out = head_call(tapped.name, tapped.tap, tuple(ids.shape), dims=3)
            if not torch.equal(states[-1], f):
                states.append(f)
            shape = _same_layers(shape, states)
            chosen = layer_indices(layers, len(states))
            keep, rows, cols = kept_indices(mask, positions, tapped.device)
            for index in chosen:
                kept.setdefault(index, []).append(to_host(states[index][rows, cols], np.float32))
            after = next_tokens(ids, mask)[keep]
            if targets is not None:
                after = _targets(targets, sum(len(x) for x in labels), after)
            labels.append(to_host(after))
            preds.append(to_host(out[rows, cols].argmax(dim=-1)))
            nll.append(to_host(_nll(out[rows, cols], after.to(tapped.device)), np.float64))
            done += len(ids)
            if progress is not None:
                progress(done, total)
    count = len(shape or [])
    if targets is not None and len(targets) != sum(len(x) for x in labels):
        raise ExtractionError(f"{len(targets)} targets for {sum(len(x) for x in labels)} kept "
                              "positions")
    return LayerStates({i: np.concatenate(v) for i, v in kept.items()}, count, count - 1,
                       np.concatenate(labels), np.concatenate(preds), np.concatenate(nll),
                       "output_hidden_states" if _is_hf(model) else "blocks")


def _targets(targets: np.ndarray, start: int, after: torch.Tensor) -> torch.Tensor:
    """The caller's next tokens of this batch's kept positions (rows start.. of `targets`)."""
    if start + len(after) > len(targets):
        raise ExtractionError(f"{len(targets)} targets for more kept positions (at least "
                              f"{start + len(after)})")
    return torch.as_tensor(targets[start : start + len(after)], dtype=after.dtype)


def _nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """-log p(label) per row in float64, NaN where the label is unknown (-1)."""
    log_probs = torch.log_softmax(logits.double(), dim=-1)
    picked = log_probs.gather(1, labels.clamp(min=0)[:, None])[:, 0]
    return torch.where(labels >= 0, -picked, torch.full_like(picked, float("nan")))


def _same_layers(shape: list[int] | None, states: list[torch.Tensor]) -> list[int]:
    """Every batch gives the same layers (their widths); the first batch sets them."""
    widths = [int(s.shape[-1]) for s in states]
    if shape is not None and widths != shape:
        raise ExtractionError(f"the model gave layers of widths {widths} on one batch and "
                              f"{shape} on another")
    return widths
