"""A causal language model is a model of the paper's family too: the logits of the token after
position t are W h_t + b, so f(x) is the head's input at t (the last hidden state of the context
x = tokens[..t]), g(y) the head's weight row of token y, and K the vocabulary.

Otherwise the extraction is the classifier's (classifier.py): the head tapped while the whole model
runs, its outputs checked against the model's at every position kept, the bias folded or dropped."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import nn

from .classifier import (ClassifierRepresentations, ExtractionError, assemble, check_logits,
                         head_call, run_model, tapped_head)

POSITIONS = ("all", "last")
NO_NEXT_TOKEN = -1  # the label of a position whose next token is not in the input


def token_batches(tokens: Any, batch_size: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """(input ids, attention mask) batches, on the host, of a (contexts, length) array of token
    ids or of a tokenizer's {"input_ids", "attention_mask"} (lists, arrays or tensors)."""
    if isinstance(tokens, Mapping):
        if "input_ids" not in tokens:
            raise ExtractionError("token inputs given as a mapping need 'input_ids' "
                                  f"(got keys {sorted(tokens)})")
        ids = torch.as_tensor(tokens["input_ids"]).cpu()
        mask = tokens.get("attention_mask")
        mask = torch.ones_like(ids) if mask is None else torch.as_tensor(mask).cpu()
    else:
        ids = torch.as_tensor(tokens).cpu()
        mask = torch.ones_like(ids)
    if ids.dim() != 2 or ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise ExtractionError(f"token ids must be integers of shape (contexts, length), got "
                              f"{tuple(ids.shape)} {ids.dtype}")
    if mask.shape != ids.shape:
        raise ExtractionError(f"attention_mask {tuple(mask.shape)} is not the shape of "
                              f"input_ids {tuple(ids.shape)}")
    if len(ids) == 0:
        raise ExtractionError("no contexts given")
    mask = mask.to(torch.bool)
    for lo in range(0, len(ids), batch_size):
        yield ids[lo : lo + batch_size].long(), mask[lo : lo + batch_size]


def kept_indices(mask: torch.Tensor, positions: str,
                 device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A (batch, length) boolean on the host of the positions whose f is kept (every unmasked
    one, or the last unmasked one of each context, padding on either side), and their row and
    column indices on `device` (a boolean mask there makes the host wait for its count)."""
    if positions == "all":
        keep = mask.clone()
    else:
        last = torch.where(mask, torch.arange(mask.shape[1]), -1).amax(dim=1)
        if bool((last < 0).any()):
            raise ExtractionError("a context has no unmasked token (its attention_mask is all 0)")
        keep = torch.zeros_like(mask)
        keep[torch.arange(len(mask)), last] = True
    rows, cols = (i.to(device) for i in keep.nonzero(as_tuple=True))
    return keep, rows, cols


def next_tokens(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The token after each position (the label its p(y|x) predicts), NO_NEXT_TOKEN where the
    input does not hold it (the end of a context, or padding after it)."""
    after = torch.full_like(ids, NO_NEXT_TOKEN)
    known = mask[:, :-1] & mask[:, 1:]
    after[:, :-1] = torch.where(known, ids[:, 1:], NO_NEXT_TOKEN)
    return after


def takes_attention_mask(model: nn.Module) -> bool:
    """Whether the model's forward takes an `attention_mask` keyword (by name or **kwargs);
    True when its signature cannot be read."""
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind is p.VAR_KEYWORD or (p.name == "attention_mask"
                                          and p.kind is not p.POSITIONAL_ONLY)
               for p in parameters)


def mask_keywords(takes_mask: bool, mask: torch.Tensor, device: torch.device) -> dict[str, Any]:
    """The keywords a batch is run with: its attention_mask, or nothing for a model that
    takes none when nothing in the batch is padded (an ExtractionError when something is)."""
    if takes_mask:
        return {"attention_mask": mask.long().to(device)}
    if not bool(mask.all()):
        raise ExtractionError(
            "the model's forward takes no attention_mask keyword, but the inputs are padded "
            f"({int((~mask).sum())} masked positions in a batch of {tuple(mask.shape)}): give "
            "contexts of one length without an attention_mask, or a model whose forward takes "
            "attention_mask")
    return {}


def _logits_of(output: Any) -> Any:
    """The logits of a model's output: a tensor, its .logits (Hugging Face) or its first item."""
    if isinstance(output, torch.Tensor):
        return output
    if hasattr(output, "logits"):
        return output.logits
    if isinstance(output, tuple | list) and output:
        return output[0]
    return output


# A tied head (GPT-2's lm_head shares the token embedding's weight) is an nn.Linear like any other.
# After a final LayerNorm (GPT-2, Pythia) centred f has rank width - 1 at most, to float32
# rounding: m_CCA averages over the directions f varies in and says so (mcca_f_components).
@torch.no_grad()
def causal_lm_representations(model: nn.Module, tokens: Any, head: str | None = None, *,
                              positions: str = "all", bias: str = "fold",
                              device: str | torch.device | None = None,
                              batch_size: int = 16) -> ClassifierRepresentations:
    """f at the kept positions of every context and g of the LM's head (see the module's text).

    `tokens`: a (contexts, length) integer array, or {"input_ids", "attention_mask"} (mask 0 =
    padding, never kept). `positions`: "all" (every unmasked one) or "last" (each context's).
    `head`, `bias` and `device` as for `classifier_representations`. `labels`: the next tokens
    (-1 where unknown); the model gets an attention_mask unless its forward takes none."""
    if positions not in POSITIONS:
        raise ValueError(f"positions must be one of {POSITIONS}, got {positions!r}")
    fs, labels, contexts = [], [], 0
    takes_mask = takes_attention_mask(model)
    with tapped_head(model, head, bias, device) as tapped:
        for ids, mask in token_batches(tokens, batch_size):
            contexts += len(ids)
            output = run_model(model, ids.to(tapped.device),
                               **mask_keywords(takes_mask, mask, tapped.device))
            f, out = head_call(tapped.name, tapped.tap, tuple(ids.shape), dims=3)
            if f.shape[:2] != ids.shape:
                raise ExtractionError(f"head {tapped.name!r} received {tuple(f.shape)} for "
                                      f"token ids {tuple(ids.shape)}: not one f per position")
            keep, rows, cols = kept_indices(mask, positions, tapped.device)
            logits = _logits_of(output)
            if not isinstance(logits, torch.Tensor) or logits.shape != out.shape:
                check_logits(tapped.name, logits, out)  # raises, naming both shapes
            check_logits(tapped.name, logits[rows, cols], out[rows, cols])
            fs.append(f[rows, cols].double().cpu())
            labels.append(next_tokens(ids, mask)[keep])
        weight, layer_bias = tapped.weights()
    reps = assemble(tapped.name, torch.cat(fs), weight, layer_bias, bias, labels)
    return dataclasses.replace(reps, info={**reps.info, "positions": positions,
                                           "contexts": contexts})
