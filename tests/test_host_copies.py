"""Values leave the device only through repdist.io.host.to_host: the guard that makes a CPU run
fail where a GPU run would (np.asarray of a CUDA tensor raises), shown on the loss log of the
first GPU run, which stopped at step 0; training and extraction pass under it."""

import numpy as np
import pandas as pd
import pytest
import torch

from repdist.data.radial import label_codes, make_radial
from repdist.io.host import ImplicitHostCopy, host_copies_guarded, to_host
from repdist.models.extract import extract
from repdist.models.mlp import build_synthetic_model
from repdist.models.stacked import StackedModelClass
from repdist.training import loop
from repdist.training.loop import RunOptions, TrainData, train

from conftest import train_config


def old_as_list(t):
    """training/loop.py's `_as_list` as the first GPU run met it (before this guard)."""
    return [float(v) for v in np.atleast_1d(np.asarray(t))]


@pytest.fixture(scope="module")
def data():
    train_d, test_d = make_radial(400, 4, 0), make_radial(100, 4, 1)
    return TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels,
                     label_codes(np.arange(4), 4))


def stack():
    return StackedModelClass([build_synthetic_model(s, 4, 16, 2, 0, 0) for s in (0, 1)])


def test_the_guard_refuses_what_numpy_does_implicitly_and_restores_torch():
    t = torch.arange(3.0)
    before = {name: torch.Tensor.__dict__.get(name) for name in ("__array__", "numpy")}
    with host_copies_guarded():
        for convert in (np.asarray, pd.Series, torch.Tensor.numpy, old_as_list):
            with pytest.raises(ImplicitHostCopy):
                convert(t)
        np.testing.assert_array_equal(to_host(t), [0.0, 1.0, 2.0])  # exact: a copy
        half = to_host(torch.ones(2, dtype=torch.bfloat16), np.float64)
        assert half.dtype == np.float64 and half.tolist() == [1.0, 1.0]
        assert to_host([1, 2]).tolist() == [1, 2]  # not a tensor: numpy's own conversion
        assert float(t.sum()) == 3.0 and t.tolist() == [0.0, 1.0, 2.0]  # syncs torch does itself
    with host_copies_guarded(scope="/no/such/folder"):  # outside its scope: numpy as usual
        assert np.asarray(t).tolist() == t.numpy().tolist() == [0.0, 1.0, 2.0]
    assert {name: torch.Tensor.__dict__.get(name) for name in before} == before
    assert np.asarray(t).tolist() == [0.0, 1.0, 2.0]


def test_the_old_loss_log_fails_at_step_0_under_the_guard(data, monkeypatch):
    """The conversion that stopped the first GPU run, in the real loop: caught on a CPU."""
    monkeypatch.setattr(loop, "_as_list", old_as_list)
    cfg = train_config(steps=20, batch_size=64, eval_every=10, log_every=5)
    with host_copies_guarded(), pytest.raises(ImplicitHostCopy, match="implicitly"):
        train(stack(), data, cfg)


@pytest.mark.parametrize("protocol", ["paper", "clean"])
def test_training_and_extraction_pass_under_the_whole_guard(data, protocol, tmp_path):
    """Every value the loop logs, evaluates, checkpoints and extracts goes through to_host:
    no frame is exempt here (the suite's own guard exempts the tests' code)."""
    cfg = train_config(steps=30, batch_size=64, eval_every=10, log_every=5, checkpoint_every=10,
                       protocol=protocol)
    model = stack()
    with host_copies_guarded():
        log, finals = train(model, data, cfg, RunOptions(checkpoint=tmp_path / "c.pt",
                                                         final_train_eval=True))
        f, g = extract(model, data.test_x, data.codes, batch_size=32)
    assert len(log.train_loss[-1]) == 2 and len(finals["test_accuracy"]) == 2
    assert f.shape == (2, 100, 2) and g.shape == (2, 4, 2) and f.dtype == np.float64
