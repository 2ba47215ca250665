"""Roeder et al. (2021) Fig. 2b and 2c as tables, without torch: the mean curves of
classifier.py's snapshots, where they plateau, and the held-out R^2 of Fig. 2c's fits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ...measures.intervals import seed_bootstrap_interval
from ...measures.probe import LinearFit

CURVE_MEASURES = ("mcca_f", "d_llv", "d_fg")
NULL_MEANS = ("mcca_f_tau", "mcca_f_calibrated")  # config null.snapshot_measures


def snapshot_curves(snapshots: Mapping[int, pd.DataFrame]) -> pd.DataFrame:
    """Per variant and step: mean, sd (ddof 0) and count over seed pairs of CURVE_MEASURES
    (NaN pairs left out), mean m_CCA's 95 % seed-bootstrap interval, and the null's means."""
    frames = []
    for noise_dims, table in sorted(snapshots.items()):
        by_step = table.groupby("step")
        grouped = by_step[list(CURVE_MEASURES)]
        curve = grouped.mean().add_suffix("_mean").join(grouped.std(ddof=0).add_suffix("_sd"))
        curve = curve.join(grouped.count()[["mcca_f"]].rename(columns={"mcca_f": "pairs"}))
        intervals = {step: seed_bootstrap_interval(rows["seed_a"], rows["seed_b"],
                                                   rows["mcca_f"])
                     for step, rows in by_step}
        curve["mcca_f_ci_low"] = [intervals[step][0] for step in curve.index]
        curve["mcca_f_ci_high"] = [intervals[step][1] for step in curve.index]
        for column in NULL_MEANS:
            curve[f"{column}_mean"] = by_step[column].mean() \
                if column in table else np.nan
        frames.append(curve.reset_index().assign(noise_dims=int(noise_dims)))
    columns = ["noise_dims", "step", "pairs"] + [f"{m}_{s}" for m in CURVE_MEASURES
                                                 for s in ("mean", "sd")] + [
        "mcca_f_ci_low", "mcca_f_ci_high", *(f"{c}_mean" for c in NULL_MEANS)]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(
        columns=columns)


def first_near_max_step(curve: pd.DataFrame, within: float) -> int | None:
    """The first step whose mean m_CCA is within `within` of its maximum (None: no curve)."""
    if curve.empty:
        return None
    values = curve.sort_values("step")
    near = (values["mcca_f_mean"] >= values["mcca_f_mean"].max() - within).to_numpy()
    return int(values["step"].to_numpy()[np.argmax(near)])


def linear_fit_table(fits: Sequence[LinearFit]) -> pd.DataFrame:
    """One row per fit and dimension of model a: its held-out R^2."""
    return pd.DataFrame([{"pair": fit.title, "dimension": d + 1, "r2": float(r)}
                         for fit in fits for d, r in enumerate(fit.r2)],
                        columns=["pair", "dimension", "r2"])
