"""The paper-comparison rows of Fig. 3 (left): the text's words on seeds 0 and 1 (near-equal
test loss, low KL, high d_LLV) stated beside our values, informational (no number in the paper)."""

import pandas as pd

from repdist.experiments.paper_comparison.checks import cifar_checks


def pairs() -> pd.DataFrame:
    return pd.DataFrame({
        "seed_a": [0, 0, 1], "seed_b": [1, 2, 2], "mcca_f_test": [0.6, 0.7, 0.8],
        "kl": [0.02, 0.03, 0.04], "d_llv": [1.4, 1.2, 1.1],
        "test_loss_a": [0.30, 0.30, 0.31], "test_loss_b": [0.31, 0.29, 0.29],
        "test_loss_diff": [-0.01, 0.01, 0.02],
    })


def test_fig3_left_rows_state_the_seed_pair_values():
    checks = {c.claim: c for c in cifar_checks(pairs())}
    loss = checks["Fig. 3 left: seeds 0 and 1, M = 2 reach nearly the same test loss"]
    assert loss.ours == "0.3000 vs 0.3100 (|diff| 0.0100, 3.3%)" and loss.verdict == "informational"
    assert checks["Fig. 3 left: seeds 0 and 1, M = 2: KL is low"].ours == 0.02
    assert checks["Fig. 3 left: seeds 0 and 1, M = 2: d_LLV stays high"].ours == 1.4
    assert checks["Fig. 3 left: m_CCA(seed 0, seed 1), M = 2, test"].ours == 0.6


def test_other_seeds_and_stand_in_data_are_named():
    claims = [c.claim for c in cifar_checks(pairs(), seeds=(1, 2), standin=True)]
    assert "Fig. 3 left: seeds 1 and 2, M = 2 (stand-in data): KL is low" in claims
    assert not [c for c in cifar_checks(pairs(), seeds=(3, 4)) if "seeds 3 and 4" in c.claim]
