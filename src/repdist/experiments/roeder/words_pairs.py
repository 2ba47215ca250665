"""Roeder et al. (2021) Fig. 1 as tables, without torch: the word models' pairs of seeds with
the held-out R^2 of Fig. 1's linear fits, and the figure's points."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...data.words import UNK, spread
from ...io.representations import load_representations
from ...measures.probe import linear_fit, linear_map, linear_probe_r2
from ..pairs import PAIR_COLUMNS, compare_seeds

# the pairs table: the pairs loop's columns, then Fig. 1's held-out R^2 (mean over M)
R2_COLUMNS = ["r2_g", "r2_g_min", "r2_f", "r2_f_min"]
WORDS_PAIR_COLUMNS = [*PAIR_COLUMNS[:-1], *R2_COLUMNS, PAIR_COLUMNS[-1]]


def word_vectors(g: np.ndarray, rep_dim: int) -> np.ndarray:
    """q, the word vectors, from g~ = (q, b): its first rep_dim columns."""
    return np.asarray(g, dtype=np.float64)[:, :rep_dim]


def vector_fit_r2(q_a: np.ndarray, q_b: np.ndarray) -> np.ndarray:
    """Held-out R^2 per dimension of q_a ~ [q_b, 1] W fitted on the words of even frequency
    rank and scored on the odd ones (both halves span the frequencies alike)."""
    return linear_probe_r2(q_b[0::2], q_a[0::2], q_b[1::2], q_a[1::2])


def words_pairs(seeds: Sequence[int], embeddings: Sequence[str | Path],
                unembeddings: Sequence[str | Path], metrics: Sequence[Mapping[str, Any]],
                measure_kwargs: Mapping[str, Any], rep_dim: int) -> pd.DataFrame:
    """Every pair: the pairs loop's measures, and the R^2 of b's fit onto a of the word
    vectors (r2_g) and of f on the held-out contexts, halves fitted and scored (r2_f)."""
    table = compare_seeds(seeds, embeddings, unembeddings, metrics, measure_kwargs)
    reps = {int(s): load_representations(e, u)
            for s, e, u in zip(seeds, embeddings, unembeddings, strict=True)}
    rows = []
    for a, b in zip(table["seed_a"], table["seed_b"], strict=True):
        (f_a, g_a), (f_b, g_b) = reps[int(a)], reps[int(b)]
        r2_g = vector_fit_r2(word_vectors(g_a, rep_dim), word_vectors(g_b, rep_dim))
        r2_f = linear_fit("", f_a[:, :rep_dim], f_b[:, :rep_dim]).r2
        rows.append({"r2_g": r2_g.mean(), "r2_g_min": r2_g.min(), "r2_f": r2_f.mean(),
                     "r2_f_min": r2_f.min()})
    return pd.concat([table, pd.DataFrame(rows, index=table.index, columns=R2_COLUMNS)],
                     axis=1)[WORDS_PAIR_COLUMNS]


@dataclass(frozen=True)
class WordsFit:
    """Fig. 1 for one pair: the shown words under a, b, and b mapped onto a, with its R^2."""

    words: list[str]
    q_a: np.ndarray  # (n, M)
    q_b: np.ndarray
    mapped_b: np.ndarray
    r2: np.ndarray  # (M,)


def shown_words(vocabulary: pd.DataFrame, shown: int | Sequence[str]) -> list[int]:
    """Ids of the words Fig. 1 draws: those listed, or `shown` all-letter words spread by rank."""
    table = vocabulary.reset_index(drop=True)
    if isinstance(shown, int):
        letters = [int(i) for i, w in zip(table["id"], table["word"], strict=True)
                   if isinstance(w, str) and w.isalpha() and w != UNK]
        if len(letters) < shown:
            raise ValueError(f"roeder.words.shown = {shown}: the vocabulary holds "
                             f"{len(letters)} words made of letters")
        return [letters[i] for i in spread(len(letters), shown)]
    index = {w: int(i) for i, w in zip(table["id"], table["word"], strict=True)}
    missing = [w for w in shown if w not in index]
    if missing:
        raise ValueError(f"roeder.words.shown: {missing} not in the vocabulary (the "
                         f"{len(index)} most frequent words of the training text)")
    return [index[w] for w in shown]


def words_fit(vocabulary: pd.DataFrame, ids: Sequence[int], q_a: np.ndarray,
              q_b: np.ndarray) -> WordsFit:
    """Map b's word vectors onto a's, fitted on the words not shown, applied to those shown."""
    shown = np.asarray(ids, dtype=np.int64)
    rest = np.setdiff1d(np.arange(len(q_a)), shown)
    if len(rest) <= q_b.shape[1] + 1:
        raise ValueError(f"{len(rest)} words outside the {len(shown)} shown cannot fit an "
                         f"affine map of {q_b.shape[1]} dimensions")
    mapped = linear_map(q_b[rest], q_a[rest], q_b[shown])
    r2 = linear_probe_r2(q_b[rest], q_a[rest], q_b[shown], q_a[shown])
    names = vocabulary.set_index("id").loc[shown, "word"].astype(str).tolist()
    return WordsFit(names, q_a[shown], q_b[shown], mapped, r2)


def fit_table(fit: WordsFit, seeds: Sequence[int]) -> pd.DataFrame:
    """The figure's points: each shown word under a, b and b mapped onto a."""
    rows = {"word": fit.words}
    for d in range(fit.q_a.shape[1]):
        rows |= {f"a_{d + 1}": fit.q_a[:, d], f"b_{d + 1}": fit.q_b[:, d],
                 f"b_mapped_{d + 1}": fit.mapped_b[:, d]}
    return pd.DataFrame(rows).assign(seed_a=int(seeds[0]), seed_b=int(seeds[1]))
