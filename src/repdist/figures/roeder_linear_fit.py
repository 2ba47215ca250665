"""Roeder et al. (2021) Fig. 2c: one model's first dimension against another's after the optimal
linear map, on held-out inputs, with the fit's R^2: a line when the two are linearly related."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..measures.probe import LinearFit
from .style import PAPER_BLUE, legend_beside, plt


def linear_fit_figure(fits: Sequence[LinearFit], title: str) -> plt.Figure:
    """A panel per fit: a's first dimension against b's mapped, the line y = x dotted."""
    fig, axes = plt.subplots(1, len(fits), figsize=(4.6 * len(fits), 4.6), squeeze=False)
    for ax, fit in zip(axes[0], fits, strict=True):
        a, b = fit.f_a[:, 0], fit.mapped_b[:, 0]
        ax.scatter(a, b, s=4, color=PAPER_BLUE, alpha=0.5, label="held-out inputs")
        ends = np.array([min(a.min(), b.min()), max(a.max(), b.max())])
        ax.plot(ends, ends, color="grey", ls=":", lw=1, label="y = x (the same)")
        per_dim = ", ".join(f"{r:.4f}" for r in fit.r2)
        ax.set_title(f"{fit.title}\nheld-out $R^2$ per dimension: {per_dim}", fontsize=10)
        ax.set(xlabel="model a: $f_1(x)$", ylabel="model b: $(A f(x) + c)_1$")
    legend_beside(axes[0][-1], markerscale=3)
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    return fig
