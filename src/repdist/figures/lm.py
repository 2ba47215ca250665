"""The language models' seed pairs (the `lm` branch): KL against d_LLV and against m_CCA, one
point per pair of seeds, and the table the report shows beside it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from .style import D_LLV, PAPER_BLUE, PAPER_ORANGE, plt

# the report's columns of the pairs table (experiments/pairs.py::PAIR_COLUMNS has them all)
TABLE_COLUMNS = ["seed_a", "seed_b", "kl", "d_llv", "mcca_f", "mcca_g", "d_fg", "m_svd_f_min",
                 "test_loss_diff", "acc_a", "acc_b", "warning"]


def seed_pairs_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """The pairs table's columns the report shows."""
    return pairs[TABLE_COLUMNS].reset_index(drop=True)


def seed_pairs_figure(pairs: pd.DataFrame, meta: Mapping[str, Any]) -> plt.Figure:
    """Left: KL against d_LLV; right: KL against m_CCA of f and of g; one point per pair, each
    labelled with its seeds."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8))
    names = [f"{a}-{b}" for a, b in zip(pairs["seed_a"], pairs["seed_b"], strict=True)]
    left.scatter(pairs["d_llv"], pairs["kl"], color=PAPER_BLUE)
    for x, y, name in zip(pairs["d_llv"], pairs["kl"], names, strict=True):
        left.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=9)
    left.set_xlabel(D_LLV)
    left.set_ylabel("KL (nats)")
    for column, colour, label in (("mcca_f", PAPER_BLUE, r"$m_{\mathrm{CCA}}(f)$"),
                                  ("mcca_g", PAPER_ORANGE, r"$m_{\mathrm{CCA}}(g)$")):
        right.scatter(pairs[column], pairs["kl"], color=colour, label=label)
        for x, y, name in zip(pairs[column], pairs["kl"], names, strict=True):
            right.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=9)
    right.set_xlabel(r"$m_{\mathrm{CCA}}$ (1 = identical up to a linear map)")
    right.set_ylabel("KL (nats)")
    right.legend(loc="best")
    undefined = int(pairs[["kl", "d_llv", "mcca_f", "mcca_g"]].isna().any(axis=1).sum())
    note = f"; {undefined} pair(s) with an undefined measure" if undefined else ""
    fig.suptitle(f"Language models: {len(pairs)} seed pairs (K = {meta.get('K')} tokens, "
                 f"M = {meta.get('M')}, f at the {meta.get('positions')} position(s), "
                 f"Python {meta.get('python_version')}'s stdlib){note}", color=PAPER_BLUE)
    fig.tight_layout()
    return fig
