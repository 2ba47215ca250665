"""d_LLV vs d_{f,g} scatter with the bound d_{f,g} <= 2 M d_LLV (paper Fig. 16)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .style import D_FG, D_LLV, PAPER_BLUE, legend_below, plt


def bound_figure(table: pd.DataFrame, rep_dim: int, title: str,
                 marker_size: float = 12) -> plt.Figure:
    """Points with d_LLV < 1/(2M) (where the theorem applies) and the line 2 M d_LLV; pairs with
    an undefined measure (NaN: degenerate models) are left out and counted in the title."""
    limit = 1.0 / (2 * rep_dim)
    undefined = int(table[["d_llv", "d_fg"]].isna().any(axis=1).sum())
    defined = table.dropna(subset=["d_llv", "d_fg"])
    valid = defined[defined["d_llv"] < limit]
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.scatter(valid["d_llv"], valid["d_fg"], s=marker_size, color=PAPER_BLUE, label="model pairs")
    top = float(valid["d_llv"].max()) if len(valid) else limit
    u = np.linspace(0.0, top + 0.01, 100)
    ax.plot(u, 2 * rep_dim * u, color="black", lw=1.5,
            label=f"the bound: {D_FG} ≤ {2 * rep_dim} {D_LLV}")
    ax.set(xlabel=D_LLV, ylabel=D_FG)
    above = int((valid["d_fg"] > 2 * rep_dim * valid["d_llv"]).sum())
    notes = []
    if len(defined) > len(valid):
        notes.append(f"{len(defined) - len(valid)} with {D_LLV} ≥ {limit:g} not shown")
    if undefined:
        notes.append(f"{undefined} undefined (NaN) left out")
    ax.set_title("\n".join([title, f"{len(valid)} pairs with {D_LLV} < {limit:g}; {above} above "
                                     "the bound", *(["; ".join(notes)] if notes else [])]),
                 fontsize=12)
    legend_below(ax, ncols=2)
    return fig
