"""m_CCA over the directions a representation varies in (issue 42): a rank tolerance that fits
the precision f and g were computed in (measures/cca.py), the mean over min(rank) components,
and how many in mcca_f_components / mcca_g_components. A final LayerNorm in float32 leaves f
in M - 1 directions plus float32 rounding; float64's tolerance counted that rounding as the
M-th canonical correlation."""

import numpy as np
import pytest
import torch

from conftest import perturbed, random_model
from repdist.measures import DegenerateRepresentationWarning, compare, mean_cca
from repdist.measures.cca import (
    EPS,
    canonical_correlations,
    cca_components,
    detect_precision,
    mean_cca_from_bases,
    orthonormal_basis,
    spectrum,
)

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels

N, K, M = 600, 40, 8


def layer_norm_f32(x: np.ndarray, seed: int) -> np.ndarray:
    """A float32 nn.LayerNorm (random affine) applied to x, returned as float64."""
    torch.manual_seed(seed)
    layer = torch.nn.LayerNorm(x.shape[1])
    with torch.no_grad():
        layer.weight.uniform_(0.5, 1.5)
        layer.bias.normal_()
        return layer(torch.as_tensor(x, dtype=torch.float32)).double().numpy()


def varying_part(x: np.ndarray, rank: int) -> np.ndarray:
    """x centred and projected on its `rank` leading directions (the ones that vary)."""
    centred = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ vt[:rank].T


def cca_over(x: np.ndarray, y: np.ndarray) -> float:
    """Plain m_CCA over every direction of two full-rank (float64-exact) representations."""
    bx, by = orthonormal_basis(x, rtol=1e-10), orthonormal_basis(y, rtol=1e-10)
    assert bx.shape[1] == x.shape[1] and by.shape[1] == y.shape[1]
    return float(canonical_correlations(bx, by).mean())


@pytest.fixture(scope="module")
def layer_normed():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(N, M)) * rng.uniform(0.5, 3.0, size=M)
    f1 = layer_norm_f32(x, 0)
    f2 = layer_norm_f32(x + 0.7 * rng.normal(size=(N, M)), 1)
    g1, g2 = random_model(rng, n=N, k=K, m=M)[1], random_model(rng, n=N, k=K, m=M)[1]
    return f1, g1, f2, g2


def test_precision_is_read_from_the_values():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 3))
    assert detect_precision(x) == "float64"
    assert detect_precision(x.astype(np.float32)) == "float32"
    assert detect_precision(x.astype(np.float32).astype(np.float64)) == "float32"
    widened = x.astype(np.float32).astype(np.float64)
    widened[7, 1] += 1e-12  # one value off the float32 grid: computed in float64
    assert detect_precision(widened) == "float64"
    with_nan = x.astype(np.float32).astype(np.float64)
    with_nan[0, 0] = np.nan
    assert detect_precision(with_nan) == "float32"


def test_an_unknown_precision_is_refused():
    from repdist.measures import CompareSettings

    with pytest.raises(ValueError, match="precision must be one of"):
        CompareSettings(precision="float8")


def test_a_float32_layer_norm_f_has_rank_m_minus_1_and_m_cca_averages_over_it(layer_normed):
    f1, g1, f2, g2 = layer_normed
    s = spectrum(f1)
    assert s.detected == "float32"
    # the null direction is float32 rounding, well under the tolerance; the rest well above
    assert s.s[-1] < s.tolerance() / 10 and s.s[-2] > 1e3 * s.tolerance()
    assert s.s[-1] > s.tolerance("float64")  # which float64's tolerance counted as a direction
    with pytest.warns(DegenerateRepresentationWarning,
                      match=f"mean over {M - 1} of {M} components: the ranks at float32 "
                            f"precision are {M - 1} \\(model 1\\) and {M - 1} \\(model 2\\)"):
        r = compare(f1, g1, f2, g2, measures="mcca_f,mcca_g")
    assert r["mcca_f_components"] == M - 1 and r["mcca_g_components"] == M
    want = cca_over(varying_part(f1, M - 1), varying_part(f2, M - 1))
    assert r["mcca_f"] == pytest.approx(want, rel=1e-9)
    assert mean_cca(f1, f2) == pytest.approx(want, rel=1e-9)  # the function, by default
    assert "LayerNorm" in r["warning"] and "m_CCA(g)" not in r["warning"]
    # told the values are float64, the rounding direction is counted: M "correlations"
    forced = compare(f1, g1, f2, g2, measures="mcca_f", precision="float64")
    assert forced["mcca_f_components"] == M and forced["warning"] == ""
    assert forced["mcca_f"] < r["mcca_f"] - 0.05


def test_a_float64_representation_of_full_rank_keeps_every_component():
    rng = np.random.default_rng(1)
    f1, g1 = random_model(rng, n=N, k=K, m=M)
    f2, g2 = perturbed(rng, f1, g1)
    f2[:, 3] *= 1e-5  # a small but real direction: float64's rounding is 1e-16
    for method in ("exact", "low_rank"):
        r = compare(f1, g1, f2, g2, measures="mcca_f,mcca_g", method=method)
        assert r["mcca_f_components"] == M and r["mcca_g_components"] == M
        assert r["warning"] == ""
        assert r["mcca_f"] == pytest.approx(cca_over(f1, f2), rel=1e-10)
    # the same values rounded to float32 are float32's: that direction stays above its rounding
    f32 = f2.astype(np.float32).astype(np.float64)
    assert compare(f1, g1, f32, g2, measures="mcca_f")["mcca_f_components"] == M


def test_the_low_rank_path_takes_the_same_ranks_for_f_and_for_g(layer_normed):
    """At vocabulary scale m_CCA(g) comes from covariances (covariance_cca_over_rank): a g of
    rank M - 1 plus float32 rounding has M - 1 components there as in the SVD of g; f's basis
    is the exact path's."""
    f1, g1, f2, g2 = layer_normed
    rng = np.random.default_rng(2)
    big_k = 1500  # above LOW_RANK_ABOVE_LABELS: method auto takes the low-rank path
    g1 = layer_norm_f32(rng.normal(size=(big_k, M)), 2)
    g2 = layer_norm_f32(rng.normal(size=(big_k, M)) + 0.1 * g1, 3)
    exact = compare(f1, g1, f2, g2, measures="mcca_f,mcca_g", method="exact")
    with pytest.warns(DegenerateRepresentationWarning, match="m_CCA\\(g\\): mean over 7 of 8"):
        low = compare(f1, g1, f2, g2, measures="mcca_f,mcca_g")
    for key in ("mcca_f", "mcca_g"):
        assert low[f"{key}_components"] == exact[f"{key}_components"] == M - 1
        assert low[key] == pytest.approx(exact[key], rel=1e-9)
    want = cca_over(varying_part(g1, M - 1), varying_part(g2, M - 1))
    assert low["mcca_g"] == pytest.approx(want, rel=1e-9)
    # a g kept in float16 carries float16's rounding (~1e-4 of its scale: above the 1e-6 that
    # COVARIANCE_RTOL resolves); its values are float32 values too, so "auto" reads float32
    # and counts that rounding; precision="float16" says what it was, on either path
    h1, h2 = (torch.as_tensor(g).half().double().numpy() for g in (g1, g2))
    assert compare(f1, h1, f2, h2, measures="mcca_g")["mcca_g_components"] == M
    for method in ("exact", "low_rank"):
        r = compare(f1, h1, f2, h2, measures="mcca_g", method=method, precision="float16")
        assert r["mcca_g_components"] == M - 1, method


def test_a_constant_representation_stays_nan_with_zero_components():
    rng = np.random.default_rng(3)
    f1, g1 = random_model(rng, n=N, k=K, m=M)
    with pytest.warns(DegenerateRepresentationWarning, match="rank-deficient representation"):
        r = compare(np.ones_like(f1), g1, f1, g1, measures="mcca_f")
    assert np.isnan(r["mcca_f"]) and r["mcca_f_components"] == 0


def test_the_paper_m2_models_keep_their_numbers():
    """The paper's models (M = 2, float32 MLPs; here untrained ones of the authors' init, which
    tests/test_authors.py checks bit for bit): m_CCA under the new tolerance equals m_CCA under
    the old one (numpy's s_max max(N, M) eps64), as on the authors' 80 trained pairs (0 of 80
    changed; the commit message has the measurement)."""
    from repdist.data.radial import label_codes, make_radial
    from repdist.models.extract import extract
    from repdist.models.mlp import build_synthetic_model

    k = 6
    test = make_radial(2000, k, 1)
    models = [extract(build_synthetic_model(seed, k, 16, 2, 0.0, 0.0), test.x,
                      label_codes(np.arange(k), k)) for seed in (0, 1, 2)]
    for (f1, g1), (f2, g2) in ((models[0], models[1]), (models[1], models[2])):
        assert detect_precision(f1) == detect_precision(g1) == "float32"
        r = compare(f1, g1, f2, g2, measures="mcca_f,mcca_g")
        for side, x, y in (("f", f1, f2), ("g", g1, g2)):
            old = [orthonormal_basis(a, rtol=max(a.shape) * EPS["float64"]) for a in (x, y)]
            before, _ = mean_cca_from_bases(*old, cca_components(x, y, 2))
            assert r[f"mcca_{side}"] == before and r[f"mcca_{side}_components"] == 2
        assert r["warning"] == ""
