"""Seed-stacked training equals training each seed alone; exact step counts; resume."""

import numpy as np
import pytest
import torch

from repdist.data.radial import label_codes, make_radial
from repdist.models.mlp import SmallMLP, build_synthetic_model
from repdist.models.stacked import StackedModelClass
from repdist.training.loop import TrainConfig, batch_schedule, train

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
        assert torch.equal(p, q), name
    assert list(model.state_dict())[:2] == ["f_net.l1.weight", "f_net.l1.bias"]


def test_batch_schedule_has_exactly_the_nominal_steps():
    batches = list(batch_schedule(20_000, 128, 15_000, 0))
    assert len(batches) == 15_000  # the original overshot to 15,072
    assert [len(b) for b in batches[155:158]] == [128, 32, 128]  # 157 batches per epoch
    assert sorted(np.concatenate(batches[:157]).tolist()) == list(range(20_000))


def _stack_and_alone(data, fix, dtype, steps=200):
    """`fix`: one (fix_g, fix_f) for every seed, or a list of them, one per model."""
    train_d, test_d, codes = data
    cfg = TrainConfig(steps=steps, batch_size=64, eval_every=100, log_every=50)
    seeds = [0, 1, 2]
    fixes = fix if isinstance(fix, list) else [fix] * len(seeds)
    stack = StackedModelClass([build_synthetic_model(s, K, 16, 2, *f).to(dtype)
                               for s, f in zip(seeds, fixes, strict=True)])
    log, finals = train(stack, train_d.x, train_d.labels, test_d.x, test_d.labels, codes, cfg)
    alone = []
    for s, f in zip(seeds, fixes, strict=True):
        model = build_synthetic_model(s, K, 16, 2, *f).to(dtype)
        log_1, finals_1 = train(model, train_d.x, train_d.labels, test_d.x, test_d.labels, codes,
                                cfg)
        alone.append((model, log_1, finals_1))
    return stack, log, finals, alone


@pytest.mark.parametrize("fix", [(0.0, 0.0), (20.0, 20.0), [(0.0, 20.0), (20.0, 0.0), (0.0, 0.0)]],
                         ids=["unfixed", "fixed", "mixed variants"])
def test_stacked_training_is_each_seed_trained_alone(data, fix):
    """In float64 (rounding far below Adam's eps) every seed's weights after 200 steps equal
    those of the plain nn.Linear model trained alone: the stack changes nothing but speed,
    also when its models differ in length fixing (the variants one job trains together)."""
    stack, log, finals, alone = _stack_and_alone(data, fix, torch.float64)
    for i, (model, log_1, finals_1) in enumerate(alone):
        for name, p in model.state_dict().items():
            q = stack.state_dict_of(i)[name]
            rel = float((p - q).norm() / p.norm())
            assert rel <= 1e-9, (i, name, rel)
        assert finals["test_loss"][i] == pytest.approx(finals_1["test_loss"][0], rel=1e-9)
    assert log.train_steps == [0, 50, 100, 150, 200] and log.test_steps == [0, 100]


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
    log, finals = train(stack, train_d.x, train_d.labels, test_d.x, test_d.labels, codes,
                        TrainConfig(steps=300, batch_size=64, lr=1e-3, eval_every=100))
    assert all(a > b for a, b in zip(log.test_loss[0], finals["test_loss"], strict=True))
    assert min(finals["test_accuracy"]) > 0.5  # 4 classes: chance is 0.25


def test_resume_from_checkpoint_is_bitwise_identical(data, tmp_path, crash_after):
    train_d, test_d, codes = data
    cfg = TrainConfig(steps=250, batch_size=64, eval_every=100, log_every=50, checkpoint_every=100)

    def fresh():
        return StackedModelClass([build_synthetic_model(s, K, 16, 2, 0, 0) for s in (0, 1)])

    whole = fresh()
    log_whole, _ = train(whole, train_d.x, train_d.labels, test_d.x, test_d.labels, codes, cfg)

    ckpt = tmp_path / "checkpoint.pt"
    restore = crash_after(230)
    with pytest.raises(KeyboardInterrupt):
        train(fresh(), train_d.x, train_d.labels, test_d.x, test_d.labels, codes, cfg, ckpt)
    restore()
    assert torch.load(ckpt, weights_only=False)["step"] == 200

    resumed = fresh()
    log_resumed, _ = train(resumed, train_d.x, train_d.labels, test_d.x, test_d.labels, codes,
                           cfg, ckpt)
    for (name, p), q in zip(whole.state_dict().items(), resumed.state_dict().values(),
                            strict=True):
        assert torch.equal(p, q), name
    assert log_resumed == log_whole
