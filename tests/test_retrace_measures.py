"""repdist_retrace.measures without the authors' code: a source tree of the same layout whose
functions record what they are called with. The original's pair is called as its scripts call
it: d_prob's pivot, left-out label and input set go to the m_SVD functions, m_SVD of f runs over
every C(K-2, M) label set, m_CCA over M components, and its prints go nowhere."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from repdist_retrace.measures import import_original_measures, original_pair

DISTANCES = '''
import torch
CALLS = {}
def get_mean_KL_divergence(f1, g1, f2, g2, device):
    print("mean KL")
    CALLS["kl"] = (tuple(f1.shape), tuple(g1.shape), device)
    return torch.tensor(0.25)
def d_prob(f1, g1, f2, g2, num_classes, weight, num_samples, device, dist_type, sum_or_max):
    print("t1: ...")
    CALLS["d_prob"] = (num_classes, weight, num_samples, dist_type, sum_or_max)
    return torch.tensor(0.5), 0.1, 0.2, torch.tensor([3, 1, 4]), torch.tensor(2), torch.tensor(5)
'''
REPRESENTATIONS = '''
CALLS = {}
def get_m_SVD_for_y_pivot_and_lo(rep_dim, y_pivot_idx, lo_idx, div_rep_indexes,
                                 model1_div_reps, model2_div_reps, model1_f_reps,
                                 model2_f_reps, possible_diversity_combinations):
    CALLS["svd_f"] = (rep_dim, int(y_pivot_idx), int(lo_idx), len(div_rep_indexes),
                      list(possible_diversity_combinations))
    return [0.9, 0.8]
def get_mSVD_chosen_input_set(div_input_idxs, f1, f2, g1, g2, num_classes, rep_dim):
    CALLS["svd_g"] = ([int(i) for i in div_input_idxs], num_classes, rep_dim)
    return 0.7
def mCCA(rep1, rep2, n_components):
    CALLS.setdefault("mcca", []).append((rep1.shape, n_components))
    return 0.6, None, None, 0.9
'''


@pytest.fixture
def their_tree(tmp_path, monkeypatch):
    folder = tmp_path / "authors-code" / "src" / "dissimilarity_measures"
    folder.mkdir(parents=True)
    (folder.parent / "__init__.py").write_text("")
    (folder / "__init__.py").write_text("")
    (folder / "distribution_distance.py").write_text(DISTANCES)
    (folder / "representation_measures.py").write_text(REPRESENTATIONS)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the tree leaves with the test
    for name in [m for m in sys.modules if m == "src" or m.startswith("src.")]:
        monkeypatch.delitem(sys.modules, name)
    yield tmp_path / "authors-code"
    for name in [m for m in sys.modules if m == "src" or m.startswith("src.")]:
        sys.modules.pop(name)


def test_the_original_pair_is_called_as_its_scripts_call_it(their_tree, capsys):
    rng = np.random.default_rng(0)
    n, k, m = 50, 8, 2
    f1, f2 = rng.normal(size=(n, m)).astype(np.float32), rng.normal(size=(n, m)).astype(np.float32)
    g1, g2 = rng.normal(size=(k, m)).astype(np.float32), rng.normal(size=(k, m)).astype(np.float32)
    code = import_original_measures(their_tree)
    settings = {"lam": 1e-5, "dist_type": "max", "sum_or_max": "max", "num_samples": 7}
    result = original_pair(code, f1, g1, f2, g2, settings)
    assert capsys.readouterr().out == ""
    dd, rm = code.distances.CALLS, code.representations.CALLS
    assert dd["kl"] == ((n, m), (k, m), "cpu")
    assert dd["d_prob"] == (k, 1e-5, 7, "max", "max")
    rep_dim, pivot, leave_out, labels, sets = rm["svd_f"]
    assert (rep_dim, pivot, leave_out, labels) == (m, 2, 5, k)
    assert len(sets) == math.comb(k - 2, m) and sets[0] == (0, 1)
    assert rm["svd_g"] == ([3, 1, 4], k, m)
    assert rm["mcca"] == [((n, m), m), ((k, m), m)]
    assert result == {"kl": 0.25, "d_llv": 0.5, "m_svd_f": [0.9, 0.8], "m_svd_g": 0.7,
                      "d_fg": pytest.approx(0.3), "mcca_f": 0.6, "mcca_g": 0.6}
