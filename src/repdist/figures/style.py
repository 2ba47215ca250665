"""Shared figure conventions: mathtext labels (no LaTeX install needed) and atomic saving."""

from __future__ import annotations

import os
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..io import atomic_path  # noqa: E402

D_LLV = r"$d^{\lambda}_{\mathrm{LLV}}$"
D_FG = r"$d_{\mathbf{f},\mathbf{g}}$"
PAPER_BLUE = "#002347"
PAPER_ORANGE = "#FF5003"
LINE_COLOURS = [PAPER_BLUE, PAPER_ORANGE, "#2E8B57", "#8B008B"]  # one per line of a figure

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


def save_figure(fig: plt.Figure, paths: Sequence[str | os.PathLike[str]]) -> None:
    """Save `fig` to every path (format from the suffix), each atomically, then close it."""
    for path in paths:
        fmt = os.fspath(path).rsplit(".", 1)[-1]
        metadata = {"CreationDate": None} if fmt == "pdf" else {}
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, bbox_inches="tight", metadata=metadata)
    plt.close(fig)
