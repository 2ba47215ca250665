"""Pairs tables: every measure for every pair of seeds of one configuration, computed from
the models' parquet files. No torch here: the pairs rules run in the measures environment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..io import read_parquet_metadata
from ..io.provenance import models_provenance
from ..io.representations import columns_of, load_representations, read_embeddings
from ..measures import CompareSettings, mean_cca, prepare
from ..measures.cca import mean_cca_from_bases, orthonormal_basis
from ..measures.null import SUFFIXES, null_keys, null_measures
from ..measures.pairs import Pair, all_pairs, compare_pairs

DISTRIBUTION_COLUMNS = ["kl", "d_llv", "t1", "t2", "t3", "t4", "y_pivot", "y_leave_out",
                        "input_set", "m_svd_f_min", "m_svd_g", "d_fg"]
# after d_logit, the Platonic Representation Hypothesis' metrics (Huh et al. 2024)
EXTRA_COLUMNS = ["cka_f", "svcca_f", "mutual_knn_f", "d_logit", "cycle_knn_f", "lcs_knn_f",
                 "edit_distance_knn_f", "unbiased_cka_f", "cknna_f"]


def distribution_fields(result: Mapping[str, Any]) -> dict[str, Any]:
    """KL, d_LLV and its terms, the chosen pivot/input set, m_SVD's and d_{f,g}."""
    fields = {k: result[k] for k in DISTRIBUTION_COLUMNS if k in result}
    fields["m_svd_f_min"] = float(np.min(result["m_svd_f"]))
    return {k: fields[k] for k in DISTRIBUTION_COLUMNS}


def extra_fields(result: Mapping[str, Any]) -> dict[str, Any]:
    """The measures beyond the paper (linear CKA, SVCCA, mutual k-NN, d_logit, PRH's)."""
    return {k: result[k] for k in EXTRA_COLUMNS}


def null_fields(result: Mapping[str, Any], settings: CompareSettings,
                renamed: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Each null measure's `_tau`, `_p` and `_calibrated` (measures/null.py), after the table's
    other columns; `renamed`: a measure's column name where the table calls it otherwise."""
    keys = null_keys(settings.null, settings.selected)
    return {column: result[key] for column, key in
            zip(null_fields_of(settings, renamed), keys, strict=True)}


def null_fields_of(settings: CompareSettings, renamed: Mapping[str, str] | None = None
                   ) -> list[str]:
    """The null columns a table of these settings gains (null_fields' keys)."""
    renamed = renamed or {}
    return [f"{renamed.get(m, m)}{suffix}"
            for m in null_measures(settings.null, settings.selected) for suffix in SUFFIXES]


# how many components m_CCA averaged (fewer than M when a model's f or g varies in fewer
# directions, e.g. after a final LayerNorm), added beside m_CCA
MCCA_COMPONENTS = ["mcca_f_components", "mcca_g_components"]
PAIR_COLUMNS = ["seed_a", "seed_b", *DISTRIBUTION_COLUMNS, "mcca_f", "mcca_g", *MCCA_COMPONENTS,
                "test_loss_diff", "acc_a", "acc_b", *EXTRA_COLUMNS, "warning"]


def compare_seeds(seeds: Sequence[int], embeddings: Sequence[str | Path],
                  unembeddings: Sequence[str | Path], metrics: Sequence[Mapping[str, Any]],
                  measure_kwargs: Mapping[str, Any],
                  pairs: Sequence[Pair] | None = None) -> pd.DataFrame:
    """Every unordered pair of seeds (a < b in the given order), or the given `pairs` (indices
    into `seeds`): one row of PAIR_COLUMNS each."""
    return _pairs_table([int(s) for s in seeds], ("seed_a", "seed_b"), embeddings,
                        unembeddings, metrics, measure_kwargs, pairs)


# the pairs of named models (lm.models: outside language models): PAIR_COLUMNS by name
NAMED_PAIR_COLUMNS = ["model_a", "model_b", *PAIR_COLUMNS[2:]]


def compare_named(names: Sequence[str], embeddings: Sequence[str | Path],
                  unembeddings: Sequence[str | Path], metrics: Sequence[Mapping[str, Any]],
                  measure_kwargs: Mapping[str, Any]) -> pd.DataFrame:
    """compare_seeds for models known by name: one row of NAMED_PAIR_COLUMNS per pair."""
    return _pairs_table([str(n) for n in names], ("model_a", "model_b"), embeddings,
                        unembeddings, metrics, measure_kwargs)


def _pairs_table(keys: list[Any], columns: tuple[str, str], embeddings: Sequence[str | Path],
                 unembeddings: Sequence[str | Path], metrics: Sequence[Mapping[str, Any]],
                 measure_kwargs: Mapping[str, Any],
                 pairs: Sequence[Pair] | None = None) -> pd.DataFrame:
    """The seeds' and named models' pairs: each model prepared once, every pair compared."""
    prepared = [prepare(*load_representations(e, u))
                for e, u in zip(embeddings, unembeddings, strict=True)]
    pairs = all_pairs(len(keys)) if pairs is None else [tuple(p) for p in pairs]
    settings = CompareSettings(**measure_kwargs)
    results = compare_pairs(prepared, settings, pairs)
    a, b = columns
    rows = [{a: keys[i], b: keys[j], **distribution_fields(r), "mcca_f": r["mcca_f"],
             "mcca_g": r["mcca_g"], **{key: r[key] for key in MCCA_COMPONENTS},
             "test_loss_diff": abs(metrics[i]["final_test_loss"] - metrics[j]["final_test_loss"]),
             "acc_a": metrics[i]["test_accuracy"], "acc_b": metrics[j]["test_accuracy"],
             **extra_fields(r), "warning": r["warning"], **null_fields(r, settings)}
            for (i, j), r in zip(pairs, results, strict=True)]
    return pd.DataFrame(rows, columns=[a, b, *PAIR_COLUMNS[2:], *null_fields_of(settings)])


def pairs_metadata(keys: Sequence[Any], embeddings: Sequence[str | Path],
                   measure_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The pairs table's metadata: its models' metadata less the seed or name (as
    models_provenance merges it: models of different widths keep every M), and the measures'."""
    metas = {str(key): {k: v for k, v in read_parquet_metadata(path).items()
                        if k not in ("seed", "name")}
             for key, path in zip(keys, embeddings, strict=True)}
    return {**models_provenance(metas), "measures": dict(measure_kwargs)}


def embeddings_mcca(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """m_CCA of two models' embeddings tables (f_0.. columns of the same inputs): the number
    Fig. 3 (left) shows above two seeds' 2-D embeddings."""
    return mean_cca(columns_of(a, "f_"), columns_of(b, "f_"))


CIFAR_PAIR_COLUMNS = ["seed_a", "seed_b", *DISTRIBUTION_COLUMNS, "mcca_f_test", "mcca_f_train",
                      "mcca_g", *MCCA_COMPONENTS, "test_loss_a", "test_loss_b", "test_loss_diff",
                      "test_loss_eval_a", "test_loss_eval_b", "test_loss_eval_diff",
                      *EXTRA_COLUMNS, "warning"]


def compare_cifar_seeds(seeds: Sequence[int], embeddings_test: Sequence[str | Path],
                        embeddings_train: Sequence[str | Path], unembeddings: Sequence[str | Path],
                        metrics: Sequence[Mapping[str, Any]],
                        measure_kwargs: Mapping[str, Any]) -> pd.DataFrame:
    """All 45 (for 10 seeds) pairs: the measures on the test split, m_CCA also on the train split.
    test_loss_*: the protocol's final test losses (the paper's: train-mode BatchNorm, as its Fig. 5
    used); test_loss_eval_*: eval mode on the whole test set after training."""
    prepared = [prepare(*load_representations(e, u))
                for e, u in zip(embeddings_test, unembeddings, strict=True)]
    train_bases = [orthonormal_basis(columns_of(read_embeddings(e), "f_"))
                   for e in embeddings_train]
    pairs = all_pairs(len(seeds))
    settings = CompareSettings(**measure_kwargs)
    results = compare_pairs(prepared, settings, pairs)
    test_split = {"mcca_f": "mcca_f_test"}
    return pd.DataFrame([{**_cifar_row(seeds, metrics, train_bases, prepared[0].rep_dim, i, j, r),
                          **null_fields(r, settings, test_split)}
                         for (i, j), r in zip(pairs, results, strict=True)],
                        columns=[*CIFAR_PAIR_COLUMNS, *null_fields_of(settings, test_split)])


def _cifar_row(seeds: Sequence[int], metrics: Sequence[Mapping[str, Any]],
               train_bases: Sequence[np.ndarray], rep_dim: int, i: int, j: int,
               r: Mapping[str, Any]) -> dict[str, Any]:
    mcca_train, _ = mean_cca_from_bases(train_bases[i], train_bases[j], rep_dim)
    loss_a, loss_b = metrics[i]["final_test_loss"], metrics[j]["final_test_loss"]
    eval_a, eval_b = metrics[i]["final_test_loss_eval"], metrics[j]["final_test_loss_eval"]
    return {"seed_a": int(seeds[i]), "seed_b": int(seeds[j]), **distribution_fields(r),
            "mcca_f_test": r["mcca_f"], "mcca_f_train": mcca_train, "mcca_g": r["mcca_g"],
            **{key: r[key] for key in MCCA_COMPONENTS},
            "test_loss_a": loss_a, "test_loss_b": loss_b, "test_loss_diff": abs(loss_a - loss_b),
            "test_loss_eval_a": eval_a, "test_loss_eval_b": eval_b,
            "test_loss_eval_diff": abs(eval_a - eval_b), **extra_fields(r), "warning": r["warning"]}
