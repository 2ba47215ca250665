"""Our seed s against the authors' seed s (extracted by `checkpoints`): KL, d_LLV, m_CCA and
d_{f,g} per configuration and seed, beside the distance between different seeds: the evidence
that we retrace their runs. No torch here: the rule runs in the measures environment."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ...io.representations import load_representations
from ...measures import CompareSettings, prepare
from ...measures.pairs import compare_pairs

OURS_VS_AUTHORS_COLUMNS = ["K", "width", "seed", "kl", "d_llv", "mcca_f", "d_fg", "acc_ours",
                           "acc_authors", "authors_inter_seed_d_llv", "authors_inter_seed_kl",
                           "authors_inter_seed_mcca_f", "ours_inter_seed_d_llv", "warning"]


def read_configurations(configurations: Sequence[Sequence[int]], seeds: Sequence[int],
                        files: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """The configurations `ours_vs_authors` takes, from the files of the DAG: for `who` in
    ours, authors, the lists `{who}_embeddings`, `{who}_unembeddings`, `{who}_metrics`
    (configuration-major, seed-minor) and `{who}_pairs` (one pairs table per configuration)."""
    n = len(seeds)
    out = []
    for c, (k, width) in enumerate(configurations):
        part = slice(c * n, (c + 1) * n)
        entry: dict[str, Any] = {"K": int(k), "width": int(width), "seeds": list(seeds)}
        for who in ("ours", "authors"):
            models = zip(files[f"{who}_embeddings"][part], files[f"{who}_unembeddings"][part],
                         files[f"{who}_metrics"][part], strict=True)
            entry[who] = [(e, u, json.loads(Path(m).read_text())) for e, u, m in models]
            # CIFAR pairs tables name the test split's m_CCA mcca_f_test (the one compared here)
            pairs = pd.read_parquet(files[f"{who}_pairs"][c])
            entry[f"{who}_pairs"] = pairs.rename(columns={"mcca_f_test": "mcca_f"})
        out.append(entry)
    return out


def ours_vs_authors(configurations: Sequence[Mapping[str, Any]],
                    measure_kwargs: Mapping[str, Any]) -> pd.DataFrame:
    """Per configuration and seed: KL, d_LLV, m_CCA and d_{f,g} between our model and the
    authors' of the same seed, beside the mean over pairs of different seeds among theirs (and
    ours). `configurations`: read_configurations' entries."""
    rows = []
    settings = CompareSettings(**measure_kwargs)
    for c in configurations:
        authors_pairs, ours_pairs = c["authors_pairs"], c["ours_pairs"]
        seeds = set(c["seeds"])
        mine = ours_pairs[ours_pairs["seed_a"].isin(seeds) & ours_pairs["seed_b"].isin(seeds)]
        models = [prepare(*load_representations(e, u)) for e, u, _ in (*c["ours"], *c["authors"])]
        n = len(c["seeds"])
        results = compare_pairs(models, settings, [(s, n + s) for s in range(n)])
        for seed, r, (_, _, m1), (_, _, m2) in zip(c["seeds"], results, c["ours"], c["authors"],
                                                   strict=True):
            rows.append({
                "K": c["K"], "width": c["width"], "seed": seed,
                **{k: r[k] for k in ("kl", "d_llv", "mcca_f", "d_fg")},
                "acc_ours": m1["test_accuracy"], "acc_authors": m2["test_accuracy"],
                **{f"authors_inter_seed_{k}": authors_pairs[k].mean()
                   for k in ("d_llv", "kl", "mcca_f")},
                "ours_inter_seed_d_llv": mine["d_llv"].mean(), "warning": r["warning"]})
    return pd.DataFrame(rows, columns=OURS_VS_AUTHORS_COLUMNS)


RETRACE_TOLERANCE = 0.03  # d_LLV between our seed s and the authors' seed s


def ours_vs_authors_markdown(table: pd.DataFrame) -> str:
    """The table as Markdown with a summary per configuration and overall."""
    lines = ["# Our seed s vs the authors' seed s", "",
             f"d_LLV, KL, m_CCA and d_fg between our model and the authors' model of the same "
             f"seed; beside them the mean over pairs of *different* seeds among the authors' "
             f"models (and ours). Retraced: d_LLV < {RETRACE_TOLERANCE}.", "",
             "| K | width | seeds | median d_LLV ours vs theirs | retraced | max d_LLV | "
             "median KL | min m_CCA | authors' inter-seed d_LLV | ours |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (k, w), part in table.groupby(["K", "width"]):
        lines.append(
            f"| {k} | {w} | {len(part)} | {part['d_llv'].median():.4f} | "
            f"{int((part['d_llv'] < RETRACE_TOLERANCE).sum())}/{len(part)} | "
            f"{part['d_llv'].max():.4f} | {part['kl'].median():.2e} | {part['mcca_f'].min():.4f} "
            f"| {part['authors_inter_seed_d_llv'].iloc[0]:.3f} | "
            f"{part['ours_inter_seed_d_llv'].iloc[0]:.3f} |")
    n = len(table)
    within = int((table["d_llv"] < RETRACE_TOLERANCE).sum())
    lines += ["", f"Overall: {within} of {n} models within d_LLV {RETRACE_TOLERANCE} of the "
              f"authors' model of the same seed; median {table['d_llv'].median():.4f}; the "
              f"authors' own seeds lie {table['authors_inter_seed_d_llv'].mean():.3f} apart on "
              f"average.", "", "## Per seed", "",
              "| K | width | seed | d_LLV | KL | m_CCA | d_fg | acc ours | acc authors |",
              "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.K} | {r.width} | {r.seed} | {r.d_llv:.4f} | {r.kl:.2e} | {r.mcca_f:.4f} | "
              f"{r.d_fg:.4f} | {r.acc_ours:.4f} | {r.acc_authors:.4f} |"
              for r in table.itertuples()]
    return "\n".join(lines) + "\n"
