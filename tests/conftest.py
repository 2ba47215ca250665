import numpy as np
import pytest


def random_model(rng, n=300, k=6, m=2, f_scale=2.0, g_scale=1.5):
    """Embeddings and unembeddings with varied log-odds scales, well away from degeneracy."""
    f = rng.normal(size=(n, m)) * f_scale
    g = rng.normal(size=(k, m)) * g_scale
    return f, g


def perturbed(rng, f, g, noise=0.3):
    return f + noise * rng.normal(size=f.shape), g + noise * rng.normal(size=g.shape)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
