"""Roeder et al.'s simulation data: labels by angle over the full circle, noise columns that
change nothing but the input's width."""

import numpy as np
import pytest

from repdist.data.radial import radial_labels
from repdist.data.roeder import angle_labels, make_roeder


def test_wedges_of_the_full_circle_by_hand():
    # K = 4: quadrants counter-clockwise from the positive x1 axis
    x = np.array([[1.0, 0.1], [-0.1, 1.0], [-1.0, -0.1], [0.1, -1.0], [1.0, -1e-9]])
    assert angle_labels(x, 4).tolist() == [0, 1, 2, 3, 3]


def test_opposite_points_are_different_classes_unlike_the_radial_set():
    x = make_roeder(1000, seed=0, num_classes=18).x
    assert np.all(angle_labels(-x, 18) == (angle_labels(x, 18) + 9) % 18)
    assert np.all(radial_labels(-x, 9) == radial_labels(x, 9))  # the NeurIPS set: the same


def test_rotation_by_one_wedge_shifts_every_label_by_one():
    k = 18
    x = make_roeder(2000, seed=1, num_classes=k).x.astype(np.float64)
    t = 2 * np.pi / k
    rotated = x[:, :2] @ np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]])
    inside = np.abs(np.mod(np.arctan2(x[:, 1], x[:, 0]), t) - t / 2) < t / 2 - 1e-9
    shifted = angle_labels(rotated, k)
    assert np.all(shifted[inside] == (angle_labels(x, k)[inside] + 1) % k)


def test_every_class_is_about_equally_likely():
    data = make_roeder(36_000, seed=2)
    counts = np.bincount(data.labels, minlength=18)
    assert data.num_classes == 18 and counts.min() > 0.9 * 2000 and counts.max() < 1.1 * 2000


def test_noise_columns_widen_the_input_and_leave_signal_and_labels_alone():
    plain, noisy = make_roeder(500, seed=3), make_roeder(500, seed=3, noise_dims=20)
    assert plain.x.shape == (500, 2) and noisy.x.shape == (500, 22)
    assert noisy.x.dtype == np.float32
    np.testing.assert_array_equal(noisy.x[:, :2], plain.x)  # exact: the same seeded draw
    np.testing.assert_array_equal(noisy.labels, plain.labels)  # exact: integers
    assert 2.7 < noisy.x[:, 2:].std() < 3.3  # N(0, 3^2), as the signal
    assert not np.array_equal(make_roeder(500, seed=4).x, plain.x)


@pytest.mark.parametrize("kwargs", [{"num_classes": 1}, {"noise_dims": -1}])
def test_bad_arguments_are_refused(kwargs):
    with pytest.raises(ValueError):
        make_roeder(10, seed=0, **kwargs)
