"""The original's measures of one pair of models, as its scripts call them: mean KL and d_prob
with its terms, pivot, left-out label and input set (experiments/prob_distances.py), m_SVD of f
over every label set of that pivot and leave-out and m_SVD of g on that input set (the same
script), and m_CCA of f and of g (sklearn's CCA, experiments/kl_to_zero_dissimilar_reps.py),
imported from the authors' source tree at run time. What repdist's `compare()` computes for the
paper's five measures; benchmarks/floors.py times the two side by side on the same models."""

from __future__ import annotations

import contextlib
import io
import itertools
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch

from repdist.io.host import to_host

from .original import put_on_path


@dataclass(frozen=True)
class OriginalMeasures:
    """The authors' two modules of measures."""

    distances: ModuleType  # src/dissimilarity_measures/distribution_distance.py
    representations: ModuleType  # src/dissimilarity_measures/representation_measures.py


def import_original_measures(folder: Path) -> OriginalMeasures:
    put_on_path(folder)
    from src.dissimilarity_measures import distribution_distance, representation_measures

    return OriginalMeasures(distribution_distance, representation_measures)


def original_pair(original: OriginalMeasures, f1: np.ndarray, g1: np.ndarray, f2: np.ndarray,
                  g2: np.ndarray, settings: dict[str, Any]) -> dict[str, Any]:
    """The original's measures of one pair (f: N x M, g: K x M, float32 as its models give
    them); settings: lam, dist_type, sum_or_max, num_samples (config.yaml's `measures`). Its
    prints go nowhere. Its input set is drawn by torch's global generator, as in its runs."""
    dd, rm = original.distances, original.representations
    f1t, g1t, f2t, g2t = (torch.as_tensor(a) for a in (f1, g1, f2, g2))
    num_labels, rep_dim = g1.shape
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            torch.no_grad():
        kl = dd.get_mean_KL_divergence(f1t, g1t, f2t, g2t, device="cpu")
        d, _, _, inputs, pivot, leave_out = dd.d_prob(
            f1t, g1t, f2t, g2t, num_labels, settings["lam"], num_samples=settings["num_samples"],
            device="cpu", dist_type=settings["dist_type"], sum_or_max=settings["sum_or_max"])
        sets = list(itertools.combinations(range(num_labels - 2), rep_dim))
        svd_f = rm.get_m_SVD_for_y_pivot_and_lo(
            rep_dim=rep_dim, y_pivot_idx=to_host(pivot), lo_idx=to_host(leave_out),
            div_rep_indexes=np.arange(num_labels), model1_div_reps=g1t, model2_div_reps=g2t,
            model1_f_reps=f1t, model2_f_reps=f2t, possible_diversity_combinations=sets)
        svd_g = rm.get_mSVD_chosen_input_set(inputs, f1t, f2t, g1t, g2t,
                                             num_classes=num_labels, rep_dim=rep_dim)
        mcca_f = rm.mCCA(f1, f2, rep_dim)[0]
        mcca_g = rm.mCCA(g1, g2, rep_dim)[0]
    return {"kl": float(kl), "d_llv": float(d), "m_svd_f": [float(v) for v in svd_f],
            "m_svd_g": float(svd_g), "d_fg": 1 - min(float(min(svd_f)), float(svd_g)),
            "mcca_f": float(mcca_f), "mcca_g": float(mcca_g)}
