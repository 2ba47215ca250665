"""The columns every pairs table shares, taken from one `compare` result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

DISTRIBUTION_COLUMNS = ["kl", "d_llv", "t1", "t2", "t3", "t4", "y_pivot", "y_leave_out",
                        "input_set", "m_svd_f_min", "m_svd_g", "d_fg"]
EXTRA_COLUMNS = ["cka_f", "svcca_f", "mutual_knn_f", "d_logit"]


def distribution_fields(result: Mapping[str, Any]) -> dict[str, Any]:
    """KL, d_LLV and its terms, the chosen pivot/input set, m_SVD's and d_{f,g}."""
    fields = {k: result[k] for k in DISTRIBUTION_COLUMNS if k in result}
    fields["m_svd_f_min"] = float(np.min(result["m_svd_f"]))
    return {k: fields[k] for k in DISTRIBUTION_COLUMNS}


def extra_fields(result: Mapping[str, Any]) -> dict[str, Any]:
    """The measures beyond the paper (linear CKA, SVCCA, mutual k-NN, d_logit)."""
    return {k: result[k] for k in EXTRA_COLUMNS}
