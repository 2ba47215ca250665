"""Distilled students against their teachers: m_CCA(f), d_LLV and the angle probe's R^2 against
the student's KL to the teacher, one colour per loss, one marker per (K, width)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .style import D_LLV, legend_beside, line_key, plt

LOSS_STYLE = {"kl": ("KL", "#002347"), "logit_l2": (r"logit distance ($L_2$)", "#FF5003"),
              "logit_l1": (r"logit distance ($L_1$)", "#2a9d8f"),
              "labels": ("labels only", "#8d8d8d")}
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
PANELS = (("mcca_f", r"$m_{\mathrm{CCA}}$ of f (teacher, student)"),
          ("d_llv", f"{D_LLV} (teacher, student)"),
          ("probe_angle_student", r"student's angle probe $R^2$"))


def distillation_figure(table: pd.DataFrame, title: str) -> plt.Figure:
    """Three panels against the student's KL to its teacher; a colour per loss, a marker per
    (K, width), the teachers' own angle probe dotted; the legend beside the last panel."""
    fig, axes = plt.subplots(1, len(PANELS), figsize=(16, 4.6))
    configs = list(table.groupby(["K", "width"]).groups)
    for (loss, part) in table.groupby("loss", sort=False):
        label, colour = LOSS_STYLE.get(loss, (loss, None))
        for ci, (k, w) in enumerate(configs):
            rows = part[(part["K"] == k) & (part["width"] == w)]
            kl = np.clip(rows["kl"].to_numpy(dtype=float), 1e-8, None)
            for ax, (col, _) in zip(axes, PANELS, strict=True):
                ax.scatter(kl, rows[col], color=colour, marker=MARKERS[ci % len(MARKERS)],
                           s=36, alpha=0.8, label=label if ci == 0 else None)
    for ax, (_, ylabel) in zip(axes, PANELS, strict=True):
        ax.set_xscale("log")
        ax.set(xlabel="KL(teacher || student)", ylabel=ylabel)
    teacher = table.groupby(["K", "width"])["probe_angle_teacher"].mean()
    for ci, (k, w) in enumerate(configs):
        axes[-1].axhline(teacher.loc[(k, w)], color="k", lw=0.8, ls=":")
        axes[-1].scatter([], [], color="k", marker=MARKERS[ci % len(MARKERS)],
                         label=f"K = {k}, width {w}")
    teachers = line_key(r"the teachers' mean angle probe $R^2$", lw=0.8, style=":")
    legend_beside(axes[-1], [*axes[-1].get_legend_handles_labels()[0], teachers], fontsize=9)
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    return fig
