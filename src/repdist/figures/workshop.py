"""The workshop example's two embeddings side by side (its Figs. 2 and 3)."""

from __future__ import annotations

from ..models.constructed import WorkshopModels
from .style import plt


def workshop_figure(models: WorkshopModels, mcca: float) -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    for ax, f, name in ((axes[0], models.f_prime, "f'(x), model '"),
                        (axes[1], models.f_star, "f*(x), model *")):
        ax.scatter(f[:, 0], f[:, 1], c=plt.cm.Paired(models.labels * 2 + 1), s=3)
        ax.set_title(name)
        ax.set_aspect("equal")
    fig.suptitle(f"Workshop example: near-zero loss for both, m_CCA(f', f*) = {mcca:.3f}",
                 fontsize=12)
    fig.tight_layout()
    return fig
