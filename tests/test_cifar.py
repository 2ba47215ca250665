"""CIFAR-10: the loader on a stand-in in the real on-disk format, download/checksum errors,
ResNet-18 shapes, and resume of the CIFAR trainer (BatchNorm buffers included)."""

import time

import numpy as np
import pytest

from repdist.io.download import ChecksumError
import torch

from repdist.data import cifar10
from repdist.data.cifar10 import (
    CIFAR10Error,
    fetch_cifar10,
    load_cifar10,
    normalise,
    write_standin,
    write_standin_archive,
)
from repdist.data.radial import label_codes
from repdist.models.resnet import ResNet18, build_cifar_model, effective_bn_momentum
from repdist.training.loop import RunOptions, TrainData, train

from conftest import train_config


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cifar") / "cifar-10-batches-py"
    return write_standin(folder, n_train=200, n_test=50, seed=1)


def test_standin_loads_in_the_real_format(standin):
    data = load_cifar10(standin)
    assert data.train_images.shape == (200, 3, 32, 32) and data.train_images.dtype == np.uint8
    assert data.test_images.shape == (50, 3, 32, 32)
    assert data.class_names == cifar10.CLASS_NAMES
    assert set(np.unique(data.train_labels)) == set(range(10))
    assert data.standin


def test_pickles_have_the_cifar_keys(standin):
    import pickle

    with open(standin / "data_batch_1", "rb") as fh:
        batch = pickle.load(fh, encoding="bytes")  # how torchvision-era readers open them
    assert {b"data", b"labels", b"batch_label", b"filenames"} <= set(batch)
    assert batch[b"data"].shape[1] == 3072
    with open(standin / "batches.meta", "rb") as fh:
        meta = pickle.load(fh, encoding="latin1")  # how torchvision and we open them
    assert meta["label_names"][9] == "truck"


def test_normalise_maps_pixels_to_minus_one_one():
    x = normalise(np.array([0, 255, 128], dtype=np.uint8).reshape(1, 3, 1, 1))
    np.testing.assert_allclose(x.ravel(), [-1.0, 1.0, 128 / 255 * 2 - 1], atol=1e-6)
    assert x.dtype == np.float32


def test_missing_files_are_named(standin, tmp_path):
    partial = tmp_path / "cifar-10-batches-py"
    partial.mkdir()
    (partial / "data_batch_1").write_bytes((standin / "data_batch_1").read_bytes())
    with pytest.raises(CIFAR10Error, match="missing data_batch_2.*test_batch.*batches.meta"):
        load_cifar10(partial)


def test_fetch_verifies_and_extracts_an_archive(tmp_path):
    source = tmp_path / "mirror" / "cifar-10-python.tar.gz"
    source.parent.mkdir()
    md5 = write_standin_archive(source, n_train=50, n_test=20)
    folder = fetch_cifar10(tmp_path / "resources", url=source.as_uri(), md5=md5)
    assert load_cifar10(folder).test_images.shape == (20, 3, 32, 32)
    assert sorted(p.name for p in (tmp_path / "resources").iterdir()) == [
        "cifar-10-batches-py", "cifar-10-python.tar.gz"]  # no half-extracted leftovers


def test_fetch_rejects_a_wrong_checksum(tmp_path):
    source = tmp_path / "cifar-10-python.tar.gz"
    write_standin_archive(source, n_train=50, n_test=20)
    with pytest.raises(ChecksumError, match="md5 .* does not match the published"):
        fetch_cifar10(tmp_path / "resources", url=source.as_uri())  # the real MD5 won't match
    assert not (tmp_path / "resources" / "cifar-10-batches-py").exists()


def test_fetch_offline_fails_fast_with_instructions(tmp_path):
    start = time.time()
    with pytest.raises(CIFAR10Error, match="cifar10.root"):
        fetch_cifar10(tmp_path / "resources", url="http://127.0.0.1:9/cifar-10-python.tar.gz",
                      timeout=5)
    assert time.time() - start < 60
    assert not (tmp_path / "resources" / "cifar-10-python.tar.gz").exists()


def test_resnet18_matches_the_paper_architecture():
    model = build_cifar_model(0, rep_dim=2)
    assert sum(p.numel() for p in model.f_net.parameters()) == 11_169_858
    assert sum(p.numel() for p in model.g_net.parameters()) == 34_560
    assert len(model.state_dict()) == 129
    small = ResNet18(final_dim=5, base_width=4)
    assert small(torch.zeros(3, 3, 32, 32)).shape == (3, 5)


def test_original_effective_bn_momentum():
    assert effective_bn_momentum(10) == pytest.approx(0.6862, abs=1e-4)


def test_cifar_trainer_resumes_bitwise_with_batchnorm(standin, tmp_path, crash_after):
    data = load_cifar10(standin)
    x, tx = normalise(data.train_images), normalise(data.test_images)
    codes = label_codes(np.arange(10), 10)
    cfg = train_config(steps=30, batch_size=16, eval_every=10, log_every=5, checkpoint_every=10)

    def fresh():
        return build_cifar_model(0, 2, base_width=4, g_width=16)

    whole = fresh()
    log_whole, _ = train(whole, TrainData(x, data.train_labels, tx, data.test_labels, codes),
        cfg, RunOptions(eval_batch_size=25))
    ckpt = tmp_path / "ckpt.pt"
    restore = crash_after(25)
    with pytest.raises(KeyboardInterrupt):
        train(fresh(), TrainData(x, data.train_labels, tx, data.test_labels, codes), cfg, RunOptions(checkpoint=ckpt, eval_batch_size=25))
    restore()
    resumed = fresh()
    log_resumed, finals = train(resumed, TrainData(x, data.train_labels, tx, data.test_labels, codes),
        cfg, RunOptions(checkpoint=ckpt, eval_batch_size=25))
    assert finals["steps_run"] < cfg.steps
    for (name, p), q in zip(whole.state_dict().items(), resumed.state_dict().values(),
                            strict=True):
        # exact: the same run, resumed
        assert torch.equal(p, q), name  # includes BN running_mean/var and num_batches_tracked
    assert log_resumed == log_whole


def _cifar_stack_vs_alone(standin, dtype, steps, base_width=4, batch_size=16, seeds=(0, 1, 2),
                          device="cpu", rep_dims=(2,), alone_of=None):
    """A stack of every seed at each of `rep_dims` (M-major, as the stack across M), and its
    models trained alone (those at the stack indices `alone_of`; None: every one), as (index in
    the stack, model, finals)."""
    from repdist.models.stacked import StackedModelClass

    data = load_cifar10(standin)
    x, tx = normalise(data.train_images), normalise(data.test_images)
    codes = label_codes(np.arange(10), 10)
    cfg = train_config(steps=steps, batch_size=batch_size, eval_every=10, log_every=5)
    models = [(m, s) for m in rep_dims for s in seeds]

    def build(m, seed):
        return build_cifar_model(seed, m, base_width=base_width, g_width=16,
                                 bn_momentum=effective_bn_momentum(10)).to(dtype)

    stack = StackedModelClass([build(m, s) for m, s in models])
    log, finals = train(stack, TrainData(x, data.train_labels, tx, data.test_labels, codes),
        cfg, RunOptions(eval_batch_size=25, device=device))
    alone = []
    for i in range(len(models)) if alone_of is None else alone_of:
        model = build(*models[i])
        _, finals_1 = train(model, TrainData(x, data.train_labels, tx, data.test_labels, codes),
            cfg, RunOptions(eval_batch_size=25, device=device))
        alone.append((i, model, finals_1))
    return stack, finals, alone


def test_stacked_cifar_seeds_train_exactly_as_alone(standin):
    """Grouped convolutions, per-seed BatchNorm channels, the paper protocol (train-mode test
    passes updating the running statistics): in float64 every seed's weights and BatchNorm
    buffers after 20 steps equal that seed trained alone, to 1e-9 relative."""
    stack, finals, alone = _cifar_stack_vs_alone(standin, torch.float64, steps=20)
    assert_cifar_stack_is_each_alone(stack, finals, alone)


def test_a_stack_across_m_trains_each_of_the_30_models_as_alone(standin):
    """The three M's ten seeds each (config cifar10.stack_across_m) as one stack: heads of 2, 3
    and 5 outputs padded to 5. In float64 the first and last seed of each M (the models at the
    padded stack's edges) have the weights, BatchNorm buffers and test loss of that model
    trained alone (1e-9), and every model's padded rows of f's and g's heads are still exactly
    zero."""
    stack, finals, alone = _cifar_stack_vs_alone(standin, torch.float64, steps=6,
                                                 base_width=2, seeds=range(10),
                                                 rep_dims=(2, 3, 5),
                                                 alone_of=(0, 9, 10, 19, 20, 29))
    assert stack.num_models == 30 and stack.f_net.out_dims == [2] * 10 + [3] * 10 + [5] * 10
    assert_cifar_stack_is_each_alone(stack, finals, alone)
    for i, m in enumerate(stack.f_net.out_dims):
        assert not stack.f_net.linear_weight[i, m:].any() and not stack.f_net.linear_bias[i, m:].any()
        assert not stack.g_net.l4_weight[i, m:].any()


def assert_cifar_stack_is_each_alone(stack, finals, alone):
    """Every seed trained alone has, in the stack, its weights, BatchNorm buffers and final test
    loss (1e-9 relative; step counters exactly)."""
    for i, model, finals_1 in alone:
        ours = stack.state_dict_of(i)
        assert list(ours) == list(model.state_dict())  # the original's keys, in order
        for name, p in model.state_dict().items():
            q = ours[name]
            assert q.shape == p.shape, (i, name)
            if not p.is_floating_point():
                assert torch.equal(p, q), name  # exact: integers (num_batches_tracked)
                continue
            rel = float((p - q).norm() / max(float(p.norm()), 1e-300))
            assert rel <= 1e-9, (i, name, rel)
        assert finals["test_loss"][i] == pytest.approx(finals_1["test_loss"][0], rel=1e-9)
    assert "f_net.layer1.0.bn1.running_var" in ours


def test_stacked_cifar_seeds_in_float32_give_the_same_models(standin):
    """float32, the quick branch's model size and steps: each seed's test losses within 1e-3 of
    its model trained alone."""
    stack, finals, alone = _cifar_stack_vs_alone(standin, torch.float32, steps=16, base_width=8)
    for i, _, finals_1 in alone:
        assert finals["test_loss"][i] == pytest.approx(finals_1["test_loss"][0], abs=1e-3)
        assert finals["test_loss_eval"][i] == pytest.approx(finals_1["test_loss_eval"][0],
                                                             abs=1e-3)


def test_bn_momentum_follows_the_protocol():
    from repdist.experiments.cifar.training import resolve_bn_momentum

    assert resolve_bn_momentum("protocol", "paper") == pytest.approx(1 - 0.9**11)
    assert resolve_bn_momentum("protocol", "clean") == 0.1
    assert resolve_bn_momentum(0.3, "paper") == 0.3
    assert resolve_bn_momentum("original", "clean") == pytest.approx(0.6862, abs=1e-4)


def test_a_run_resumed_with_channels_last_flipped_starts_afresh(standin, tmp_path, crash_after,
                                                                caplog):
    """A checkpoint holds its run's memory layout (channels-last weights and Adam moments): a
    run killed and resumed with cifar10.channels_last flipped sets it aside and trains from step
    0 (float64: the same weights as an uninterrupted run of the new layout), never resuming the
    other layout's Adam state."""
    data = load_cifar10(standin)
    x, tx = normalise(data.train_images), normalise(data.test_images)
    codes = label_codes(np.arange(10), 10)
    cfg = train_config(steps=5, batch_size=8, eval_every=5, log_every=1, checkpoint_every=2,
                       protocol="clean")
    train_data = TrainData(x, data.train_labels, tx, data.test_labels, codes)

    def fresh():
        return build_cifar_model(0, 2, base_width=4, g_width=16).double()

    whole = fresh()
    train(whole, train_data, cfg, RunOptions(eval_batch_size=50))
    ckpt = tmp_path / "ckpt.pt"
    restore = crash_after(3)
    with pytest.raises(KeyboardInterrupt):
        train(fresh(), train_data, cfg, RunOptions(checkpoint=ckpt, eval_batch_size=50,
                                                   channels_last=True))
    restore()
    assert ckpt.exists()
    resumed = fresh()
    with caplog.at_level("INFO", logger="repdist"):
        _, finals = train(resumed, train_data, cfg, RunOptions(
            checkpoint=ckpt, eval_batch_size=50))
    assert finals["steps_run"] == cfg.steps, "resumed the other layout's checkpoint"
    assert "checkpoint set aside: memory_format" in caplog.text
    for (name, p), q in zip(whole.state_dict().items(), resumed.state_dict().values(),
                            strict=True):
        assert torch.equal(p, q), name  # exact: the same fresh run


@pytest.mark.slow  # float16 on a CPU crawls where it overflows (~10 s): `make test-slow`
def test_an_fp16_run_resumes_with_its_loss_scale(standin, tmp_path, crash_after, monkeypatch):
    """The fp16 candidate (float16 autocast on the CPU here, as the toy check runs it),
    graph-ready: killed after step 3 of 6 (checkpoints every 2), resumed: the weights, logs
    and loss scaler (scale, steps since its last overflow) of the uninterrupted run, bitwise:
    the scaler's state travels with the checkpoint. Its initial scale set high and its growth interval
    short here, so that float16 overflows (steps skipped, the scale halved) and the scale grows
    again within the run."""
    from repdist.models.stacked import StackedModelClass
    from repdist.training import loop

    monkeypatch.setattr(loop, "_loss_scaler", lambda optimizer, device: torch.amp.GradScaler(
        device.type, init_scale=2.0 ** 24, growth_interval=2))
    data = load_cifar10(standin)
    train_data = TrainData(normalise(data.train_images[:64]), data.train_labels[:64],
                           normalise(data.test_images[:16]), data.test_labels[:16],
                           label_codes(np.arange(10), 10))
    cfg = train_config(steps=6, batch_size=8, eval_every=100, log_every=2, checkpoint_every=2,
                       protocol="clean")

    def fresh():
        stack = StackedModelClass([build_cifar_model(s, 2, base_width=2, g_width=8)
                                   for s in (0, 1)])
        stack.f_net.autocast_dtype = torch.float16
        return stack

    def options(**more):
        return RunOptions(eval_batch_size=16, loss_scaling=True, cuda_graph=True, **more)

    whole = fresh()
    log_whole, finals_whole = train(whole, train_data, cfg, options())
    ckpt = tmp_path / "ckpt.pt"
    restore = crash_after(3)
    with pytest.raises(KeyboardInterrupt):
        train(fresh(), train_data, cfg, options(checkpoint=ckpt))
    restore()
    assert torch.load(ckpt, weights_only=False)["identity"]["loss_scaling"] is True
    resumed = fresh()
    log_resumed, finals = train(resumed, train_data, cfg, options(checkpoint=ckpt))
    assert finals["steps_run"] == 4  # from the checkpoint at step 2
    assert finals["loss_scaler"] == finals_whole["loss_scaler"]
    assert finals["loss_scaler"]["scale"] < 2.0 ** 24  # it backed off: float16 overflowed
    for (name, p), q in zip(whole.state_dict().items(), resumed.state_dict().values(),
                            strict=True):
        assert torch.equal(p, q), name  # exact: the same run, resumed
    assert log_resumed == log_whole
