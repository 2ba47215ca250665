"""Stand-ins for outside language models (`lm.models` entries with `standin:`), so the quick DAG
and the tests run that branch offline: tiny untrained Hugging Face models (GPT-2, GPT-NeoX, Llama)
built at a seed, each saved with the byte-level BPE tokenizer they share. transformers and
tokenizers are imported when a stand-in is made (the `lm` extra)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..io import atomic_folder

ARCHITECTURES = ("gpt2", "gpt_neox", "llama")
VOCAB_SIZE = 384  # the stand-ins' tokenizer: 256 bytes, 127 merges and <|endoftext|>
END = "<|endoftext|>"


@dataclass(frozen=True)
class StandinSpec:
    """One stand-in: its layout, width (M), blocks, attention heads and initialisation seed."""

    arch: str
    width: int = 16
    layers: int = 2
    heads: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        if self.arch not in ARCHITECTURES:
            raise ValueError(f"a stand-in's arch must be one of {ARCHITECTURES}, got {self.arch!r}")


def standin_tokenizer(text: str, vocab_size: int = VOCAB_SIZE) -> Any:
    """A byte-level BPE tokenizer (GPT-2's scheme) trained on `text`, as a transformers fast
    tokenizer: the same text gives the same tokenizer."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[END],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator([text], trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=END,
                                                eos_token=END)


def build_standin(spec: StandinSpec, vocab: int, context: int) -> Any:
    """The stand-in model, float32, in eval mode, its weights drawn from torch seed spec.seed."""
    import torch
    import transformers

    shared = {"vocab_size": vocab, "bos_token_id": 0, "eos_token_id": 0}
    if spec.arch == "gpt2":
        config = transformers.GPT2Config(n_embd=spec.width, n_layer=spec.layers,
                                         n_head=spec.heads, n_positions=context, **shared)
        cls = transformers.GPT2LMHeadModel
    elif spec.arch == "gpt_neox":
        config = transformers.GPTNeoXConfig(
            hidden_size=spec.width, num_hidden_layers=spec.layers,
            num_attention_heads=spec.heads, intermediate_size=4 * spec.width,
            max_position_embeddings=context, tie_word_embeddings=False, **shared)
        cls = transformers.GPTNeoXForCausalLM
    else:
        config = transformers.LlamaConfig(
            hidden_size=spec.width, num_hidden_layers=spec.layers,
            num_attention_heads=spec.heads, num_key_value_heads=spec.heads,
            intermediate_size=4 * spec.width, max_position_embeddings=context, **shared)
        cls = transformers.LlamaForCausalLM
    torch.manual_seed(spec.seed)
    return cls(config).float().eval()


def save_standin(folder: str | Path, spec: StandinSpec, text: str,
                 context: int) -> dict[str, Any]:
    """One stand-in and the shared tokenizer (trained on `text`: the same for every stand-in
    of a run) in `folder`, which takes its name once both are in it; returns what was made."""
    tokenizer = standin_tokenizer(text)
    model = build_standin(spec, len(tokenizer), context)
    with atomic_folder(folder) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    return {"arch": spec.arch, "width": spec.width, "layers": spec.layers,
            "vocab_size": len(tokenizer), "parameters": sum(p.numel() for p in model.parameters())}
