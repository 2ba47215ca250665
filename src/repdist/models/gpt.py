"""A small GPT-style causal language model, trained here on the standard library's text (the
`lm` branch): token and position embeddings, pre-norm blocks of causal self-attention and an MLP,
a final norm and a linear head over the vocabulary. f(x) is the head's input at a position, g(y)
its weight row of token y (`repdist.extract.causal_lm_representations`). The norms are RMSNorm:
a LayerNorm before the head leaves f centred in a (width - 1)-dimensional subspace, where m_CCA
of f runs over width - 1 components (extract/causal_lm.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class GPTConfig:
    """vocab: tokens K; width: M (the dimension of f and g); heads must divide width; context:
    the longest input; tied: the head shares the token embedding's weight."""

    vocab: int
    width: int
    layers: int
    heads: int
    context: int
    tied: bool = False

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not a multiple of heads {self.heads}")


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.norm1 = nn.RMSNorm(cfg.width)
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width)
        self.proj = nn.Linear(cfg.width, cfg.width)
        self.norm2 = nn.RMSNorm(cfg.width)
        self.mlp = nn.Sequential(nn.Linear(cfg.width, 4 * cfg.width), nn.GELU(),
                                 nn.Linear(4 * cfg.width, cfg.width))

    def forward(self, x: torch.Tensor, pad: torch.Tensor | None) -> torch.Tensor:
        b, t, m = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(m, dim=2)
        q, k, v = (z.view(b, t, self.heads, m // self.heads).transpose(1, 2) for z in (q, k, v))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        if pad is not None:  # keys that are padding are never attended to
            mask = mask & pad[:, None, None, :]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, m))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    """model(ids, attention_mask=None) -> logits (batch, sequence, vocab)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tokens = nn.Embedding(cfg.vocab, cfg.width)
        self.positions = nn.Embedding(cfg.context, cfg.width)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = nn.RMSNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.vocab, bias=False)
        self.apply(self._init)
        if cfg.tied:
            self.head.weight = self.tokens.weight
        for name, p in self.named_parameters():  # GPT-2's scaled init of residual projections
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, ids: torch.Tensor,
                attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        t = ids.shape[1]
        if t > self.cfg.context:
            raise ValueError(f"input of {t} tokens is longer than the context {self.cfg.context}")
        x = self.tokens(ids) + self.positions(torch.arange(t, device=ids.device))
        pad = None if attention_mask is None else attention_mask.to(torch.bool)
        for block in self.blocks:
            x = block(x, pad)
        return self.head(self.norm(x))
