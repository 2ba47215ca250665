"""The GPU-facing paths on a fake accelerator, run on a CPU (tests/test_fake_device.py runs this
file in a process of its own and reads the JSON it prints: the backend it registers is global
and cannot be undone).

The fake device is PyTorch's PrivateUse1 backend renamed `fakegpu`, registered from Python
(torch.utils.backend_registration), with every tensor a FakeTensor (torch._subclasses.
fake_tensor.FakeTensorMode): shapes, dtypes, devices and strides propagate through every
operation, no arithmetic is done, and an operation that meets tensors on two devices raises as
it would on CUDA (a CPU zero-dimensional tensor allowed, as there). What a fake tensor cannot do
is patched here, outside the code under test: `Tensor.numpy()` (so `to_host`) gives zeros of the
tensor's shape and dtype, a value read on the host (.item(), float(), int(), bool()) gives 0,
`Module.to` moves parameters and buffers itself (torch's own swaps a fake parameter in place,
which fake tensors refuse) and torch.load onto the device reads on the CPU, then moves each
tensor. Only device tensors are fake: what the host computes is real. Boolean-mask selection
on the device (its size depends on the data) and torch.save of fake tensors are not possible:
a path that needs them fails here.

Each case prints `ok`, or the error it raised; the controls must raise a device mismatch.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch
from torch import nn

DEVICE = "fakegpu"
CASES: dict[str, Callable[[], None]] = {}


def missing() -> str | None:
    """Why this torch build cannot run the fake device, or None."""
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: F401
        from torch.utils.backend_registration import (  # noqa: F401
            _setup_privateuseone_for_python_backend,
        )
    except ImportError as err:
        return f"torch {torch.__version__} lacks {err.name or err}"
    if not hasattr(torch._C, "_acc"):
        return f"torch {torch.__version__} has no Python PrivateUse1 hooks (torch._C._acc)"
    return None


def register() -> None:
    from torch.utils.backend_registration import (
        _DummyBackendModule,
        _setup_privateuseone_for_python_backend,
    )

    class Backend(_DummyBackendModule):
        def device(self, index):  # torch.load's map_location enters it
            return contextlib.nullcontext()

    _setup_privateuseone_for_python_backend(DEVICE, backend_module=Backend())


@contextlib.contextmanager
def fake_device() -> Iterator[None]:
    """Tensors on the fake device are FakeTensors; tensors on the CPU stay real (what the host
    computes is computed); see the module's text."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten, tree_map

    class Mode(FakeTensorMode):
        # no real tensor is ever made on the fake device (the mode's constant propagation
        # would try), as for a CUDA device torch cannot start
        avoid_device_init = property(lambda self: True)

    fake = Mode(allow_non_fake_inputs=True)

    class DeviceTensorsFake(TorchDispatchMode):
        """An operation on a fake tensor, or making one on the fake device, runs in the fake
        mode (a real CPU tensor meeting a device tensor there raises); any other runs as is."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            flat, _ = tree_flatten((args, kwargs))
            if any(isinstance(a, FakeTensor) or (isinstance(a, torch.device) and a.type == DEVICE)
                   for a in flat):
                with fake:
                    return func(*args, **kwargs)
            return func(*args, **kwargs)

    def host_value(real: Callable, value: object) -> Callable:
        def read(self, *args, **kwargs):
            return value if isinstance(self, FakeTensor) else real(self, *args, **kwargs)
        return read

    def numpy(real: Callable) -> Callable:
        def to_numpy(self, *args, **kwargs):
            if not isinstance(self, FakeTensor):
                return real(self, *args, **kwargs)
            dtype = torch.empty((), dtype=self.dtype, device="meta")
            kind = np.float64 if dtype.is_floating_point else np.int64
            return np.zeros(tuple(int(s) for s in self.shape), dtype=kind)
        return to_numpy

    def module_to(self: nn.Module, *args, **kwargs) -> nn.Module:
        device, dtype, _, memory_format = torch._C._nn._parse_to(*args, **kwargs)
        moved: dict[int, torch.Tensor] = {}

        def convert(t: torch.Tensor) -> torch.Tensor:
            if id(t) not in moved:
                options = {"device": device} if device is not None else {}
                if dtype is not None and t.is_floating_point():
                    options["dtype"] = dtype
                if memory_format is not None and t.dim() == 4:
                    options["memory_format"] = memory_format
                with torch.no_grad():
                    out = t.detach().to(**options) if options else t.detach()
                if isinstance(t, nn.Parameter):
                    out = nn.Parameter(out, t.requires_grad)
                moved[id(t)] = out
            return moved[id(t)]

        for module in self.modules():
            for group in (module._parameters, module._buffers):
                for name, t in group.items():
                    if t is not None:
                        group[name] = convert(t)
        return self

    saved = {(torch.Tensor, n): getattr(torch.Tensor, n)
             for n in ("numpy", "item", "__float__", "__int__", "__bool__", "tolist")}
    saved[(nn.Module, "to")] = nn.Module.to
    saved[(nn.Module, "cpu")] = nn.Module.cpu
    saved[(torch, "load")] = torch.load

    def load(*args, map_location=None, **kwargs):
        """torch.load onto the fake device: read on the CPU, then every tensor moved there (a
        storage cannot be made on it directly)."""
        if torch.device(map_location).type != DEVICE if map_location is not None else True:
            return saved[(torch, "load")](*args, map_location=map_location, **kwargs)
        state = saved[(torch, "load")](*args, map_location="cpu", **kwargs)
        return tree_map(lambda v: v.to(map_location) if isinstance(v, torch.Tensor) else v,
                        state)

    torch.load = load
    torch.Tensor.numpy = numpy(saved[(torch.Tensor, "numpy")])
    for name, value in (("item", 0), ("__float__", 0.0), ("__int__", 0), ("__bool__", False),
                        ("tolist", [])):
        setattr(torch.Tensor, name, host_value(saved[(torch.Tensor, name)], value))
    nn.Module.to = module_to
    nn.Module.cpu = lambda self: module_to(self, "cpu")
    try:
        with DeviceTensorsFake():
            yield
    finally:
        for (owner, name), value in saved.items():
            setattr(owner, name, value)


def case(fn: Callable[[], None]) -> Callable[[], None]:
    CASES[fn.__name__] = fn
    return fn


def _mismatch(fn: Callable[[], object]) -> None:
    """fn must raise a device mismatch (a CPU tensor meeting a fake-device tensor)."""
    try:
        with fake_device():
            fn()
    except Exception as err:  # noqa: BLE001 (what it raised is the result)
        if "device" in str(err) and DEVICE in str(err) and "cpu" in str(err):
            return
        raise
    raise AssertionError("no device mismatch raised: the fake device would not catch one")


@case
def control_a_cpu_tensor_meets_a_device_tensor() -> None:
    _mismatch(lambda: torch.ones(3, device=DEVICE) + torch.ones(3))


@case
def control_a_training_batch_with_codes_left_on_the_cpu() -> None:
    from repdist.training.loop import batch_nll

    model = synthetic_stack()
    codes = torch.eye(4)[:, :3]

    def step():
        model.to(DEVICE)
        x = torch.zeros(8, 2, device=DEVICE)
        batch_nll(model, x, codes, torch.zeros(8, dtype=torch.long, device=DEVICE))

    _mismatch(step)


def synthetic_stack():
    from repdist.models.mlp import build_synthetic_model
    from repdist.models.stacked import StackedModelClass

    return StackedModelClass([build_synthetic_model(s, 4, 8, 2, 0.0, 0.0) for s in (0, 1)])


def synthetic_data(n: int = 48):
    from repdist.data.radial import label_codes
    from repdist.training.loop import TrainData

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(n, 2)).astype(np.float32), rng.integers(0, 4, n)
    return TrainData(x, y, x[:16], y[:16], label_codes(np.arange(4), 4).astype(np.float32))


def train_config(**overrides):
    from repdist.training.settings import TrainConfig

    settings = {"steps": 2, "batch_size": 16, "lr": 1e-3, "data_seed": 0, "log_every": 1,
                "eval_every": 1, "checkpoint_every": 0, "protocol": "clean", **overrides}
    return TrainConfig(**settings)


@case
def synthetic_step() -> None:
    """A stacked MLP's steps through training/loop.py (the clean and the paper protocol), on
    the fake device."""
    from repdist.training.loop import RunOptions, train

    for protocol in ("clean", "paper"):
        model = synthetic_stack()
        with fake_device():
            train(model, synthetic_data(), train_config(protocol=protocol),
                  RunOptions(device=DEVICE, eval_batch_size=8, final_train_eval=True))


@case
def synthetic_resume() -> None:
    """A checkpoint written on the CPU (a run killed at step 3) resumed on the device."""
    from repdist.training import loop
    from repdist.training.loop import RunOptions, train

    cfg = train_config(steps=4, checkpoint_every=2)
    with tempfile.TemporaryDirectory() as folder:
        ckpt = Path(folder) / "checkpoint.pt"
        real, calls = loop.batch_nll, {"n": 0}

        def dies_at_step_3(*args):
            calls["n"] += 1
            if calls["n"] > 3:
                raise KeyboardInterrupt
            return real(*args)

        loop.batch_nll = dies_at_step_3
        try:
            train(synthetic_stack(), synthetic_data(), cfg, RunOptions(checkpoint=ckpt))
        except KeyboardInterrupt:
            pass
        finally:
            loop.batch_nll = real
        model = synthetic_stack()
        with fake_device():
            _, finals = train(model, synthetic_data(), cfg,
                              RunOptions(checkpoint=ckpt, device=DEVICE))
        if finals["steps_run"] != 2:
            raise AssertionError(f"resumed {finals['steps_run']} steps, not the last 2 of 4")


@case
def distillation_step() -> None:
    """The teachers' log-probabilities on the device and a student step with the KL objective."""
    from repdist.experiments.distillation.training import teacher_log_probs
    from repdist.training.distillation import distillation_objective
    from repdist.training.loop import RunOptions, train

    data, teachers, students = synthetic_data(), synthetic_stack(), synthetic_stack()
    with fake_device():
        targets = teacher_log_probs(teachers, data.train_x, data.codes, DEVICE)
        train(students, data, train_config(), RunOptions(
            device=DEVICE, objective=distillation_objective("kl", targets)))


@case
def cifar_step() -> None:
    """Two stacked ResNet-18s (grouped convolutions, per-seed BatchNorm), channels-last, the
    paper protocol's train-mode test passes, on the device."""
    from repdist.data.radial import label_codes
    from repdist.experiments.cifar.training import CifarModelConfig, cifar_stack
    from repdist.training.loop import RunOptions, TrainData, train

    cfg = CifarModelConfig(rep_dim=2, seeds=[0, 1], base_width=4, g_width=8, bn_momentum=0.1,
                           device="cpu", tf32="none", channels_last=True,
                           eval_batch_size=8, cuda_graph=False)
    stack = cifar_stack(cfg, 0.1)
    rng = np.random.default_rng(0)
    images = rng.normal(size=(32, 3, 32, 32)).astype(np.float32)
    labels = rng.integers(0, 10, 32)
    data = TrainData(images, labels, images[:8], labels[:8], label_codes(np.arange(10), 10))
    with fake_device():
        train(stack, data, train_config(batch_size=16, protocol="paper", eval_every=1),
              RunOptions(device=DEVICE, eval_batch_size=8, channels_last=True,
                         final_train_eval=True))


def tiny_gpt():
    from repdist.models.gpt import GPT, GPTConfig

    torch.manual_seed(0)
    return GPT(GPTConfig(vocab=50, width=8, layers=1, heads=2, context=8))


@case
def lm_step() -> None:
    """The LM loop (training/lm.py): its batch order on the device, steps, eval, log points."""
    from repdist.training.lm import LMOptions, LMTrainConfig, train_lm

    rng = np.random.default_rng(0)
    train, evals = rng.integers(0, 50, (32, 9)), rng.integers(0, 50, (8, 9))
    cfg = LMTrainConfig(steps=2, batch_size=8, lr=1e-3, log_every=1, eval_every=1)
    model = tiny_gpt()
    with fake_device():
        train_lm(model, train, evals, cfg, seed=0, options=LMOptions(device=DEVICE))


@case
def roeder_words_step() -> None:
    """The log-bilinear word models (Roeder et al.'s Fig. 1) through training/loop.py, their
    f~ and g~ extracted, on the fake device: word ids as floats, g~'s codes the ids."""
    from repdist.models.extract import extract
    from repdist.models.log_bilinear import StackedLogBilinear
    from repdist.training.loop import RunOptions, TrainData, train

    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 12, (48, 3)).astype(np.float32), rng.integers(0, 12, 48)
    codes = np.arange(12, dtype=np.float32)[:, None]
    model = StackedLogBilinear([0, 1], 12, 3, 2)
    with fake_device():
        train(model, TrainData(x, y, x[:16], y[:16], codes), train_config(),
              RunOptions(device=DEVICE, eval_batch_size=8))
        extract(model, x[:16], codes, batch_size=8)


@case
def classifier_extraction() -> None:
    from repdist.extract import classifier_representations

    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 4))
    inputs = np.random.default_rng(0).normal(size=(10, 3)).astype(np.float32)
    with fake_device():
        classifier_representations(model, inputs, device=DEVICE, batch_size=4)


@case
def causal_lm_extraction() -> None:
    """f at every position and at the last unmasked one of padded contexts, the token ids
    checked against the embedding first."""
    from repdist.extract import causal_lm_representations

    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, (5, 8))
    mask = np.ones_like(ids)
    mask[1, 5:] = 0
    model = tiny_gpt()
    with fake_device():
        for positions in ("all", "last"):
            causal_lm_representations(model, {"input_ids": ids, "attention_mask": mask},
                                      "head", positions=positions, device=DEVICE,
                                      batch_size=2)


def _ours(trace: str) -> str:
    """A traceback's frames in repdist and this file, and its error."""
    lines, keep = trace.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith('  File "') and ("repdist" in line or "fake_device" in line):
            keep += lines[i : i + 2]
    return "\n".join([*keep, *lines[-3:]])


def main(names: list[str]) -> None:
    why = missing()
    if why is not None:
        print(json.dumps({"skip": why}))
        return
    register()
    results = {}
    for name in names or list(CASES):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                CASES[name]()
            results[name] = "ok"
        except Exception:  # noqa: BLE001 (reported to the test)
            results[name] = _ours(traceback.format_exc())
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
