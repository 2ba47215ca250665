"""The training step without host syncs, and the same step replayed from CUDA graphs
(RunOptions.cuda_graph): equal to the textbook eager step over a few hundred steps with epoch
ends (the paper protocol's short last batch has its own graph) and resumes, nothing crossing
between host and device in the steady state, a failed capture falling back to the eager step
with one log line. On a CPU the graph-ready step runs eagerly (its "replay" reruns the captured
closure on the same static buffers); the tests marked `gpu` capture for real (`make test-gpu`)."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import repdist.io.host
from repdist.data.radial import label_codes, make_radial
from repdist.models.mlp import build_synthetic_model
from repdist.models.stacked import StackedModelClass
from repdist.training import batches, loop
from repdist.training.loop import RunOptions, TrainData, batch_nll, make_adam, train

from conftest import train_config

K = 4
TORCH_DIR = str(Path(torch.__file__).parent)
HOST_FILE = repdist.io.host.__file__


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models: one thread is as fast, and two crawl on a machine whose cores are busy."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def data():
    """300 training points in batches of 64: epochs of 4 full batches and a short one of 44."""
    train_d, test_d = make_radial(300, K, 0), make_radial(100, K, 1)
    return TrainData(train_d.x, train_d.labels, test_d.x, test_d.labels,
                     label_codes(np.arange(K), K))


def stack(dtype=torch.float64, seeds=(0, 1), width=16):
    return StackedModelClass([build_synthetic_model(s, K, width, 2, fix, 0).to(dtype)
                              for s in seeds for fix in (0.0, 20.0)])


def config(protocol, steps=300, **overrides):
    return train_config(**{"steps": steps, "batch_size": 64, "lr": 1e-3, "eval_every": 70,
                           "log_every": 9, "checkpoint_every": 0, "protocol": protocol,
                           **overrides})


def reference(model, data, cfg):
    """The textbook eager loop on the host's batches (`torch.from_numpy` of each): per-step
    losses (steps, S) after training `model` in place."""
    x, y = torch.from_numpy(data.train_x).to(torch.float64), torch.from_numpy(data.train_labels)
    codes = torch.from_numpy(data.codes).to(torch.float64)
    model.to(torch.float64)
    n = len(x)
    if cfg.rules.dataloader_order:
        order = batches.dataloader_order(n, cfg.batch_size,
                                         cfg.steps_for(n) // math.ceil(n / cfg.batch_size),
                                         cfg.data_seed, lambda s: s % cfg.eval_every == 0).batches()
    else:
        order = batches.numpy_order(n, cfg.batch_size, cfg.steps, cfg.data_seed).batches()
    opt = make_adam(model, cfg.lr)
    losses = []
    for idx in order:
        idx = torch.from_numpy(idx)
        loss = batch_nll(model, x[idx], codes, y[idx])
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
        losses.append(loss.detach().clone())
    return torch.stack(losses)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / max(float(b.norm()), 1e-300))


def assert_same_models(a, b, tol=1e-12):
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert rel(p, q) <= tol, (name, rel(p, q))


def windows(losses, cfg):
    """The logged training-loss entries of the protocol from per-step losses."""
    every, out = cfg.log_every, {}
    for step in range(len(losses)):
        if cfg.rules.loss_window_ends_at_step:  # paper: steps i - every + 1 .. i at i
            if step == 0:
                out[0] = losses[0]
            elif step % every == 0:
                out[step] = losses[step - every + 1 : step + 1].sum(0) / every
        else:  # clean: steps i + 1 - every .. i at i + 1, and step 0's own loss
            if step == 0:
                out[0] = losses[0]
            if (step + 1) % every == 0:
                out[step + 1] = losses[step + 1 - every : step + 1].sum(0) / every
    return out


@pytest.mark.parametrize("cuda_graph", [False, True], ids=["eager", "graph-ready"])
@pytest.mark.parametrize("protocol", ["paper", "clean"])
def test_the_step_is_the_textbook_eager_step(data, protocol, cuda_graph):
    """float64, 300 steps (60 epoch ends): weights and every logged loss equal the eager loop
    on host batches to 1e-12 (on a CPU the weights bitwise); graph-ready, the full and the
    short batch each went through its own capture (2 graphs)."""
    cfg = config(protocol)
    ours, theirs = stack(), stack()
    log, finals = train(ours, data, cfg, RunOptions(cuda_graph=cuda_graph))
    losses = reference(theirs, data, cfg)
    assert len(losses) == finals["steps_total"] == 300
    assert_same_models(ours, theirs)
    expected = windows(losses, cfg)
    assert log.train_steps == sorted(expected)
    for step, entry in zip(log.train_steps, log.train_loss, strict=True):
        np.testing.assert_allclose(entry, expected[step].numpy(), rtol=1e-12, err_msg=str(step))
    assert finals["step_graphs"] == (2 if cuda_graph else 0)


@pytest.mark.parametrize("first, second", [(False, True), (True, True), (True, False)],
                         ids=["eager-then-graph", "graph", "graph-then-eager"])
def test_a_resume_equals_the_uninterrupted_run(data, tmp_path, crash_after, first, second):
    """Killed after step 130 (checkpoints every 50), resumed with cuda_graph as given: the
    weights and logs of an uninterrupted eager run, to 1e-12 (on a CPU: bitwise)."""
    cfg = config("paper", checkpoint_every=50)
    whole = stack()
    log_whole, _ = train(whole, data, cfg)
    ckpt = tmp_path / "checkpoint.pt"
    restore = crash_after(130)
    with pytest.raises(KeyboardInterrupt):
        train(stack(), data, cfg, RunOptions(checkpoint=ckpt, cuda_graph=first))
    restore()
    resumed = stack()
    log_resumed, finals = train(resumed, data, cfg, RunOptions(checkpoint=ckpt, cuda_graph=second))
    assert finals["steps_run"] == 200
    assert_same_models(resumed, whole)
    assert log_resumed.train_steps == log_whole.train_steps
    np.testing.assert_allclose(log_resumed.train_loss, log_whole.train_loss, rtol=1e-12)


def test_a_failed_capture_falls_back_to_the_eager_step_with_one_log_line(data, monkeypatch,
                                                                          caplog):
    def refuse(step, stream):
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing\nmore")

    monkeypatch.setattr(loop, "capture_step", refuse)
    cfg = config("paper", steps=100)
    ours, whole = stack(), stack()
    with caplog.at_level("INFO", logger="repdist"):
        _, finals = train(ours, data, cfg, RunOptions(cuda_graph=True))
    failed = [r for r in caplog.records if "capturing the step failed" in r.getMessage()]
    assert len(failed) == 1 and failed[0].levelname == "WARNING"
    assert "RuntimeError: CUDA error: operation not permitted" in failed[0].getMessage()
    assert finals["step_graphs"] == 0
    assert finals["step_graph_error"] == ("RuntimeError: CUDA error: operation not permitted "
                                          "when stream is capturing")
    assert not any(s["captured"] or s["replayed"] for s in finals["step_graph_sizes"].values())
    train(whole, data, cfg)
    assert_same_models(ours, whole, tol=0.0)


def test_the_graph_replays_the_step_it_captured(data, monkeypatch):
    """Each batch size is captured once, after GRAPH_WARMUP eager steps of it, and replayed
    for every later step of that size: 4 full and 1 short batch an epoch, 20 epochs."""
    calls = []
    real = loop.capture_step

    def counting(step, stream):
        calls.append(step)
        return real(step, stream)

    monkeypatch.setattr(loop, "capture_step", counting)
    steps = []
    monkeypatch.setattr(loop, "batch_nll", lambda model, x, c, y: steps.append(len(x)) or
                        batch_nll(model, x, c, y))
    cfg = config("paper", steps=100, eval_every=10**6)  # one test pass: 64 + 36 test points
    _, finals = train(stack(), data, cfg, RunOptions(cuda_graph=True))
    assert len(calls) == 2 and finals["step_graphs"] == 2
    assert len(steps) == 100 + 2 and steps.count(44) == 20  # every step ran, replays included
    # on a CPU nothing is captured: every step of each size ran eagerly (the graph-ready step)
    assert finals["step_graph_sizes"] == {"44": {"captured": False, "replayed": 0, "eager": 20},
                                          "64": {"captured": False, "replayed": 0, "eager": 80}}
    assert finals["step_graph_error"] == ""


def test_on_step_returning_true_ends_the_run_after_that_step(data):
    """A caller's stop (the GPU check's timed window): the run ends after the step whose
    on_step said so, its finals computed as usual, `steps_run` saying how many ran; the same
    models as a run of that many steps."""
    cfg = config("clean", steps=100, eval_every=10**6)
    stopped, whole = stack(), stack()
    seen = []
    _, finals = train(stopped, data, cfg,
                      RunOptions(on_step=lambda done: seen.append(done) or done == 37))
    assert seen == list(range(38)) and finals["steps_run"] == 37 and finals["steps_total"] == 100
    train(whole, data, config("clean", steps=37, eval_every=10**6))
    assert_same_models(stopped, whole, tol=0.0)


def test_loading_adam_keeps_this_runs_capturable():
    """torch takes `capturable` from the checkpoint: a graphed run's state loaded into an eager
    one (and back) would run with the other's setting."""
    model = torch.nn.Linear(3, 2)
    adam = make_adam(model, 1e-3)
    model(torch.ones(1, 3)).sum().backward()
    adam.step()
    state = adam.state_dict()
    state["param_groups"][0]["capturable"] = True
    fresh = make_adam(model, 1e-3)
    loop._load_optimizer(fresh, state)
    assert fresh.param_groups[0]["capturable"] is False
    assert fresh.state_dict()["state"][0]["step"] == state["state"][0]["step"]


class HalfClassifier(torch.nn.Module):
    """A small classifier computed under float16 autocast (the CPU's), float32 weights: what
    loss scaling is for, at a size that runs in a moment."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.ReLU(),
                                       torch.nn.Linear(32, K))

    def log_probs(self, x, codes):
        with torch.autocast("cpu", dtype=torch.float16):
            out = self.net(x)
        return torch.log_softmax(out.float(), dim=-1)


def overflowing_scaler(monkeypatch):
    """The loop's GradScaler with an initial scale float16 overflows at and a growth interval
    of 3 steps: steps skipped, the scale halved and grown again within a short run."""
    monkeypatch.setattr(loop, "_loss_scaler", lambda optimizer, device: torch.amp.GradScaler(
        device.type, init_scale=2.0 ** 24, growth_interval=3))


@pytest.mark.parametrize("cuda_graph", [False, True], ids=["eager", "graph-ready"])
def test_a_loss_scaled_run_resumes_with_its_scaler(data, tmp_path, crash_after, monkeypatch,
                                                   cuda_graph):
    """RunOptions.loss_scaling, float16 autocast: killed after step 50 (checkpoints every 20),
    resumed: the weights, logs and scaler state (scale, steps since its last overflow) of the
    uninterrupted run, bitwise; the checkpoint holds the scaler and says it is a scaled run."""
    overflowing_scaler(monkeypatch)
    cfg = config("paper", steps=90, checkpoint_every=20)
    options = RunOptions(loss_scaling=True, cuda_graph=cuda_graph)
    whole = HalfClassifier()
    log_whole, finals_whole = train(whole, data, cfg, options)
    assert finals_whole["loss_scaler"]["scale"] < 2.0 ** 24  # it overflowed and backed off
    ckpt = tmp_path / "checkpoint.pt"
    restore = crash_after(50)
    with pytest.raises(KeyboardInterrupt):
        train(HalfClassifier(), data, cfg, dataclasses.replace(options, checkpoint=ckpt))
    restore()
    saved = torch.load(ckpt, weights_only=False)
    assert saved["identity"]["loss_scaling"] is True and "grad_scaler" in saved["resumables"]
    resumed = HalfClassifier()
    log_resumed, finals = train(resumed, data, cfg, dataclasses.replace(options, checkpoint=ckpt))
    assert finals["steps_run"] == 50
    assert finals["loss_scaler"] == finals_whole["loss_scaler"]
    assert_same_models(resumed, whole, tol=0.0)
    assert log_resumed.train_loss == log_whole.train_loss


def test_loss_scaling_needs_the_fused_adam(data, monkeypatch):
    """With another Adam, GradScaler reads its found-infinity flag on the host every step: the
    run refuses instead."""
    monkeypatch.setattr(loop, "make_adam", lambda model, lr, capturable=False: torch.optim.Adam(
        model.parameters(), lr=lr, foreach=True))
    with pytest.raises(ValueError, match="loss_scaling needs the fused Adam"):
        train(HalfClassifier(), data, config("paper", steps=2), RunOptions(loss_scaling=True))


# -- host crossings --------------------------------------------------------------------------

@contextlib.contextmanager
def host_crossings():
    """Every way a value crosses between host and device, counted where code outside torch
    calls it: to_host, Tensor.item/tolist/numpy/__array__/__float__/__int__/__bool__/cpu/cuda,
    Tensor.to with a device, torch.from_numpy/as_tensor/tensor. Yields the list of crossings
    (name, the current step) that on_step's marks place."""
    seen: list[tuple[str, int]] = []
    state = {"step": -1}

    def outside_torch() -> bool:
        import sys

        caller = sys._getframe(2).f_code.co_filename
        return not caller.startswith(TORCH_DIR) and caller != HOST_FILE

    def counted(name, fn, only=lambda *a, **k: True):
        def wrapper(*args, **kwargs):
            if outside_torch() and only(*args, **kwargs):
                seen.append((name, state["step"]))
            return fn(*args, **kwargs)
        return wrapper

    def with_device(self, *args, **kwargs):
        return "device" in kwargs or any(isinstance(a, (str, torch.device)) for a in args)

    patches = [(torch.Tensor, name, counted(name, getattr(torch.Tensor, name)))
               for name in ("item", "tolist", "numpy", "__array__", "__float__", "__int__",
                            "__bool__", "cpu", "cuda")]
    patches.append((torch.Tensor, "to", counted("to", torch.Tensor.to, with_device)))
    patches += [(torch, name, counted(name, getattr(torch, name)))
                for name in ("from_numpy", "as_tensor", "tensor")]
    for module in (repdist.io.host, loop, batches):
        patches.append((module, "to_host", counted("to_host", repdist.io.host.to_host)))
    saved = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in patches]
    for owner, name, new in patches:
        setattr(owner, name, new)
    try:
        yield seen, state
    finally:
        for owner, name, old in reversed(saved):
            if old is None:
                delattr(owner, name)
            else:
                setattr(owner, name, old)


def steady_crossings(data, cfg, options):
    """The crossings of steps 1 .. total - 1 (no log entry, test pass or checkpoint due)."""
    with host_crossings() as (seen, state):
        def mark(done):
            state["step"] = done
        _, finals = train(stack(), data, cfg, dataclasses.replace(options, on_step=mark))
    total = finals["steps_total"]
    return [c for c in seen if 1 <= c[1] < total], seen


@pytest.mark.parametrize("cuda_graph", [False, True], ids=["eager", "graph-ready"])
@pytest.mark.parametrize("protocol", ["paper", "clean"])
def test_no_value_crosses_to_the_host_in_the_steady_state(data, protocol, cuda_graph):
    """60 steps (12 epoch ends, the captures), no log, test pass or checkpoint due after step 0:
    not one host crossing after step 0; step 0's log entry and test pass do cross (the count
    sees them), and so does the step of old, which copied each index batch from the host."""
    cfg = config(protocol, steps=60, log_every=10**6, eval_every=10**6)
    steady, seen = steady_crossings(data, cfg, RunOptions(cuda_graph=cuda_graph))
    assert steady == []
    assert any(name == "to_host" for name, _ in seen)  # step 0 and the finals: the sync points


class ScalarReads(TorchDispatchMode):
    """Every read of a tensor's value on the host (aten::_local_scalar_dense: item(), float(),
    bool() of a tensor), wherever it is called from, torch's own code included (GradScaler's),
    with the step it happened in."""

    def __init__(self, state: dict[str, int]) -> None:
        super().__init__()
        self.state, self.seen = state, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            self.seen.append(self.state["step"])
        return func(*args, **(kwargs or {}))


def scalar_reads(data, cfg, options) -> list[int]:
    """The steps 1 .. total - 1 during which a value was read on the host."""
    state = {"step": -1}
    with ScalarReads(state) as reads:
        _, finals = train(HalfClassifier(), data, cfg, dataclasses.replace(
            options, on_step=lambda done: state.update(step=done)))
    return [s for s in reads.seen if 1 <= s < finals["steps_total"]]


@pytest.mark.parametrize("cuda_graph", [False, True], ids=["eager", "graph-ready"])
def test_a_loss_scaled_step_never_reads_a_value_on_the_host(data, monkeypatch, cuda_graph):
    """float16 autocast with loss scaling, overflows and all: no item() in steps 1 .. end,
    torch's GradScaler included (its fused path hands the scale and the found-infinity flag to
    the fused Adam as tensors); the positive control, GradScaler with the foreach Adam, reads
    its flag on the host every step."""
    overflowing_scaler(monkeypatch)
    cfg = config("paper", steps=40, log_every=10**6, eval_every=10**6)
    options = RunOptions(loss_scaling=True, cuda_graph=cuda_graph)
    assert scalar_reads(data, cfg, options) == []
    monkeypatch.setattr(loop, "make_adam", lambda model, lr, capturable=False: torch.optim.Adam(
        model.parameters(), lr=lr, foreach=True))
    assert len(set(scalar_reads(data, cfg, options))) == 39  # steps 1 .. 39


def test_the_crossing_count_sees_a_per_step_host_copy(data, monkeypatch):
    """Positive control: the step of old (`torch.from_numpy(idx).to(device)` each step)."""
    real = loop._train_step

    def host_batches(run, objective, idx):
        real(run, objective, torch.from_numpy(repdist.io.host.to_host(idx)).to(run.x.device))

    monkeypatch.setattr(loop, "_train_step", host_batches)
    cfg = config("paper", steps=20, log_every=10**6, eval_every=10**6)
    steady, _ = steady_crossings(data, cfg, RunOptions())
    assert {name for name, _ in steady} == {"to_host", "from_numpy", "to"}
    assert len({step for _, step in steady}) == 19  # steps 1 .. 19


# -- on a GPU (`make test-gpu`) --------------------------------------------------------------


def flat_weights(model):
    return torch.cat([p.detach().double().flatten().cpu() for p in model.state_dict().values()
                      if p.is_floating_point()])


@pytest.mark.gpu
def test_graph_replay_equals_the_eager_step_on_the_gpu(device, data):
    """Paper protocol and lr, 300 steps, 60 epoch ends: captured (2 graphs) and replayed,
    float64 to 1e-12 of the eager step; float32 within the rounding baseline, how far two eager
    runs that differ only in summation order (each batch reversed) land apart, with a factor 2
    of headroom (the same kernels replayed: expected 0)."""
    cfg = config("paper", lr=1e-4)

    def reversed_batches(model, x, codes, labels, idx):
        return batch_nll(model, x.flip(0), codes, labels.flip(0))

    runs = {}
    for dtype, graphed, objective in [(torch.float64, False, None), (torch.float64, True, None),
                                      (torch.float32, False, None), (torch.float32, True, None),
                                      (torch.float32, False, reversed_batches)]:
        model = stack(dtype)
        log, finals = train(model, data, cfg, RunOptions(device=device, cuda_graph=graphed,
                                                         objective=objective))
        runs[dtype, graphed, objective is None] = flat_weights(model), log, finals
    assert runs[torch.float64, True, True][2]["step_graphs"] == 2
    sizes = runs[torch.float64, True, True][2]["step_graph_sizes"]  # 240 full, 60 short steps
    if device == "cuda":
        assert sizes == {"44": {"captured": True, "replayed": 60 - 3, "eager": 3},
                         "64": {"captured": True, "replayed": 240 - 3, "eager": 3}}, sizes
    else:  # on a CPU nothing is captured: every step ran eagerly
        assert sizes == {"44": {"captured": False, "replayed": 0, "eager": 60},
                         "64": {"captured": False, "replayed": 0, "eager": 240}}, sizes
    assert rel(runs[torch.float64, True, True][0], runs[torch.float64, False, True][0]) <= 1e-12
    eager = runs[torch.float32, False, True]
    baseline = rel(runs[torch.float32, False, False][0], eager[0])
    graph_vs_eager = rel(runs[torch.float32, True, True][0], eager[0])
    print(f"float32 graph vs eager {graph_vs_eager:.3g}, rounding baseline {baseline:.3g}")
    assert 0 < baseline < 1e-2 and graph_vs_eager <= 2 * baseline
    np.testing.assert_allclose(runs[torch.float32, True, True][1].train_loss, eager[1].train_loss,
                               rtol=1e-4)


@pytest.mark.gpu
def test_a_graphed_cifar_stack_equals_the_eager_one_on_the_gpu(device, tmp_path):
    """ResNet-18 stack (grouped convolutions, per-seed BatchNorm, channels_last as the pipeline
    on CUDA) in float64, 10 epochs of 100 images in batches of 16 (a short batch of 4):
    graphed (2 graphs) = eager to 1e-9."""
    from repdist.data.cifar10 import load_cifar10, normalise, write_standin
    from repdist.models.resnet import build_cifar_model, effective_bn_momentum

    cifar = load_cifar10(write_standin(tmp_path / "cifar-10-batches-py", n_train=100,
                                       n_test=30, seed=1))
    cdata = TrainData(normalise(cifar.train_images), cifar.train_labels,
                      normalise(cifar.test_images), cifar.test_labels,
                      label_codes(np.arange(10), 10))
    cfg = train_config(steps=70, batch_size=16, eval_every=30, log_every=5)
    models = {}
    for graphed in (False, True):
        models[graphed] = StackedModelClass([
            build_cifar_model(s, 2, base_width=4, g_width=16,
                              bn_momentum=effective_bn_momentum(10)).double() for s in (0, 1)])
        _, finals = train(models[graphed], cdata, cfg,
                          RunOptions(device=device, eval_batch_size=25, cuda_graph=graphed,
                                     channels_last=device == "cuda"))
    assert finals["step_graphs"] == 2
    assert rel(flat_weights(models[True]), flat_weights(models[False])) <= 1e-9


@pytest.mark.gpu
@pytest.mark.parametrize("cuda_graph, loss_scaling", [(False, False), (True, False),
                                                      (True, True)],
                         ids=["eager", "graph", "graph-loss-scaled"])
def test_no_step_waits_for_the_host_on_the_gpu(device, data, cuda_graph, loss_scaling):
    """CUDA's sync debug mode set to raise on any synchronising call from step 30 (both graphs
    captured) to the last: the steps run through, with the loss scaled too (the fp16
    candidate's GradScaler with the fused Adam)."""
    if device != "cuda":
        pytest.skip("CUDA's sync debug mode needs CUDA")
    cfg = config("paper", steps=100, log_every=10**6, eval_every=10**6)

    def watch(done):
        torch.cuda.set_sync_debug_mode("error" if 30 <= done < 100 else "default")

    try:
        _, finals = train(stack(torch.float32), data, cfg,
                          RunOptions(device=device, cuda_graph=cuda_graph, on_step=watch,
                                     loss_scaling=loss_scaling))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert finals["step_graphs"] == (2 if cuda_graph else 0)


@pytest.mark.gpu
def test_a_capture_that_syncs_falls_back_on_the_gpu(device, data, caplog):
    """An objective that reads a value on the host each step cannot be captured: one log line,
    the eager step, the result of the eager run (float64, 1e-12)."""
    def syncing(model, x, codes, labels, idx):
        loss = batch_nll(model, x, codes, labels)
        assert float(loss.detach().sum()) > 0  # a host sync: refused while capturing
        return loss

    cfg = config("paper", steps=60)
    models = {}
    with caplog.at_level("INFO", logger="repdist"):
        for graphed in (False, True):
            models[graphed] = stack()
            _, finals = train(models[graphed], data, cfg,
                              RunOptions(device=device, objective=syncing, cuda_graph=graphed))
    failed = [r for r in caplog.records if "capturing the step failed" in r.getMessage()]
    assert len(failed) == (1 if device == "cuda" else 0) and finals["step_graphs"] == (
        0 if device == "cuda" else 2)
    assert rel(flat_weights(models[True]), flat_weights(models[False])) <= 1e-12
