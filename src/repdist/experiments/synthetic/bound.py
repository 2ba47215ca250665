"""How tight the paper's bound d_{f,g} <= 2M d_LLV is on trained models, per M (it applies
where d_LLV < 1/(2M)): quantiles of d_{f,g} / (2M d_LLV), 1 tight and near 0 loose."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

TIGHTNESS_QUANTILES = (0.5, 0.9, 0.99)
TIGHTNESS_COLUMNS = ["M", "configurations", "pairs", "undefined", "pairs_in_range",
                     "violations", "ratio_max", *[f"ratio_q{int(q * 100)}"
                                                   for q in TIGHTNESS_QUANTILES]]


def bound_tightness(pairs_by_m: Mapping[int, tuple[pd.DataFrame, int]]) -> pd.DataFrame:
    """One row per M from (all pairs of that M pooled, number of configurations pooled)."""
    rows = []
    for m, (pairs, n_configs) in sorted(pairs_by_m.items()):
        defined = pairs.dropna(subset=["d_llv", "d_fg"])
        in_range = defined[defined["d_llv"] < 1.0 / (2 * m)]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (in_range["d_fg"] / (2 * m * in_range["d_llv"])).to_numpy()
        ratio = ratio[np.isfinite(ratio)]
        row = {"M": m, "configurations": n_configs, "pairs": len(pairs),
               "undefined": len(pairs) - len(defined), "pairs_in_range": len(in_range),
               "violations": int((in_range["d_fg"] > 2 * m * in_range["d_llv"]).sum()),
               "ratio_max": float(ratio.max()) if len(ratio) else float("nan")}
        for q in TIGHTNESS_QUANTILES:
            row[f"ratio_q{int(q * 100)}"] = float(np.quantile(ratio, q)) if len(ratio) \
                else float("nan")
        rows.append(row)
    return pd.DataFrame(rows, columns=TIGHTNESS_COLUMNS)
