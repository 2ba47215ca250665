"""Word-level text for Roeder et al. (2021)'s Fig. 1 (a log-bilinear word model): a corpus split
into training and held-out text, its most frequent words (the rest `<unk>`), and (context, next
word) windows."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .stdlib_text import STDLIB, in_eval, read_stdlib_text, read_text_file

UNK = "<unk>"  # every word outside the vocabulary; no text's word can be it (`<` is one word)
WORD = re.compile(r"\w+|[^\w\s]")


def words(text: str) -> list[str]:
    """The words of `text`: runs of word characters, or one other non-space character, so that
    punctuation is a word, as in the tokenised Billion Word benchmark; case is kept."""
    return WORD.findall(text)


@dataclass(frozen=True)
class Split:
    """A corpus as the model reads it: the training and held-out text, and what it is."""

    train: str
    held_out: str
    info: dict[str, Any] = field(default_factory=dict)


def read_corpus(corpus: str, max_bytes: int, held_out_fraction: float) -> Split:
    """`corpus` ("stdlib", read up to `max_bytes`, or a UTF-8 file) split into training and held-out
    text; a file's line is held out by the hash of its text, so repeated lines land together."""
    if corpus == STDLIB:
        text = read_stdlib_text(max_bytes, held_out_fraction)
        return Split(text.train, text.eval, {"corpus": STDLIB, **text.info})
    text, info = read_text_file(corpus, "roeder.words.corpus")
    lines = text.splitlines(keepends=True)
    held = [in_eval(line, held_out_fraction) for line in lines]
    train = "".join(line for line, h in zip(lines, held, strict=True) if not h)
    held_out = "".join(line for line, h in zip(lines, held, strict=True) if h)
    if not train or not held_out:
        raise ValueError(f"{corpus}: its {len(lines)} line(s) leave {len(lines) - sum(held)} "
                         f"for training and {sum(held)} held out; give a longer text")
    info |= {"lines_train": len(lines) - sum(held), "lines_held_out": sum(held)}
    return Split(train, held_out, info)


@dataclass(frozen=True)
class Vocabulary:
    """Word ids: the most frequent words in decreasing frequency (ties in code-point order),
    then UNK, the last id; `counts` are the training counts (UNK's: every other word's)."""

    words: tuple[str, ...]
    counts: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.words or self.words[-1] != UNK or UNK in self.words[:-1]:
            raise ValueError(f"a vocabulary ends in {UNK!r} and holds it once")
        if len(self.counts) != len(self.words):
            raise ValueError(f"{len(self.words)} words but {len(self.counts)} counts")

    @property
    def size(self) -> int:
        return len(self.words)

    @property
    def unk(self) -> int:
        return len(self.words) - 1

    def ids(self, tokens: Iterable[str]) -> np.ndarray:
        """Each word's id (UNK's for a word outside the vocabulary), int64."""
        index = {w: i for i, w in enumerate(self.words[:-1])}
        return np.fromiter((index.get(t, self.unk) for t in tokens), dtype=np.int64)


def build_vocabulary(tokens: Sequence[str], size: int) -> Vocabulary:
    """The `size` - 1 most frequent words of `tokens` and UNK."""
    if size < 2:
        raise ValueError(f"a vocabulary holds at least one word and {UNK}, got size {size}")
    counts = Counter(tokens)
    if len(counts) < size - 1:
        raise ValueError(f"the text has {len(counts)} distinct words, fewer than the "
                         f"{size - 1} a vocabulary of {size} (with {UNK}) keeps")
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[: size - 1]
    kept = sum(c for _, c in ranked)
    return Vocabulary(tuple(w for w, _ in ranked) + (UNK,),
                      tuple(c for _, c in ranked) + (len(tokens) - kept,))


def windows(ids: np.ndarray, context: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (context, next word) pair of a stream of ids, ((N, context), (N,)) int64: a split is
    one stream, so a window may run across a line's or file's end."""
    ids = np.asarray(ids, dtype=np.int64)
    if context < 1:
        raise ValueError(f"context must be >= 1 word, got {context}")
    if len(ids) <= context:
        return np.zeros((0, context), dtype=np.int64), np.zeros(0, dtype=np.int64)
    view = np.lib.stride_tricks.sliding_window_view(ids, context + 1)
    return view[:, :-1].copy(), view[:, -1].copy()


def spread(n_available: int, n: int) -> np.ndarray:
    """`n` indices spread evenly over range(n_available), first and last included, so that the
    measures read the whole held-out text, not its first part."""
    if n > n_available:
        raise ValueError(f"{n} asked for, {n_available} available")
    return np.linspace(0, n_available - 1, n).round().astype(np.int64)
