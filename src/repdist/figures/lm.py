"""The language models' pairs (the `lm` branch's seeds, or lm.models by name): KL against d_LLV
and m_CCA, and the report's table; and similarity layer by layer (Roeder et al. 2021, Fig. 4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from .style import D_LLV, PAPER_BLUE, PAPER_ORANGE, legend_beside, plt

# the report's columns of the pairs table (experiments/pairs.py::PAIR_COLUMNS has them all)
TABLE_COLUMNS = ["seed_a", "seed_b", "kl", "d_llv", "mcca_f", "mcca_g", "mcca_f_components",
                 "mcca_g_components", "d_fg", "m_svd_f_min", "test_loss_diff", "acc_a", "acc_b",
                 "warning"]


def pair_keys(pairs: pd.DataFrame) -> tuple[str, str]:
    """The columns that name a pair's two models: seed_a, seed_b or model_a, model_b."""
    return ("seed_a", "seed_b") if "seed_a" in pairs else ("model_a", "model_b")


def seed_pairs_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """The pairs table's columns the report shows (the models by seed or by name)."""
    return pairs[[*pair_keys(pairs), *TABLE_COLUMNS[2:]]].reset_index(drop=True)


def per_model_text(value: Any) -> str:
    """A provenance value as a title states it: as it is, or where the models differ
    (models_provenance's {model: value}) their range (M of 32, 48 and 32: "32-48")."""
    if not isinstance(value, Mapping):
        return str(value)
    values = sorted(set(value.values()), key=lambda v: (str(type(v)), v))
    return str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"


def seed_pairs_figure(pairs: pd.DataFrame, meta: Mapping[str, Any]) -> plt.Figure:
    """Left: KL against d_LLV; right: KL against m_CCA of f and of g; a labelled point per pair."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8))
    a, b = pair_keys(pairs)
    names = [f"{x}-{y}" for x, y in zip(pairs[a], pairs[b], strict=True)]
    for ax, column, colour, label, marker, alpha in (
            (left, "d_llv", PAPER_BLUE, None, "o", None),
            (right, "mcca_f", PAPER_BLUE, r"$m_{\mathrm{CCA}}(f)$", "o", 0.8),
            (right, "mcca_g", PAPER_ORANGE, r"$m_{\mathrm{CCA}}(g)$", "s", 0.8)):
        ax.scatter(pairs[column], pairs["kl"], color=colour, label=label, marker=marker,
                   alpha=alpha)
        for x, y, name in zip(pairs[column], pairs["kl"], names, strict=True):
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=9)
    left.set(xlabel=D_LLV, ylabel="KL (nats)")
    right.set(xlabel=r"$m_{\mathrm{CCA}}$ (1 = identical up to a linear map)", ylabel="KL (nats)")
    legend_beside(right)
    undefined = int(pairs[["kl", "d_llv", "mcca_f", "mcca_g"]].isna().any(axis=1).sum())
    note = f"; {undefined} pair(s) with an undefined measure" if undefined else ""
    what = "seed pairs" if a == "seed_a" else "pairs of models"
    text = (f"Python {meta.get('python_version')}'s stdlib"
            if meta.get("corpus", "stdlib") == "stdlib" else str(meta.get("corpus")))
    fig.suptitle(f"Language models: {len(pairs)} {what} (K = {per_model_text(meta.get('K'))} "
                 f"tokens, M = {per_model_text(meta.get('M'))}, f at the "
                 f"{per_model_text(meta.get('positions'))} position(s), "
                 f"{text}){note}", color=PAPER_BLUE)
    fig.tight_layout()
    return fig


MEASURE_LABELS = {"cka": "linear CKA", "mcca": r"$m_{\mathrm{CCA}}$"}


def layers_figure(summary: pd.DataFrame, meta: Mapping[str, Any]) -> plt.Figure:
    """Similarity against layer slot (experiments/lm/layers.py::layer_summary), the mean over
    pairs with its range shaded: a line per SVCCA component count, linear CKA and m_CCA dashed,
    their chance levels (mean tau) dotted where there is a null; the head's input marked."""
    fig, ax = plt.subplots(figsize=(10, 5))
    svcca = summary[summary["measure"] == "svcca"]
    counts = sorted(svcca["components"].unique())
    colours = plt.get_cmap("viridis")([0.15 + 0.7 * i / max(1, len(counts) - 1)
                                       for i in range(len(counts))])
    lines = [(svcca[svcca["components"] == k], f"SVCCA, {k} components", c, "-")
             for k, c in zip(counts, colours, strict=True)]
    lines += [(summary[summary["measure"] == m], label, colour, "--")
              for (m, label), colour in zip(MEASURE_LABELS.items(), (PAPER_ORANGE, PAPER_BLUE),
                                            strict=True)]
    for rows, label, colour, style in lines:  # m_CCA (last) wide: SVCCA at M is m_CCA
        wide = label == MEASURE_LABELS["mcca"]
        ax.plot(rows["slot"], rows["mean"], style, marker="o", color=colour, label=label,
                linewidth=3.5 if wide else 1.8, zorder=1 if wide else 2)
        ax.fill_between(rows["slot"], rows["min"], rows["max"], color=colour, alpha=0.12)
        if style == "--" and "tau_mean" in rows:  # CKA's and m_CCA's chance level
            ax.plot(rows["slot"], rows["tau_mean"], ":", color=colour, linewidth=1.5,
                    label=f"{label}: chance (null's tau)")
    for slot in summary.loc[summary["head_input"], "slot"].unique():
        ax.axvline(slot, color="grey", linestyle=":", linewidth=1.5)
        ax.annotate("head's input", (slot, 0.02), xycoords=("data", "axes fraction"),
                    rotation=90, ha="right", va="bottom", color="grey", fontsize=11)
    models = meta.get("models") or []
    ax.set_xticks(*slot_ticks(summary))
    title = slot_axis_title(summary, models[0]["name"] if models else "the first model")
    ax.set_xlabel(title, fontsize=10 if "\n" in title else None)
    ax.set_ylabel("similarity (mean over pairs; range shaded)")
    ax.set_ylim(min(0.0, float(summary["min"].min())), 1.02)
    legend_beside(ax)
    names = ", ".join(m["name"] for m in models) if len(models) <= 4 else f"{len(models)} models"
    ax.set_title(f"Layer by layer: {names} ({len(models) * (len(models) - 1) // 2} pairs, "
                 f"f at the {meta.get('positions')} position(s))", color=PAPER_BLUE, fontsize=12)
    fig.tight_layout()
    return fig


def slot_ticks(summary: pd.DataFrame) -> tuple[list[int], list[str]]:
    """The layer figure's ticks: each slot, and in brackets the first model's layer there
    where it is not the slot's number (experiments/lm/layers.py::layer_summary's `layer`)."""
    slots = sorted(int(s) for s in summary["slot"].unique())
    layers = summary.drop_duplicates("slot").set_index("slot")["layer"]
    return slots, [f"{s}" if layers[s] == s else f"{s} ({layers[s]})" for s in slots]


def slot_axis_title(summary: pd.DataFrame, first: str) -> str:
    """What the ticks mean: layers, or where a tick reads "1 (2)", slot 1 is the first model's
    layer 2 (others matched to it by relative depth or place in lm.layers: layer_slots)."""
    if all("(" not in label for label in slot_ticks(summary)[1]):
        return "layer (0: the embeddings)"
    return (f"layer slot (0: the embeddings)\n\"k (l)\": slot k is layer l of {first}, the "
            "first model,\nand of each other model its layer at the same relative depth (or "
            "place in lm.layers)")
