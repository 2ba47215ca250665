"""Shared figure conventions: mathtext labels (no LaTeX install needed), heatmaps' colour maps
and colour bars by a column's direction, and atomic saving."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..io import atomic_path  # noqa: E402
from ..measures.glossary import direction, entry  # noqa: E402

D_LLV = r"$d^{\lambda}_{\mathrm{LLV}}$"
D_FG = r"$d_{\mathbf{f},\mathbf{g}}$"
PAPER_BLUE = "#002347"
PAPER_ORANGE = "#FF5003"
LINE_COLOURS = [PAPER_BLUE, PAPER_ORANGE, "#2E8B57", "#8B008B"]  # one per line of a figure
# a heatmap's colour map by its column's direction (measures/glossary.py): distances and
# similarities apart, each bright where two models are the same
COLOUR_MAPS = {"distance": "magma_r", "similarity": "viridis"}
OTHER_COLOUR_MAP = "cividis"

plt.rcParams.update(
    {
        "font.size": 14,
        "axes.titlesize": 14,
        "xtick.labelsize": 12,
        "ytick.labelsize": 12,
        "savefig.dpi": 200,
        "pdf.fonttype": 42,
        # SVGs: the same element ids on every run (PDFs lose their creation date in save_figure)
        "svg.hashsalt": "repdist",
    }
)


def colour_map(column: str) -> str:
    """The colour map of a heatmap of `column`: by its direction in the glossary."""
    return COLOUR_MAPS.get(entry(column).kind, OTHER_COLOUR_MAP)


def colour_bar(image: Any, ax: plt.Axes, column: str, shown: str | None = None,
               **kwargs: Any) -> Any:
    """The colour bar of a heatmap of `column` (`shown`: the name its label gives it): the
    image takes the column's colour map, the label its direction, such as "d_llv (distance: 0
    = the same)"; `kwargs` go to Figure.colorbar."""
    image.set_cmap(colour_map(column))
    bar = ax.figure.colorbar(image, ax=ax, **kwargs)
    bar.set_label(f"{shown or column} ({direction(entry(column))})", fontsize=10)
    return bar


def save_figure(fig: plt.Figure, paths: Sequence[str | os.PathLike[str]]) -> None:
    """Save `fig` to every path (format from the suffix), each atomically, then close it."""
    for path in paths:
        fmt = os.fspath(path).rsplit(".", 1)[-1]
        metadata = {"CreationDate": None} if fmt == "pdf" else {}
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, bbox_inches="tight", metadata=metadata)
    plt.close(fig)
