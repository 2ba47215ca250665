"""Seed-stacked training equals training each seed alone; both protocols' step counts, batch
orders and logs; resume; checkpoints that refuse another configuration."""

import numpy as np
import pytest
import torch

from repdist.data.radial import label_codes, make_radial
from repdist.models.mlp import SmallMLP, build_synthetic_model
from repdist.models.stacked import StackedModelClass
import math

from torch.utils.data import DataLoader

from repdist.training.batches import dataloader_order, numpy_order
from repdist.training.loop import RunOptions, TrainData, train

from conftest import train_config

pytestmark = pytest.mark.numerics  # make test-kernels runs it under other CPUs' kernels

K = 4


@pytest.fixture(scope="module")
def data():
    return make_radial(2000, K, 0), make_radial(300, K, 1), label_codes(np.arange(K), K)


def test_initialisation_follows_the_original_order():
    """torch.manual_seed(s), then f (in=2), then g (in=K-1)."""
    model = build_synthetic_model(3, K, 16, 2, 0, 0)
    torch.manual_seed(3)
    f = SmallMLP(2, 16, 2)
    g = SmallMLP(K - 1, 16, 2)
    for (name, p), q in zip(model.state_dict().items(), [*f.state_dict().values(),
                                                          *g.state_dict().values()], strict=True):
        assert torch.equal(p, q), name  # exact: the same seeded draws
    assert list(model.state_dict())[:2] == ["f_net.l1.weight", "f_net.l1.bias"]


def test_clean_batch_order_has_exactly_the_nominal_steps():
    batches = list(numpy_order(20_000, 128, 15_000, 0).batches())
    assert len(batches) == 15_000
    assert [len(b) for b in batches[155:158]] == [128, 32, 128]  # 157 batches per epoch
    assert sorted(np.concatenate(batches[:157]).tolist()) == list(range(20_000))


def test_full_batches_leave_each_epochs_remainder_out():
    """A contrastive model's candidate set is its batch: with full_batches every batch holds
    batch_size examples (69 examples, batches of 64: one a epoch, 5 left out, other ones each
    epoch); fewer examples than a batch, or the paper protocol's replayed loader, are refused."""
    from repdist.training.batches import numpy_order
    from repdist.training.loop import batch_order

    order = numpy_order(69, 64, 6, 0, full_batches=True)
    batches = list(order.batches())
    assert len(batches) == 6 and {len(b) for b in batches} == {64}
    assert order.per_epoch == 1 and len({tuple(sorted(b)) for b in batches}) == 6
    assert all(len(set(b)) == 64 for b in batches)
    assert [len(b) for b in numpy_order(69, 64, 4, 0).batches()] == [64, 5, 64, 5]
    with pytest.raises(ValueError, match="none"):
        numpy_order(50, 64, 3, 0, full_batches=True)
    with pytest.raises(ValueError, match="clean protocol"):
        batch_order(train_config(steps=10, batch_size=4), 20, full_batches=True)
    clean = batch_order(train_config(steps=7, batch_size=4, protocol="clean"), 10, True)
    assert [len(b) for b in clean.batches()] == [4] * 7


def test_paper_protocol_runs_whole_epochs():
    """The original's epoch rounding: 96 epochs of 157 batches = 15,072 synthetic steps, 13 of
    1,563 = 20,319 CIFAR steps; the clean protocol runs the nominal count."""
    assert train_config(steps=15_000, batch_size=128).steps_for(20_000) == 15_072
    assert train_config(steps=20_000, batch_size=32).steps_for(50_000) == 20_319
    assert train_config(steps=15_000, protocol="clean").steps_for(20_000) == 15_000
    with pytest.raises(ValueError, match="protocol must be one of"):
        train_config(protocol="papper").steps_for(10)


def _original_loader_order(n, batch_size, steps, eval_every, num_workers=0):
    """The batches the original's loop saw: torch.manual_seed(0), a DataLoader iterator per
    epoch, a test-loader pass after the update of every step i % eval_every == 0."""
    torch.manual_seed(0)
    train_loader = DataLoader(range(n), batch_size=batch_size, shuffle=True,
                              num_workers=num_workers)
    test_loader = DataLoader(range(50), batch_size=batch_size, shuffle=False,
                             num_workers=num_workers)
    seen, step = [], 0
    for _ in range(math.ceil(steps / len(train_loader))):
        for batch in train_loader:
            seen.append(np.asarray(batch))
            if step % eval_every == 0:
                for _ in test_loader:
                    pass
            step += 1
    return seen


@pytest.mark.parametrize("n, batch_size, steps, eval_every, workers",
                         [(20_000, 128, 500, 200, 0), (1_000, 32, 100, 7, 0), (300, 32, 40, 9, 2)])
def test_paper_batch_order_is_the_original_dataloader_order(n, batch_size, steps, eval_every,
                                                            workers):
    """Replaying the DataLoader's RNG draws (train and test iterators, worker processes or
    not) gives its exact batches: seed s sees the authors' batches in the authors' order."""
    expected = _original_loader_order(n, batch_size, steps, eval_every, workers)
    epochs = math.ceil(steps / math.ceil(n / batch_size))
    got = list(dataloader_order(n, batch_size, epochs, 0, lambda s: s % eval_every == 0).batches())
    assert len(got) == len(expected)
    assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))  # exact: integers
    without_test_draws = list(dataloader_order(n, batch_size, epochs, 0).batches())
    # exact: integers
    assert not all(np.array_equal(a, b) for a, b in zip(without_test_draws, expected,
                                                           strict=True))


def _stack_and_alone(data, fix, dtype, steps=200, protocol="clean", device="cpu"):
    """`fix`: one (fix_g, fix_f) for every seed, or a list of them, one per model."""
    train_d, test_d, codes = data
    cfg = train_config(steps=steps, batch_size=64, eval_every=100, log_every=50, protocol=protocol)
    seeds = [0, 1, 2]
    fixes = fix if isinstance(fix, list) else [fix] * len(seeds)
    stack = StackedModelClass([build_synthetic_model(s, K, 16, 2, *f).to(dtype)
                               for s, f in zip(seeds, fixes, strict=True)])
    log, finals = train(stack, TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes),
        cfg, RunOptions(device=device))
    alone = []
    for s, f in zip(seeds, fixes, strict=True):
        model = build_synthetic_model(s, K, 16, 2, *f).to(dtype)
        log_1, finals_1 = train(model, TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes),
            cfg, RunOptions(device=device))
        alone.append((model, log_1, finals_1))
    return stack, log, finals, alone


@pytest.mark.parametrize("fix, protocol", [((0.0, 0.0), "clean"), ((20.0, 20.0), "clean"),
                                           ([(0.0, 20.0), (20.0, 0.0), (0.0, 0.0)], "clean"),
                                           ((0.0, 0.0), "paper")],
                         ids=["unfixed", "fixed", "mixed variants", "paper protocol"])
def test_stacked_training_is_each_seed_trained_alone(data, fix, protocol):
    """In float64 (rounding far below Adam's eps) every seed's weights after 200 steps equal
    those of the plain nn.Linear model trained alone: the stack changes nothing but speed,
    also when its models differ in length fixing (the variants one job trains together)."""
    stack, log, finals, alone = _stack_and_alone(data, fix, torch.float64, protocol=protocol)
    assert_stack_is_each_alone(stack, finals, alone)
    if protocol == "clean":  # 200 steps; tests before the step
        assert log.train_steps == [0, 50, 100, 150, 200] and log.test_steps == [0, 100]
        assert finals["steps_total"] == 200
    else:  # 7 whole epochs of 32 batches; test passes after the update of steps 0, 100, 200
        assert log.train_steps == [0, 50, 100, 150, 200] and log.test_steps == [0, 100, 200]
        assert finals["steps_total"] == 224


def assert_stack_is_each_alone(stack, finals, alone):
    """Every seed's weights and final test loss in the stack equal it trained alone (1e-9)."""
    for i, (model, _, finals_1) in enumerate(alone):
        for name, p in model.state_dict().items():
            q = stack.state_dict_of(i)[name]
            rel = float((p - q).norm() / p.norm())
            assert rel <= 1e-9, (i, name, rel)
        assert finals["test_loss"][i] == pytest.approx(finals_1["test_loss"][0], rel=1e-9)


def test_stacked_training_in_float32_matches_up_to_rounding(data):
    """float32 (what runs): Adam turns rounding noise of near-zero gradient entries into
    O(lr) updates, so single weights drift apart by ~1e-4 relative; the loss curves agree."""
    stack, log, finals, alone = _stack_and_alone(data, (0.0, 0.0), torch.float32)
    for i, (model, log_1, finals_1) in enumerate(alone):
        np.testing.assert_allclose([v[i] for v in log.train_loss],
                                   [v[0] for v in log_1.train_loss], rtol=1e-4)
        assert finals["test_loss"][i] == pytest.approx(finals_1["test_loss"][0], rel=1e-4)
        flat_a = torch.cat([p.flatten() for p in model.state_dict().values()])
        flat_b = torch.cat([p.flatten() for p in stack.state_dict_of(i).values()])
        assert float((flat_a - flat_b).norm() / flat_a.norm()) <= 1e-4


def test_training_lowers_the_loss(data):
    train_d, test_d, codes = data
    stack = StackedModelClass([build_synthetic_model(s, K, 32, 2, 0, 0) for s in (0, 1)])
    log, finals = train(stack, TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes),
        train_config(steps=300, batch_size=64, lr=1e-3, eval_every=100,
                                    protocol="clean"))
    assert all(a > b for a, b in zip(log.test_loss[0], finals["test_loss"], strict=True))
    assert min(finals["test_accuracy"]) > 0.5  # 4 classes: chance is 0.25


@pytest.mark.parametrize("protocol", ["paper", "clean"])
def test_resume_from_checkpoint_is_bitwise_identical(data, tmp_path, crash_after, protocol):
    train_d, test_d, codes = data
    cfg = train_config(steps=250, batch_size=64, eval_every=100, log_every=50, checkpoint_every=100,
                      protocol=protocol)

    def fresh():
        return StackedModelClass([build_synthetic_model(s, K, 16, 2, 0, 0) for s in (0, 1)])

    whole = fresh()
    log_whole, _ = train(whole, TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes),
        cfg)

    ckpt = tmp_path / "checkpoint.pt"
    restore = crash_after(230)
    with pytest.raises(KeyboardInterrupt):
        train(fresh(), TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes), cfg, RunOptions(checkpoint=ckpt))
    restore()
    assert torch.load(ckpt, weights_only=False)["step"] == 200

    resumed = fresh()
    log_resumed, _ = train(resumed, TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes),
        cfg, RunOptions(checkpoint=ckpt))
    for (name, p), q in zip(whole.state_dict().items(), resumed.state_dict().values(),
                            strict=True):
        assert torch.equal(p, q), name  # exact: the same run, resumed
    assert log_resumed == log_whole


def _tiny(seeds=(0, 1), width=16):
    return StackedModelClass([build_synthetic_model(s, K, width, 2, 0, 0) for s in seeds])


def test_paper_loss_log_is_the_original_window(data):
    """paper: the entry at step i is the mean loss of steps i-every+1..i (step 0 its own);
    clean: at i+1 the mean of steps i-every+1..i. Checked against per-step losses (every=1)."""
    train_d, test_d, codes = data
    for protocol in ("paper", "clean"):
        logs = {}
        for every in (1, 4):
            cfg = train_config(steps=40, batch_size=256, eval_every=1000, log_every=every,
                              protocol=protocol)
            log, _ = train(_tiny(), TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes), cfg)
            logs[every] = dict(zip(log.train_steps, np.array(log.train_loss), strict=True))
        per_step = logs[1]
        if protocol == "paper":  # label i = loss of step i; windows end at their label
            own = {i: per_step[i] for i in per_step}
            expected = {i: (own[0] if i == 0 else np.mean([own[j] for j in range(i - 3, i + 1)],
                                                           axis=0)) for i in logs[4]}
        else:  # label i + 1 = loss of step i, plus step 0's own loss at label 0
            own = {i - 1: per_step[i] for i in per_step if i > 0}
            expected = {i: (own[0] if i == 0 else np.mean([own[j] for j in range(i - 4, i)],
                                                           axis=0)) for i in logs[4]}
        assert sorted(logs[4]) == sorted(expected), protocol
        for i in logs[4]:
            np.testing.assert_allclose(logs[4][i], expected[i], rtol=1e-6, err_msg=protocol)


def test_paper_test_loss_is_the_mean_of_batch_means_after_the_update(data):
    """The recorded final test loss of the paper protocol is the last logged value: a mean of
    per-batch means over test batches of the training batch size (the last batch short)."""
    from repdist.training.loop import per_model_nll

    train_d, test_d, codes = data
    cfg = train_config(steps=64, batch_size=128, eval_every=32, log_every=32)
    model = _tiny()
    log, finals = train(model, TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes),
        cfg)
    assert log.test_steps == [0, 32] and finals["test_loss"] == log.test_loss[-1]
    x, y = torch.from_numpy(test_d.x), torch.from_numpy(test_d.labels)
    c = torch.from_numpy(codes)
    with torch.no_grad():
        whole = per_model_nll(model.log_probs(x, c), y).double()
    assert len(test_d.x) % 128  # a short last batch, so the two means differ
    np.testing.assert_allclose(finals["test_loss_eval"], whole.numpy(), rtol=1e-6)
    # the model after 64 steps is not the model at step 32: recompute at the last test pass
    assert finals["test_loss"] != pytest.approx(finals["test_loss_eval"], rel=1e-9)
    cfg_end = train_config(steps=64, batch_size=128, eval_every=63, log_every=32)
    model = _tiny()
    log, finals = train(model, TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes),
        cfg_end)
    assert log.test_steps[-1] == 63  # the last step, after its update: the final model
    with torch.no_grad():
        means = torch.stack([per_model_nll(model.log_probs(x[i:i + 128], c), y[i:i + 128])
                             for i in range(0, len(x), 128)]).double().mean(dim=0)
    np.testing.assert_allclose(finals["test_loss"], means.numpy(), rtol=1e-6)
    assert not np.allclose(finals["test_loss"], finals["test_loss_eval"], rtol=1e-6)


def test_checkpoint_of_another_configuration_is_set_aside(data, tmp_path, crash_after, caplog):
    """Killed after its first checkpoint, rerun with another lr: the old checkpoint is renamed
    (not resumed, not deleted), one line names the change, and the models equal a fresh run's
    at the new lr bitwise."""
    train_d, test_d, codes = data
    args = (train_d.x, train_d.labels, test_d.x, test_d.labels, codes)
    old = train_config(steps=120, batch_size=64, eval_every=50, log_every=20, checkpoint_every=40,
                      lr=1e-4)
    new = train_config(**{**old.__dict__, "lr": 3e-4})
    ckpt = tmp_path / "checkpoint.pt"
    restore = crash_after(50)
    with pytest.raises(KeyboardInterrupt):
        train(_tiny(), TrainData(*args), old, RunOptions(checkpoint=ckpt, identity={"model": "tiny"}))
    restore()
    assert ckpt.exists() and torch.load(ckpt, weights_only=False)["step"] == 40
    resumed = _tiny()
    with caplog.at_level("INFO", logger="repdist"):
        _, finals = train(resumed, TrainData(*args),
            new, RunOptions(checkpoint=ckpt, identity={"model": "tiny"}))
    assert "checkpoint set aside: lr 0.0001 -> 0.0003" in caplog.text
    assert "resuming" not in caplog.text and finals["steps_run"] == finals["steps_total"]
    aside = list(tmp_path.glob("checkpoint.set-aside-*.pt"))
    assert len(aside) == 1 and torch.load(aside[0], weights_only=False)["step"] == 40
    fresh = _tiny()
    train(fresh, TrainData(*args), new, RunOptions(identity={"model": "tiny"}))
    for (name, p), q in zip(fresh.state_dict().items(), resumed.state_dict().values(),
                            strict=True):
        assert torch.equal(p, q), name  # exact: the same fresh run


def test_fewer_steps_than_the_checkpoint_start_fresh(data, tmp_path, crash_after, caplog):
    train_d, test_d, codes = data
    args = (train_d.x, train_d.labels, test_d.x, test_d.labels, codes)
    long = train_config(steps=120, batch_size=64, eval_every=50, log_every=20, checkpoint_every=40,
                       protocol="clean")
    ckpt = tmp_path / "checkpoint.pt"
    restore = crash_after(90)
    with pytest.raises(KeyboardInterrupt):
        train(_tiny(), TrainData(*args), long, RunOptions(checkpoint=ckpt))
    restore()
    assert torch.load(ckpt, weights_only=False)["step"] == 80
    short = train_config(**{**long.__dict__, "steps": 60})
    with caplog.at_level("INFO", logger="repdist"):
        _, finals = train(_tiny(), TrainData(*args), short, RunOptions(checkpoint=ckpt))
    assert "checkpoint set aside: steps 120 -> 60" in caplog.text
    assert finals["steps_run"] == 60  # a fresh start: never a negative count


def test_a_checkpoint_without_configuration_is_set_aside(data, tmp_path, caplog):
    train_d, test_d, codes = data
    ckpt = tmp_path / "checkpoint.pt"
    torch.save({"step": 10, "model": {}, "optimizer": {}, "log": {}, "running": None}, ckpt)
    cfg = train_config(steps=20, batch_size=256, eval_every=100, log_every=10)
    with caplog.at_level("INFO", logger="repdist"):
        train(_tiny(), TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes), cfg, RunOptions(checkpoint=ckpt))
    assert "it records no configuration" in caplog.text
    assert not ckpt.exists() and len(list(tmp_path.glob("checkpoint.set-aside-*"))) == 1


def test_training_logs_progress_lines(data, caplog, monkeypatch):
    """A line at every log step (and about every 30 s): step/total, percent, loss, rate, ETA;
    `parse_line` reads it back."""
    from repdist.training.progress import parse_line

    train_d, test_d, codes = data
    cfg = train_config(steps=64, batch_size=128, eval_every=100, log_every=16)
    with caplog.at_level("INFO", logger="repdist"):
        log, _ = train(_tiny(), TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes), cfg)
    states = [parse_line(r.getMessage()) for r in caplog.records]
    states = [s for s in states if s is not None]
    assert [s.step for s in states] == [1, 17, 33, 49, 64]  # after steps 0, 16, 32, 48; the end
    assert all(s.total == 64 for s in states) and states[-1].percent == 100.0
    assert states[1].loss == pytest.approx(np.mean(log.train_loss[1]), rel=1e-3)
    assert all(s.rate > 0 and s.eta_s is not None for s in states)


def test_hand_written_backwards_pass_gradcheck():
    """torch.autograd.gradcheck in float64 of the stack's two autograd functions: the whole MLP
    as one node, and the NLL with its closed-form gradient (finite differences vs backward)."""
    from repdist.models.stacked import StackedMLPFunction, StackedNLL

    gen = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, dtype=torch.float64, generator=gen, requires_grad=True)

    s, b, n_in, w, m, k = 2, 5, 3, 4, 2, 4
    mlp_args = (rand(s, b, n_in), rand(s, n_in, w), rand(s, 1, w), rand(s, w, w),
                rand(s, 1, w), rand(s, w, w), rand(s, 1, w), rand(s, m, w))
    assert torch.autograd.gradcheck(StackedMLPFunction.apply, mlp_args, eps=1e-6, atol=1e-8, rtol=1e-5)
    for depth in (0, 1, 4):  # a class table (no hidden layer) and Roeder et al.'s four
        hidden = [rand(s, n_in if i == 0 else w, w) if j == 0 else rand(s, 1, w)
                  for i in range(depth) for j in range(2)]
        args = (rand(s, b, n_in), *hidden, rand(s, m, w if depth else n_in))
        assert torch.autograd.gradcheck(StackedMLPFunction.apply, args, eps=1e-6, atol=1e-8,
                                        rtol=1e-5)
    labels = torch.tensor([0, 3, 1, 2, 3])
    assert torch.autograd.gradcheck(lambda f_t, g: StackedNLL.apply(f_t, g, labels),
                                    (rand(s, m, b), rand(s, k, m)), eps=1e-6, atol=1e-8, rtol=1e-5)


@pytest.mark.parametrize("damage", ["truncated", "other_format", "empty"])
def test_a_damaged_checkpoint_is_set_aside_and_training_starts_fresh(data, tmp_path, caplog,
                                                                     damage):
    """A checkpoint cut short (a full disk, a copy interrupted), a file of another format, an
    empty file: set aside with a log line saying why, and the run equals a fresh one."""
    train_d, test_d, codes = data
    args = TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels, codes)
    cfg = train_config(steps=60, batch_size=64, eval_every=50, log_every=20, checkpoint_every=20,
                       protocol="clean")
    ckpt = tmp_path / "checkpoint.pt"
    train(_tiny(), args, train_config(**{**cfg.__dict__, "steps": 100}),
          RunOptions(checkpoint=ckpt))  # leaves its step-80 checkpoint
    whole = ckpt.read_bytes()
    ckpt.write_bytes({"truncated": whole[: len(whole) // 2], "other_format": b'{"step": 3}',
                      "empty": b""}[damage])
    resumed = _tiny()
    with caplog.at_level("INFO", logger="repdist"):
        _, finals = train(resumed, args, cfg, RunOptions(checkpoint=ckpt))
    assert "checkpoint set aside: it cannot be read (" in caplog.text
    assert finals["steps_run"] == 60 and len(list(tmp_path.glob("checkpoint.set-aside-*.pt"))) == 1
    fresh = _tiny()
    train(fresh, args, cfg)
    for p, q in zip(fresh.state_dict().values(), resumed.state_dict().values(), strict=True):
        assert torch.equal(p, q)  # exact: the same fresh run
