"""Our permutation null against Gröger, Wen and Brbić's own code (`calibrated-similarity` on
PyPI, a test-only dependency): on the same permutations (their `perm_fn` fed ours), their
`calibrate` and `calibrate_layers(agg="max")` give the tau, p and calibrated score that
compare(..., null=...) and null.layers_null give, for CKA, m_CCA and mutual k-NN, to their
float32 rounding."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
calibration = pytest.importorskip("calibrated_similarity")

from repdist.io.host import to_host  # noqa: E402
from repdist.measures import compare  # noqa: E402
from repdist.measures.null import NullSettings, layers_null, permutations  # noqa: E402

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels

K = 49


def their_perms(n: int, seed: int):
    """Their perm_fn, handing out our draws in our order."""
    orders, _, _ = permutations(n, K, seed)
    return lambda n_, device: torch.as_tensor(next(orders), device=device)


def measure(name: str):
    """Their `sim`: one of our measures of two representations of the same inputs (g: 4 unit
    vectors, unused by these f-side measures)."""
    def sim(x, y):
        return compare(to_host(x, np.float64), np.eye(4, x.shape[1]), to_host(y, np.float64),
                       np.eye(4, y.shape[1]), measures=[name])[name]
    return sim


@pytest.mark.parametrize("name", ["cka_f", "mcca_f", "mutual_knn_f"])
def test_calibrate_gives_our_tau_p_and_calibrated_score(name):
    rng = np.random.default_rng(7)
    n = 80
    x = rng.normal(size=(n, 3))
    y = 0.3 * x @ rng.normal(size=(3, 3)) + rng.normal(size=(n, 3))  # related, not equal
    seed = 13
    ours = compare(x, np.eye(3), y, np.eye(3), measures=[name],
                   null={"permutations": K, "measures": [name], "seed": seed})
    score, p, tau = calibration.calibrate(torch.as_tensor(x), torch.as_tensor(y), measure(name),
                                          K=K, alpha=0.05, perm_fn=their_perms(n, seed))
    assert ours[f"{name}_tau"] == pytest.approx(float(tau), rel=1e-6, abs=1e-7)
    assert ours[f"{name}_p"] == pytest.approx(float(p), rel=1e-6)
    assert ours[f"{name}_calibrated"] == pytest.approx(float(score), rel=1e-5, abs=1e-6)
    assert 0 < ours[f"{name}_calibrated"] < 1 or ours[f"{name}_p"] > 0.05  # a case, not 0 or 1


def test_calibrate_layers_max_gives_our_layer_maximum():
    rng = np.random.default_rng(9)
    n = 60
    xs = [rng.normal(size=(n, 3)) for _ in range(3)]
    ys = [0.4 * xs[1] + rng.normal(size=(n, 3)), rng.normal(size=(n, 2))]
    sim = measure("cka_f")

    def table(order):
        return np.array([[sim(torch.as_tensor(x), torch.as_tensor(y if order is None
                                                                   else y[order]))
                          for y in ys] for x in xs])

    best, tau, p, cal = layers_null(table, n, NullSettings(permutations=K, seed=3))
    t_cal, t_p, t_tau = calibration.calibrate_layers(
        [torch.as_tensor(x) for x in xs], [torch.as_tensor(y) for y in ys], sim, agg="max",
        K=K, alpha=0.05, perm_fn=their_perms(n, 3))
    assert tau == pytest.approx(float(t_tau), rel=1e-6)
    assert p == pytest.approx(float(t_p), rel=1e-6)
    assert cal == pytest.approx(float(t_cal), rel=1e-5, abs=1e-6)
