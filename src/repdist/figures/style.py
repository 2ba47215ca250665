"""Shared figure conventions: mathtext labels (no LaTeX install needed), heatmaps' colour maps
and colour bars by a column's direction, legends off the data, and atomic saving."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.font_manager import FontProperties  # noqa: E402
from matplotlib.legend import Legend  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.transforms import ScaledTranslation  # noqa: E402

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

# svg.hashsalt: the same SVG element ids on every run (save_figure drops PDFs' dates)
plt.rcParams.update({"font.size": 14, "axes.titlesize": 14, "xtick.labelsize": 12,
                     "ytick.labelsize": 12, "savefig.dpi": 200, "pdf.fonttype": 42,
                     "svg.hashsalt": "repdist"})


def colour_map(column: str) -> str:
    """The colour map of a heatmap of `column`: by its direction in the glossary."""
    return COLOUR_MAPS.get(entry(column).kind, OTHER_COLOUR_MAP)


def colour_bar(image: Any, ax: plt.Axes, column: str, shown: str | None = None,
               **kwargs: Any) -> Any:
    """The colour bar of a heatmap of `column`: the image takes its colour map, the label (`shown`
    or the column) its direction, e.g. "d_llv (distance: 0 = the same)"; `kwargs`: colorbar's."""
    image.set_cmap(colour_map(column))
    bar = ax.figure.colorbar(image, ax=ax, **kwargs)
    bar.set_label(f"{shown or column} ({direction(entry(column))})", fontsize=10)
    return bar


def legend_beside(ax: plt.Axes, handles: Sequence[Any] | None = None, **kwargs: Any) -> Legend:
    """A legend to the right of `ax`, off its data (tight_layout and save_figure's tight box
    make room for it); `handles`: the entries (default: the axes' labelled artists)."""
    kwargs = {"fontsize": 10, "frameon": False, **kwargs}
    return ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                     borderaxespad=0.0, **kwargs)


def legend_below(ax: plt.Axes, handles: Sequence[Any] | None = None, **kwargs: Any) -> Legend:
    """A legend under `ax`, below its tick values and x label (a fixed distance in points,
    whatever the axes' size), off its data."""
    label = ax.get_xlabel()
    lines = label.count("\n") + 1 if label else 0
    ticks = FontProperties(size=plt.rcParams["xtick.labelsize"]).get_size_in_points()
    gap = 15 + 1.2 * ticks + 1.2 * lines * ax.xaxis.label.get_size()
    down = ScaledTranslation(0, -gap / 72, ax.figure.dpi_scale_trans)
    kwargs = {"fontsize": 10, "frameon": False, **kwargs}
    return ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                     bbox_transform=ax.transAxes + down, borderaxespad=0.0, **kwargs)


def line_key(label: str, colour: str = "black", style: str = "-", **kwargs: Any) -> Line2D:
    """A legend entry for what a line's colour or style means (no artist of the axes)."""
    return Line2D([], [], color=colour, ls=style, label=label, **kwargs)


def band_key(label: str, colour: str = "black", alpha: float = 0.2) -> Patch:
    """A legend entry for what a shaded band means."""
    return Patch(facecolor=colour, alpha=alpha, lw=0, label=label)


def save_figure(fig: plt.Figure, paths: Sequence[str | os.PathLike[str]]) -> None:
    """Save `fig` to every path (format from the suffix), each atomically, then close it."""
    for path in paths:
        fmt = os.fspath(path).rsplit(".", 1)[-1]
        metadata = {"CreationDate": None} if fmt == "pdf" else {}
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, bbox_inches="tight", metadata=metadata)
    plt.close(fig)
