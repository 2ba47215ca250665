"""Early stopping per model of a stack (training/early_stopping.py), in the training loop: each
model ends at its best test pass, a stopped model stays put while the others train, the run ends
when all have stopped, and a resumed run stops where an uninterrupted one does."""

import numpy as np
import pytest
import torch

from conftest import train_config
from repdist.models.stacked import StackedModelClass
from repdist.training import loop
from repdist.training.early_stopping import EarlyStopping
from repdist.training.loop import RunOptions, TrainData, train

K = 4


def radial_data(n=256):
    from repdist.data.radial import label_codes, make_radial

    tr, te = make_radial(n, K, 0), make_radial(128, K, 1)
    return TrainData(tr.x, tr.labels, te.x, te.labels, label_codes(np.arange(K), K))


def synthetic_stack(seeds=(0, 1)):
    from repdist.models.mlp import build_synthetic_model

    return StackedModelClass([build_synthetic_model(s, K, 8, 2, 0, 0) for s in seeds]).double()


def scripted(monkeypatch, losses):
    """The loop's test passes return `losses` in turn (one row per pass, one value per model)."""
    calls = {"n": 0}

    def fake_evaluate(model, x, labels, codes, batch_size=None):
        row = np.asarray(losses[min(calls["n"], len(losses) - 1)], dtype=float)
        calls["n"] += 1
        return row, np.zeros_like(row)

    monkeypatch.setattr(loop, "evaluate", fake_evaluate)


def weights_at(stack, steps):
    """on_step: the stack's weights after each of `steps` updates."""
    kept = {}

    def on_step(done):
        if done in steps:
            kept[done] = {k: v.clone() for k, v in stack.state_dict().items()}
    return kept, on_step


def test_early_stopping_keeps_each_models_best_pass_and_stops_when_all_have(monkeypatch):
    # passes at steps 0, 10, 20, ...: model 0 best at 20, then 2 worse passes -> stopped at 40;
    # model 1 best at 30 -> stopped at 50, which ends the run
    scripted(monkeypatch, [[5, 5], [4, 4], [3, 3.5], [3.5, 3], [3.2, 3.1], [9, 4], [9, 9]])
    stack = synthetic_stack()
    kept, on_step = weights_at(stack, {20, 30, 40, 50})
    cfg = train_config(steps=100, batch_size=32, lr=1e-2, eval_every=10, log_every=10,
                       checkpoint_every=0, protocol="clean")
    _, finals = train(stack, radial_data(), cfg,
                      RunOptions(early_stopping=EarlyStopping(2), on_step=on_step))
    stopping = finals["early_stopping"]
    assert stopping["best_step"] == [20, 30] and stopping["stopped_step"] == [40, 50]
    assert stopping["steps_done"] == 50 and finals["steps_run"] == 50
    for i, best in enumerate((20, 30)):  # each model ends at its best pass's weights
        for name, value in stack.state_dict().items():
            # exact: restored from a copy
            assert torch.equal(value[i], kept[best][name][i]), (i, name)
    # model 0 stayed at its best from step 40 on while model 1 trained (zero moments, no grad)
    for name, value in kept[50].items():
        # exact: restored from a copy, then not stepped
        assert torch.equal(value[0], kept[20][name][0]), name
        assert not torch.equal(value[1], kept[40][name][1]), name


def test_models_still_training_at_the_last_step_take_their_best_pass(monkeypatch):
    scripted(monkeypatch, [[5, 5], [4, 3], [3, 4], [3.5, 4.5], [3.6, 4.6]])  # last: the end
    stack = synthetic_stack()
    kept, on_step = weights_at(stack, {10, 20})
    cfg = train_config(steps=40, batch_size=32, lr=1e-2, eval_every=10, log_every=10,
                       checkpoint_every=0, protocol="clean")
    _, finals = train(stack, radial_data(), cfg,
                      RunOptions(early_stopping=EarlyStopping(5), on_step=on_step))
    assert finals["early_stopping"]["best_step"] == [20, 10]
    assert finals["early_stopping"]["stopped_step"] == [None, None]  # ran to the end
    for i, best in enumerate((20, 10)):
        for name, value in stack.state_dict().items():
            # exact: restored from a copy
            assert torch.equal(value[i], kept[best][name][i]), (i, name)


def test_early_stopping_resumes_to_the_uninterrupted_run(tmp_path, crash_after):
    """64 training points overfit: models 1 and 2 stop before the checkpoint at step 160
    (the kill comes at 200), model 0 after it, at 260, which ends the run."""
    data = radial_data(64)
    cfg = train_config(steps=300, batch_size=32, lr=1e-2, eval_every=20, log_every=20,
                       checkpoint_every=40, protocol="clean")
    seeds = (0, 1, 2)
    whole = synthetic_stack(seeds)
    _, finals = train(whole, data, cfg, RunOptions(early_stopping=EarlyStopping(3)))
    assert finals["early_stopping"]["stopped_step"] == [260, 140, 120]
    restore = crash_after(200)
    ckpt = tmp_path / "checkpoint.pt"
    with pytest.raises(KeyboardInterrupt):
        train(synthetic_stack(seeds), data, cfg,
              RunOptions(checkpoint=ckpt, early_stopping=EarlyStopping(3)))
    restore()
    assert torch.load(ckpt, weights_only=False)["step"] == 200
    resumed = synthetic_stack(seeds)
    _, again = train(resumed, data, cfg,
                     RunOptions(checkpoint=ckpt, early_stopping=EarlyStopping(3)))
    assert again["early_stopping"] == finals["early_stopping"]
    for (name, p), q in zip(whole.state_dict().items(), resumed.state_dict().values(),
                            strict=True):
        assert torch.equal(p, q), name  # exact: the same run, resumed


def test_early_stopping_needs_a_stack_and_the_clean_protocol():
    from repdist.models.mlp import build_synthetic_model

    with pytest.raises(ValueError, match="needs a stack of models"):
        EarlyStopping(1).attach(build_synthetic_model(0, K, 8, 2, 0, 0))
    with pytest.raises(ValueError, match="positive integer"):
        EarlyStopping(0)
    cfg = train_config(steps=10, batch_size=32, eval_every=5, protocol="paper")
    with pytest.raises(ValueError, match="clean protocol"):
        train(synthetic_stack(), radial_data(), cfg, RunOptions(early_stopping=EarlyStopping(1)))
