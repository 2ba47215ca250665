"""Per-model representations as tables: what the pairwise measures and figures read.

embeddings: one row per evaluation input (index, label, pred, f_0..f_{M-1});
unembeddings: one row per label (label, g_0..g_{M-1}). Extracted once per model, so pairwise
steps never rerun a network.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def embeddings_frame(f: np.ndarray, labels: np.ndarray, preds: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "index": np.arange(len(f), dtype=np.int64),
            "label": np.asarray(labels, dtype=np.int64),
            "pred": np.asarray(preds, dtype=np.int64),
        }
    )
    for j in range(f.shape[1]):
        frame[f"f_{j}"] = f[:, j]
    return frame


def unembeddings_frame(g: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame({"label": np.arange(len(g), dtype=np.int64)})
    for j in range(g.shape[1]):
        frame[f"g_{j}"] = g[:, j]
    return frame


def columns_of(frame: pd.DataFrame, prefix: str) -> np.ndarray:
    """The representation matrix f_0..f_{M-1} (or g_...) of a frame, in column order."""
    cols = sorted((c for c in frame.columns if c.startswith(prefix)), key=lambda c: int(c[2:]))
    if not cols:
        raise ValueError(f"no '{prefix}*' columns in table with columns {list(frame.columns)}")
    return frame[cols].to_numpy(dtype=np.float64)
