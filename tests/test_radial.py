"""The radial data set: the original's labels, class counts and code (spec Part B §1.1)."""

import numpy as np
import pytest

from repdist.data.radial import label_codes, make_radial, radial_labels

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels


def original_label(point, num_classes):
    """Per-point transcription of the original: reflect, arccos of cosine similarity, bins."""
    p = np.asarray(point, dtype=np.float32)
    if p[1] < 0:
        p = -p
    cos = float(p[0]) / max(float(np.linalg.norm(p)), 1e-8)
    theta = np.arccos(np.clip(cos, -1.0, 1.0))
    edges = np.arange(0, np.pi, np.pi / num_classes)
    return int(np.searchsorted(edges, theta, side="right") - 1)


@pytest.mark.parametrize("k", [4, 6, 10, 18])
def test_vectorised_labels_match_the_per_point_rule(k):
    x = make_radial(3000, k, 7).x
    want = np.array([original_label(p, k) for p in x])
    assert (radial_labels(x, k) == want).all()


def test_spec_golden_counts_and_first_points():
    train = make_radial(20_000, 4, 0)
    np.testing.assert_allclose(
        train.x[:3], [[0.37719065, -0.39631459], [1.92126799, 0.31470037], [-1.6070081, 1.08478522]],
        rtol=1e-6,
    )
    assert np.bincount(train.labels).tolist() == [4980, 4927, 5058, 5035]
    assert np.bincount(make_radial(2000, 4, 1).labels).tolist() == [490, 513, 490, 507]
    firsts = {k: make_radial(20_000, k, 0).labels[:3].tolist() for k in (4, 6, 10, 18)}
    assert firsts == {4: [2, 0, 3], 6: [4, 0, 4], 10: [7, 0, 8], 18: [13, 0, 14]}
    assert np.bincount(make_radial(20_000, 18, 0).labels)[:4].tolist() == [1094, 1097, 1130, 1067]


def test_truncated_one_hot_code():
    codes = label_codes(np.arange(4), 4)
    assert codes.shape == (4, 3) and codes.dtype == np.float32
    np.testing.assert_array_equal(codes[:3], np.eye(3))  # exact: one-hot codes
    assert not codes[3].any()
