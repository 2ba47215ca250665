"""Measures beyond the paper: invariances and small hand-computed cases."""

import numpy as np
import pytest

from repdist.measures.extra import (
    d_logit,
    knn_indices,
    linear_cka,
    mutual_knn,
    mutual_knn_from_indices,
    svcca,
)
from repdist.measures.loglik import log_likelihoods

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels


def test_linear_cka_invariances_and_range(rng):
    x = rng.normal(size=(300, 3))
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    assert linear_cka(x, 2.5 * x @ q + 7) == pytest.approx(1.0, abs=1e-12)  # orthogonal + scale
    y = rng.normal(size=(300, 3))
    assert 0 <= linear_cka(x, y) < 0.1
    stretched = x * np.array([10.0, 1.0, 1.0])  # not orthogonal: CKA is not GL-invariant
    assert linear_cka(x, stretched) < 0.99


def test_linear_cka_hand_computed():
    x = np.array([[1.0], [2.0], [3.0]])
    y = np.array([[1.0], [3.0], [2.0]])
    # centred: x = (-1, 0, 1), y = (-1, 1, 0): <x,y>^2 / (|x|^2 |y|^2) = 1 / 4
    assert linear_cka(x, y) == pytest.approx(0.25)


def test_svcca_is_invariant_to_invertible_maps(rng):
    x = rng.normal(size=(400, 3))
    a = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    assert svcca(x, x @ a - 1, k=3) == pytest.approx(1.0, abs=1e-9)
    assert svcca(x, rng.normal(size=(400, 3)), k=3) < 0.3


def test_svcca_drops_low_variance_directions(rng):
    signal = rng.normal(size=(500, 2))
    x = np.hstack([signal, 1e-4 * rng.normal(size=(500, 1))])  # 3rd PC carries no variance
    y = np.hstack([signal @ np.array([[2.0, 1.0], [0.0, 1.0]]), rng.normal(size=(500, 1)) * 1e-4])
    assert svcca(x, y) == pytest.approx(1.0, abs=1e-6)  # 99% variance keeps 2 PCs


def test_knn_hand_computed():
    # unit circle at angles 0, 10, 20, 180 degrees: nearest of 0 deg is 10 deg, then 20
    ang = np.deg2rad([0.0, 10.0, 20.0, 180.0])
    x = np.stack([np.cos(ang), np.sin(ang)], 1)
    nn = knn_indices(x, k=2)
    assert nn[0].tolist() == [1, 2] and nn[1].tolist()[0] in (0, 2) and nn[3].tolist()[0] == 2


def test_knn_tree_and_blockwise_agree(rng):
    from repdist.measures.extra import unit_rows, knn_indices_blockwise

    x = rng.normal(size=(257, 4))
    tree = knn_indices(x, 5)
    # exact: integers
    np.testing.assert_array_equal(knn_indices_blockwise(unit_rows(x), 5, block=16), tree)
    # exact: integers
    np.testing.assert_array_equal(knn_indices_blockwise(unit_rows(x), 5, block=10_000), tree)
    wide = rng.normal(size=(120, 40))  # above the k-d tree's dimension: blockwise path
    assert knn_indices(wide, 3).shape == (120, 3)


def test_mutual_knn_invariances(rng):
    x = rng.normal(size=(300, 3))
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    assert mutual_knn(x, 3 * x @ q) == 1.0  # rotations and scale keep cosine neighbours
    assert mutual_knn(x, rng.normal(size=(300, 3))) < 0.2
    assert mutual_knn_from_indices(np.array([[1, 2]]), np.array([[2, 3]])) == 0.5


def test_d_logit_zero_for_equal_distributions_and_shift_invariant(rng):
    f, g = rng.normal(size=(200, 2)), rng.normal(size=(6, 2))
    a = rng.normal(size=(2, 2)) + 2 * np.eye(2)
    same = log_likelihoods(f @ a.T, g @ np.linalg.inv(a) + 3.0)  # same p(y|x)
    assert d_logit(log_likelihoods(f, g), same) == pytest.approx(0.0, abs=1e-9)
    assert d_logit(log_likelihoods(f, g), log_likelihoods(f, -g)) > 1.0


def test_d_logit_hand_computed():
    l1 = np.log(np.array([[0.5, 0.5]]))
    l2 = np.log(np.array([[0.2, 0.8]]))
    diff = np.log(0.2) - np.log(0.8)  # centred logs are (+-d/2) for two labels
    assert d_logit(l1, l2) == pytest.approx(np.sqrt(2 * (diff / 2) ** 2))


def test_compare_extra_measures_equal_the_plain_functions(rng):
    from repdist.measures import compare
    from repdist.measures.extra import d_logit as plain_d_logit

    f, g = rng.normal(size=(300, 3)), rng.normal(size=(7, 3))
    f2, g2 = f @ rng.normal(size=(3, 3)) + 0.3 * rng.normal(size=f.shape), g + 0.2
    r = compare(f, g, f2, g2, num_samples=30)
    assert r["cka_f"] == pytest.approx(linear_cka(f, f2), rel=1e-12)
    assert r["svcca_f"] == pytest.approx(svcca(f, f2), rel=1e-9)
    assert r["mutual_knn_f"] == pytest.approx(mutual_knn(f, f2), rel=1e-12)
    assert r["d_logit"] == pytest.approx(
        plain_d_logit(log_likelihoods(f, g), log_likelihoods(f2, g2)), rel=1e-12)
