"""Roeder et al. (2021) Fig. 1: a subset of words as two seeds of the log-bilinear word model
place them (left, middle), and the second seed's mapped onto the first's by least squares,
drawn over the first's (right): where the two are one linear map apart, the points overlap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from .style import PAPER_BLUE, PAPER_ORANGE, legend_below, plt


class WordsFit(Protocol):
    """What the figure draws (experiments/roeder/words_pairs.py WordsFit): the shown words,
    their vectors under seeds a and b (n, M), b's mapped onto a's, and that fit's R^2 (M,)."""

    words: list[str]
    q_a: np.ndarray
    q_b: np.ndarray
    mapped_b: np.ndarray
    r2: np.ndarray


def _labelled(ax: plt.Axes, points: np.ndarray, names: Sequence[str], colour: str,
              label: str | None = None) -> None:
    ax.scatter(points[:, 0], points[:, 1], s=14, color=colour, label=label, zorder=2)
    for (x, y), name in zip(points[:, :2], names, strict=True):
        ax.annotate(name, (x, y), xytext=(3, 2), textcoords="offset points", fontsize=8,
                    color=colour)


class ContextsFit(Protocol):
    """f on the held-out contexts (measures/probe.py LinearFit): seed a's f on the second half,
    seed b's mapped there by the map fitted on the first half, and that fit's R^2 (M,)."""

    f_a: np.ndarray
    mapped_b: np.ndarray
    r2: np.ndarray


CONTEXTS_SHOWN = 300  # held-out contexts drawn in f's panel (the fit's R^2 is over all of them)


def roeder_words_figure(fit: WordsFit, seeds: Sequence[int], note: str,
                        contexts: ContextsFit | None = None) -> plt.Figure:
    """Three panels of the shown words' 2-D vectors q: seed a, seed b, b mapped onto a; and,
    given `contexts`, a fourth of f on held-out contexts (Fig. 1's caption), seed b's mapped
    onto seed a's by the map fitted on the other half."""
    fig, axes = plt.subplots(1, 4 if contexts is not None else 3,
                             figsize=(20 if contexts is not None else 15, 5.2))
    a, b = int(seeds[0]), int(seeds[1])
    _labelled(axes[0], fit.q_a, fit.words, PAPER_BLUE)
    axes[0].set_title(f"seed {a}: $q_y$")
    _labelled(axes[1], fit.q_b, fit.words, PAPER_ORANGE)
    axes[1].set_title(f"seed {b}: $q_y$")
    for start, end in zip(fit.q_a[:, :2], fit.mapped_b[:, :2], strict=True):
        axes[2].plot(*zip(start, end, strict=True), color="grey", lw=0.6, zorder=1)
    _labelled(axes[2], fit.q_a, fit.words, PAPER_BLUE, f"seed {a}")
    axes[2].scatter(fit.mapped_b[:, 0], fit.mapped_b[:, 1], s=40, facecolors="none",
                    edgecolors=PAPER_ORANGE, label=f"seed {b} mapped", zorder=3)
    r2 = ", ".join(f"{r:.3f}" for r in fit.r2)
    axes[2].set_title(f"seed {b} mapped onto seed {a}: $A q_y + c$\n$R^2$ per dimension: {r2}",
                      fontsize=12)
    if contexts is not None:
        _contexts_panel(axes[3], contexts, a, b)
    for ax in axes:
        ax.set(xlabel="dimension 1", ylabel="dimension 2")
    for ax in axes[2:]:
        legend_below(ax, ncols=2)
    fig.suptitle(f"Roeder et al. Fig. 1: two seeds' word vectors, one linear map apart? ({note})",
                 fontsize=12)
    fig.tight_layout()
    return fig


def _contexts_panel(ax: plt.Axes, contexts: ContextsFit, a: int, b: int) -> None:
    """f of the first CONTEXTS_SHOWN held-out contexts: seed a's, and seed b's mapped, joined."""
    shown = slice(0, CONTEXTS_SHOWN)
    f_a, mapped = contexts.f_a[shown], contexts.mapped_b[shown]
    for start, end in zip(f_a[:, :2], mapped[:, :2], strict=True):
        ax.plot(*zip(start, end, strict=True), color="grey", lw=0.4, zorder=1)
    ax.scatter(f_a[:, 0], f_a[:, 1], s=8, color=PAPER_BLUE, label=f"seed {a}", zorder=2)
    ax.scatter(mapped[:, 0], mapped[:, 1], s=24, facecolors="none", edgecolors=PAPER_ORANGE,
               label=f"seed {b} mapped", zorder=3)
    r2 = ", ".join(f"{r:.3f}" for r in contexts.r2)
    ax.set_title(f"f on held-out contexts ({len(f_a)} of {len(contexts.f_a)}): seed {b} "
                 f"mapped onto seed {a}\n$R^2$ per dimension: {r2}", fontsize=12)
