"""CIFAR-10 figures: per-seed embeddings/unembeddings (App. F.5), seeds 0 vs 1 (Fig. 3 left),
and test-loss difference vs embedding m_CCA (App. F.4, Fig. 5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .style import PAPER_BLUE, plt


def _colours(labels: np.ndarray) -> np.ndarray:
    return plt.cm.Paired(np.asarray(labels) % 12)


def _class_legend(ax: plt.Axes, class_names: Sequence[str]) -> None:
    """A legend of the classes' colours to the right of `ax`."""
    handles = [plt.Line2D([], [], marker="o", ls="", color=plt.cm.Paired(i), label=name,
                          markersize=8) for i, name in enumerate(class_names)]
    ax.legend(handles=handles, bbox_to_anchor=(1.05, 1), loc="upper left", frameon=False)


def _data_note(standin: bool) -> str:
    return " [STAND-IN DATA, not CIFAR-10]" if standin else ""


def reps_figure(f: np.ndarray, preds: np.ndarray, g: np.ndarray, class_names: Sequence[str],
                seed: int, standin: bool) -> plt.Figure:
    """Left: test embeddings coloured by predicted class; right: the 10 unembeddings."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.4, 4.5))
    left.scatter(f[:, 0], f[:, 1], c=_colours(preds), s=5)
    left.set_title(r"EMBEDDINGS $\mathbf{f}(\cdot)$")
    right.scatter(g[:, 0], g[:, 1], c=_colours(np.arange(len(g))), s=150)
    right.set_title(r"UNEMBEDDINGS $\mathbf{g}(\cdot)$")
    _class_legend(right, class_names)
    fig.suptitle(f"ResNet-18, M = 2, seed {seed}{_data_note(standin)}", fontsize=12)
    fig.tight_layout()
    return fig


def seed_comparison(a: pd.DataFrame, b: pd.DataFrame, mcca: float, class_names: Sequence[str],
                    labels: tuple[str, str], standin: bool) -> plt.Figure:
    """Fig. 3 (left): two models' test embeddings side by side (labelled e.g. "seed 0"), each
    coloured by its own predictions, their m_CCA (pairs.py::embeddings_mcca) in the title."""
    from ..io.representations import columns_of

    fig, (left, right) = plt.subplots(1, 2, figsize=(10.4, 4.6), sharey=True)
    for ax, frame, prime, label in ((left, a, "", labels[0]), (right, b, "'", labels[1])):
        f = columns_of(frame, "f_")
        ax.scatter(f[:, 0], f[:, 1], c=_colours(frame["pred"].to_numpy()), s=5)
        ax.set_xlabel(rf"EMBEDDINGS $\mathbf{{f}}{prime}(\cdot)$ ({label})")
    _class_legend(right, class_names)
    fig.suptitle(rf"$m_{{\mathrm{{CCA}}}}$ = {mcca:.3f} on the test set{_data_note(standin)}",
                 fontsize=12)
    fig.tight_layout()
    return fig


LOSS_LABELS = {"test_loss_diff": "test loss difference",
               "test_loss_eval_diff": "test loss difference (eval mode)"}


def loss_diff_figure(pairs_by_dim: Mapping[int, pd.DataFrame], standin: bool,
                     loss_column: str = "test_loss_diff") -> plt.Figure:
    """One panel per M: x = test-embedding m_CCA, y = |test-loss difference| of each pair
    (`loss_column`: the protocol's test losses, or the eval-mode ones)."""
    dims = sorted(pairs_by_dim)
    fig, axes = plt.subplots(1, len(dims), figsize=(13, 4.6), sharex=True, sharey=True,
                             squeeze=False)
    for ax, m in zip(axes[0], dims, strict=True):
        pairs = pairs_by_dim[m]
        valid = pairs.dropna(subset=["mcca_f_test", loss_column])
        ax.scatter(valid["mcca_f_test"], valid[loss_column], s=12, color=PAPER_BLUE)
        note = f" ({len(pairs) - len(valid)} undefined left out)" if len(valid) < len(pairs) else ""
        ax.set(title=f"{m}{note}", xlabel="embedding mCCA")
    axes[0][0].set_ylabel(LOSS_LABELS[loss_column])
    if standin:
        fig.suptitle(_data_note(True).strip(" []"), fontsize=12)
    fig.tight_layout()
    return fig
