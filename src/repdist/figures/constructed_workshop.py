"""The workshop example's two embeddings side by side (its Figs. 2 and 3), and how the lengths
were chosen (its App. E, Fig. 4)."""

from __future__ import annotations

import numpy as np

from ..models.constructed import PRIME_ANGLES, STAR_ANGLES, WorkshopModels, correct_label_loglik
from .style import legend_beside, line_key, plt


def workshop_figure(models: WorkshopModels, mcca: float) -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    for ax, f, name in ((axes[0], models.f_prime, "f'(x), model '"),
                        (axes[1], models.f_star, "f*(x), model *")):
        ax.scatter(f[:, 0], f[:, 1], c=plt.cm.Paired(models.labels * 2 + 1), s=3)
        ax.set(title=name, aspect="equal")
    fig.suptitle(f"Workshop example: near-zero loss for both, m_CCA(f', f*) = {mcca:.3f}",
                 fontsize=12)
    fig.tight_layout()
    return fig


# (name, unembedding angles, the largest angle of f from its label's g, the chosen ||g||)
LENGTH_MODELS = (("model '", PRIME_ANGLES, np.pi / 128, 1100.0),
                 ("model *", STAR_ANGLES, np.pi / 8, 100.0))


def workshop_lengths_figure(v: np.ndarray | None = None) -> plt.Figure:
    """App. E, Fig. 4: -log p(correct label | x) against v = ||f|| ||g|| at each model's angles,
    f on its label's g and at the largest offset towards a neighbour, for an end label (y0) and
    a middle one (y1); the chosen ||g|| marked (v there for ||f|| = 1, the shortest f)."""
    v = np.geomspace(1, 1e4, 400) if v is None else v
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), sharey=True)
    for ax, (name, angles, offset, length) in zip(axes, LENGTH_MODELS, strict=True):
        for label, colour in ((0, "#002347"), (1, "#FF5003")):
            towards = 1.0 if label == 0 else -1.0  # to the nearest other g: above y0, below y1
            for off, style in ((0.0, "-"), (towards * offset, "--")):
                ax.loglog(v, -correct_label_loglik(v, angles, label, off), style, color=colour)
        ax.axvline(length, color="grey", lw=1)
        ax.text(length, 1e-50, rf"$\|g\|$ = {length:g} ", color="grey", ha="right")
        ax.set(ylim=(1e-60, 10), title=name, xlabel=r"$v = \|f(x)\|\,\|g(y)\|$")
    axes[0].set_ylabel(r"$-\log p(y \mid x)$, correct label")
    legend_beside(axes[-1], [
        line_key("y0 (an end label)", "#002347"), line_key("y1 (a middle label)", "#FF5003"),
        line_key("f at g(y)"), line_key("f at the largest offset", style="--"),
        line_key(r"the chosen $\|g\|$", "grey", lw=1)])
    fig.suptitle("Workshop App. E: the loss falls without bound as the lengths grow", fontsize=12)
    fig.tight_layout()
    return fig
