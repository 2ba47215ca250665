"""Outside causal language models (`lm.models`: hub ids, folders, Pythia's revisions) on the
same contexts; no torch (the jobs hand the arrays in). The contexts are cut once, by the first
model's tokenizer; every model's job checks by digest that its own is the same."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...data.stdlib_text import STDLIB, read_stdlib_text, read_text_file
from ...io import provenance, read_npz_metadata, write_npz
from ...io.hub import TOKENIZER_FILES, tokenizer_digest
from ..outputs import SeedFiles, SeedRepresentations, write_seed


@dataclass(frozen=True)
class CorpusConfig:
    """lm.corpus: `stdlib` (the eval split of the `lm.data` text) or a UTF-8 file's path."""

    corpus: str
    max_bytes: int
    eval_fraction: float


def corpus_text(cfg: CorpusConfig) -> tuple[str, dict[str, Any]]:
    """The text the models read and what it is (source, bytes, Python version for stdlib)."""
    if cfg.corpus == STDLIB:
        text = read_stdlib_text(cfg.max_bytes, cfg.eval_fraction)
        return text.eval, {"corpus": STDLIB, **text.info}
    return read_text_file(cfg.corpus, "lm.corpus")


def loaded_tokenizer_digest(tokenizer: Any, source: str, revision: str | None = None) -> str:
    """A loaded tokenizer's digest, as the DAG computed it; failing that, of its saved files."""
    digest = tokenizer_digest(source, revision)
    if digest is None:
        with tempfile.TemporaryDirectory(prefix="repdist-tokenizer-") as folder:
            tokenizer.save_pretrained(folder)
            digest = tokenizer_digest(folder)
    if digest is None:
        raise ValueError(f"{source}: the tokenizer has none of the files its identity is read "
                         f"from ({', '.join(TOKENIZER_FILES)}), even saved again")
    return digest


def write_contexts(path: str | Path, contexts: np.ndarray, meta: Mapping[str, Any]) -> None:
    """The (contexts, length) token ids every model reads, with what made them."""
    write_npz(path, {"tokens": np.asarray(contexts, dtype=np.int64)}, meta)


def read_contexts(path: str | Path) -> tuple[np.ndarray, dict[str, Any]]:
    with np.load(path, allow_pickle=False) as data:
        tokens = data["tokens"].astype(np.int64)
    return tokens, read_npz_metadata(path)


def check_same_vocabulary(name: str, digest: str, contexts_meta: Mapping[str, Any]) -> None:
    """Stop where a model's tokenizer digest is not the contexts': its ids mean other tokens."""
    if digest != contexts_meta.get("tokenizer_digest"):
        raise ValueError(
            f"lm.models.{name}: its tokenizer differs from the one the contexts were cut with "
            f"({contexts_meta.get('tokenizer')}): models compared together must share a "
            "tokenizer; compare models of one tokenizer per run")


def model_metrics(nll: np.ndarray, labels: np.ndarray, preds: np.ndarray) -> dict[str, Any]:
    """Next-token loss and accuracy over the kept positions whose next token is known."""
    known = labels >= 0
    if not known.any():
        raise ValueError("no kept position has a known next token: with positions 'last' the "
                         "contexts' last token has none; use positions 'all' or longer windows")
    loss = float(np.mean(nll[known]))
    accuracy = float(np.mean(preds[known] == labels[known]))
    return {"eval_loss": loss, "eval_accuracy": accuracy, "final_test_loss": loss,
            "test_accuracy": accuracy, "positions_scored": int(known.sum()),
            "loss_note": "test = the contexts: mean next-token NLL over the kept positions "
                         "whose next token they hold"}


def write_lm_model(files: SeedFiles, f: np.ndarray, g: np.ndarray, labels: np.ndarray,
                   meta: Mapping[str, Any], metrics: Mapping[str, Any]) -> None:
    """One model's files: f at the kept positions, its head's g, next tokens (-1: unknown)."""
    write_seed(files, SeedRepresentations(g, {"test": f}, {"test": labels}),
               {"experiment": "lm_models", "K": int(g.shape[0]), "M": int(g.shape[1]),
                **meta}, metrics)


def contexts_meta(text_info: Mapping[str, Any], tokenizer: str, tokenizer_digest: str,
                  contexts: np.ndarray, run_config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The contexts file's metadata: text, tokenizer and its digest, shape, provenance."""
    return provenance(run_config, experiment="lm_models", **text_info, tokenizer=tokenizer,
                      tokenizer_digest=tokenizer_digest, contexts=int(contexts.shape[0]),
                      window=int(contexts.shape[1]))
