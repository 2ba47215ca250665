"""Roeder et al. (2021) Fig. 1 (App. A.1): log-bilinear word models (Mnih & Teh 2012) at several
seeds. Each seed's files hold f~ = (f, 1) on held-out contexts and g~ = (q, b) over the
vocabulary (models/log_bilinear.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...data.words import Vocabulary, build_vocabulary, read_corpus, spread, windows, words
from ...io import provenance, table_provenance, write_csv
from ...models.extract import extract
from ...models.log_bilinear import StackedLogBilinear
from ...training.loop import RunOptions, TrainConfig, TrainData, train
from ..outputs import SeedFiles, SeedRepresentations, write_seed
from ..synthetic.training import seed_metrics


@dataclass(frozen=True)
class WordsConfig:
    """config.yaml's `roeder.words`: the corpus ("stdlib" or a text file), the vocabulary
    (with UNK), the context's words, M, the seeds and the held-out contexts measured."""

    corpus: str
    max_bytes: int
    held_out_fraction: float
    vocabulary: int
    context: int
    rep_dim: int
    seeds: Sequence[int]
    n_test: int


@dataclass(frozen=True)
class WordsData:
    """The windows, the vocabulary and what they are."""

    data: TrainData
    vocabulary: Vocabulary
    info: dict[str, Any]


def words_data(cfg: WordsConfig) -> WordsData:
    """The vocabulary of the training split, every training window and `n_test` held-out
    windows spread over the held-out text; g's inputs are the word ids."""
    split = read_corpus(cfg.corpus, cfg.max_bytes, cfg.held_out_fraction)
    train_words, held_words = words(split.train), words(split.held_out)
    try:
        vocabulary = build_vocabulary(train_words, cfg.vocabulary)
    except ValueError as error:
        raise ValueError(f"roeder.words.vocabulary = {cfg.vocabulary}: {error}") from None
    x, y = windows(vocabulary.ids(train_words), cfg.context)
    held_x, held_y = windows(vocabulary.ids(held_words), cfg.context)
    if len(held_x) < cfg.n_test:
        raise ValueError(f"roeder.words.n_test = {cfg.n_test}: the held-out text gives "
                         f"{len(held_x)} windows of {cfg.context} + 1 words; raise "
                         "roeder.words.max_bytes or held_out_fraction, or lower n_test")
    rows = spread(len(held_x), cfg.n_test)
    codes = np.arange(vocabulary.size, dtype=np.float32)[:, None]
    info = {**split.info, "words_train": len(train_words), "words_held_out": len(held_words),
            "windows_train": len(x), "windows_held_out": len(held_x),
            "unk_share_train": vocabulary.counts[-1] / max(len(train_words), 1)}
    return WordsData(TrainData(x, y, held_x[rows], held_y[rows], codes), vocabulary, info)


def vocabulary_frame(vocabulary: Vocabulary) -> pd.DataFrame:
    """The vocabulary as a table: id, word, training count."""
    return pd.DataFrame({"id": np.arange(vocabulary.size), "word": list(vocabulary.words),
                         "count": list(vocabulary.counts)})


def train_words(cfg: WordsConfig, train_cfg: TrainConfig, files: Sequence[SeedFiles],
                vocabulary_path: str | Path, run_config: Mapping[str, Any],
                options: RunOptions = RunOptions()) -> dict[str, Any]:
    """Train the seeds as one stack; write their files and the vocabulary; return the data info."""
    if len(files) != len(cfg.seeds):
        raise ValueError(f"{len(files)} output sets for {len(cfg.seeds)} seeds")
    prepared = words_data(cfg)
    data = prepared.data
    stack = StackedLogBilinear(cfg.seeds, cfg.vocabulary, cfg.context, cfg.rep_dim)
    identity = {"model": {k: v for k, v in asdict(cfg).items() if k != "seeds"},
                "seeds": list(cfg.seeds), "data": prepared.info}  # another Python: other text
    log, finals = train(stack, data, train_cfg, replace(options, identity=identity))
    f_all, g_all = extract(stack, data.test_x, data.codes)
    stack.cpu()
    meta = {"experiment": "roeder_words", "M": cfg.rep_dim, "K": prepared.vocabulary.size,
            "context": cfg.context, "steps": train_cfg.steps, "protocol": train_cfg.protocol,
            **prepared.info, **provenance(run_config)}
    # a table of the run, as every csv: the run's seed and protocol (the models' is clean)
    write_csv(vocabulary_path, vocabulary_frame(prepared.vocabulary), table_provenance(
        run_config, experiment="roeder_words_vocabulary", K=prepared.vocabulary.size,
        **prepared.info))
    for i, (seed, out) in enumerate(zip(cfg.seeds, files, strict=True)):
        reps = SeedRepresentations(g_all[i], {"test": f_all[i]}, {"test": data.test_labels})
        metrics = {**seed_metrics(log, finals, i),
                   "wall_time_note": f"one job trained {len(cfg.seeds)} models together"}
        write_seed(out, reps, {**meta, "seed": int(seed)}, metrics, stack.state_dict_of(i))
    return prepared.info
