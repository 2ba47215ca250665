"""A byte-level BPE tokenizer (GPT-2's scheme), trained here so that the `lm` branch needs no
download and no extra package. Pre-tokens start as their UTF-8 bytes (ids 0..255); encoding
applies the merges by rank, as GPT-2's does."""

from __future__ import annotations

import heapq
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# An optional space and a run of word characters, of punctuation, or of whitespace. It covers
# every character, so decode(encode(t)) == t for any text.
PRETOKEN = re.compile(r"'(?:[sdmt]|ll|ve|re)(?!\w)| ?\w+| ?[^\s\w]+|\s+(?!\S)|\s+")
BYTES = 256
FORMAT = "repdist byte-level BPE 1"

Pair = tuple[int, int]


def pretokens(text: str) -> list[str]:
    """The pre-tokens of `text`; their concatenation is `text`."""
    return PRETOKEN.findall(text)


def _merge(seq: Sequence[int], pair: Pair, new: int) -> list[int]:
    out, i = [], 0
    while i < len(seq):
        if i + 1 < len(seq) and seq[i] == pair[0] and seq[i + 1] == pair[1]:
            out.append(new)
            i += 2
        else:
            out.append(seq[i])
            i += 1
    return out


@dataclass
class BPETokenizer:
    """The merge table: merges[r] = (a, b) made token 256 + r."""

    merges: list[Pair]
    _ranks: dict[Pair, int] = field(init=False, repr=False)
    _vocab: list[bytes] = field(init=False, repr=False)
    _cache: dict[str, list[int]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.merges = [(int(a), int(b)) for a, b in self.merges]
        self._ranks = {pair: r for r, pair in enumerate(self.merges)}
        self._vocab = [bytes([b]) for b in range(BYTES)]
        for a, b in self.merges:
            self._vocab.append(self._vocab[a] + self._vocab[b])
        self._cache = {}

    @property
    def vocab_size(self) -> int:
        return BYTES + len(self.merges)

    def token_bytes(self, token: int) -> bytes:
        return self._vocab[token]

    def _encode_word(self, word: str) -> list[int]:
        if word in self._cache:
            return self._cache[word]
        seq = list(word.encode("utf-8"))
        while len(seq) > 1:
            ranked = [(self._ranks[p], p) for p in zip(seq, seq[1:]) if p in self._ranks]
            if not ranked:
                break
            rank, pair = min(ranked)
            seq = _merge(seq, pair, BYTES + rank)
        self._cache[word] = seq
        return seq

    def encode(self, text: str) -> list[int]:
        return [i for word in pretokens(text) for i in self._encode_word(word)]

    def decode(self, ids: Iterable[int]) -> str:
        return b"".join(self._vocab[int(i)] for i in ids).decode("utf-8", errors="replace")

    def to_json(self) -> dict:
        return {"format": FORMAT, "pretokenizer": PRETOKEN.pattern, "vocab_size": self.vocab_size,
                "merges": [list(p) for p in self.merges]}

    @classmethod
    def from_json(cls, data: dict) -> BPETokenizer:
        if data.get("format") != FORMAT or data.get("pretokenizer") != PRETOKEN.pattern:
            raise ValueError(f"not a tokenizer of this version ({FORMAT}, pre-tokenizer "
                             f"{PRETOKEN.pattern!r}): format {data.get('format')!r}")
        return cls([tuple(p) for p in data["merges"]])

    @classmethod
    def load(cls, path: str | Path) -> BPETokenizer:
        return cls.from_json(json.loads(Path(path).read_text()))


def train_bpe(text: str, vocab_size: int) -> BPETokenizer:
    """Merge the most frequent adjacent pair into a new id (ties: the smallest pair) until
    `vocab_size` tokens or no pair occurs twice, recounting only the pre-tokens that hold it."""
    if vocab_size < BYTES:
        raise ValueError(f"vocab_size must be at least {BYTES} (the bytes), got {vocab_size}")
    words = Counter(pretokens(text))
    seqs = [list(w.encode("utf-8")) for w in words]
    freqs = list(words.values())
    counts: dict[Pair, int] = defaultdict(int)
    where: dict[Pair, set[int]] = defaultdict(set)
    for i, seq in enumerate(seqs):
        for pair in zip(seq, seq[1:]):
            counts[pair] += freqs[i]
            where[pair].add(i)
    heap = [(-c, pair) for pair, c in counts.items()]
    heapq.heapify(heap)
    merges: list[Pair] = []
    while len(merges) < vocab_size - BYTES and heap:
        neg, pair = heapq.heappop(heap)
        if counts.get(pair, 0) != -neg:
            continue  # stale entry: the pair's count changed since it was pushed
        if -neg < 2:
            break
        new = BYTES + len(merges)
        merges.append(pair)
        changed: set[Pair] = set()
        for i in sorted(where.pop(pair)):
            old = seqs[i]
            merged = _merge(old, pair, new)
            if len(merged) == len(old):
                continue  # the pair left this word in an earlier merge
            for p in zip(old, old[1:]):
                counts[p] -= freqs[i]
                changed.add(p)
            for p in zip(merged, merged[1:]):
                counts[p] += freqs[i]
                where[p].add(i)
                changed.add(p)
            seqs[i] = merged
        for p in changed:
            if counts[p] > 0:
                heapq.heappush(heap, (-counts[p], p))
            else:
                counts.pop(p, None)
    return BPETokenizer(merges)
